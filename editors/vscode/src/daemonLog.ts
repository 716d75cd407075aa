/**
 * The daemon's stderr, read line by line for the Mini Agent output channel: each log record at the
 * level the daemon logged it. The daemon writes one line per record, `[mini-agent] LEVEL logger: message`
 * (server/mini_agent/plumbing/stdout.py); a line without that prefix continues the record above it (a
 * traceback, a multi-line message) and takes its level. Before the first record, such a line is
 * output from before logging started (a crash, a refusal to start) and counts as an error. Pure.
 */

export type LogLevelName = "debug" | "info" | "warn" | "error";

export interface LogLine {
  level: LogLevelName;
  /** The line without the daemon's label and level word (the channel shows the level itself). */
  text: string;
}

/** Python's level names, as `logging` writes them, to the output channel's levels. */
const LEVELS: Readonly<Record<string, LogLevelName>> = {
  DEBUG: "debug",
  INFO: "info",
  WARNING: "warn",
  ERROR: "error",
  CRITICAL: "error",
};

const RECORD = /^\[mini-agent[^\]]*\] (DEBUG|INFO|WARNING|ERROR|CRITICAL) (.*)$/;

/** Reads one daemon's stderr: keeps the level of the record a continuation line belongs to. */
export class DaemonLogReader {
  private level: LogLevelName = "error";

  read(line: string): LogLine {
    const record = RECORD.exec(line);
    if (record === null) return { level: this.level, text: line };
    this.level = LEVELS[record[1]];
    return { level: this.level, text: record[2] };
  }
}

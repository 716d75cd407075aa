/**
 * Folds the daemon's `agent/update` stream (live, or a stored session replayed by agent/loadSession)
 * into a trace: the ordered list of what happened in a session, which the trace view renders and the status bar summarises.
 *
 * Pure data, no `vscode`: the tests feed it real notifications from the daemon.
 */

import type {
  Observation,
  SessionStatus,
  StopReason,
  ToolProgress,
  Update,
  UpdateParams,
  Usage,
} from "./protocol";

export type ToolCallState = "pending" | "in_progress" | "completed" | "failed" | "rejected";

/** How the daemon words the observation of a call the user declined (runtime.DECLINED). */
export const DECLINED_PREFIX = "The user declined to run this tool call.";

/** A finished call's state: a declined call is "rejected", not an error of the tool. */
export function callState(observation: Observation): ToolCallState {
  if (!observation.isError) return "completed";
  return observation.output.startsWith(DECLINED_PREFIX) ? "rejected" : "failed";
}

export type TraceEntry =
  | { kind: "thought"; step: number; text: string; chunks: number }
  | {
      kind: "tool";
      step: number;
      toolCallId: string;
      name: string;
      arguments: unknown;
      rawArguments: string;
      state: ToolCallState;
      observation?: Observation;
      /** What the call printed while it ran (live only: a stored session replays none). */
      liveOutput: string;
      /** The call's latest progress report while it runs. */
      progress?: ToolProgress;
      /** The daemon stopped showing the printed output at its cap. */
      liveOutputTruncated: boolean;
    }
  | { kind: "answer"; step: number; text: string }
  /** A follow-up the user sent (agent/prompt), from its `user_message_chunk`; `step` is the one that answers it. */
  | { kind: "prompt"; step: number; text: string }
  | { kind: "status"; step: number; status: SessionStatus; stopReason: StopReason | null; message: string | null };

export interface SessionTrace {
  sessionId: string;
  task: string;
  status: SessionStatus;
  stopReason: StopReason | null;
  /** The step the trace is at: the step of the latest model output or tool event, never of a status. */
  step: number;
  entries: TraceEntry[];
  usage: Usage | null;
  /** Every update as it arrived, kind and step only: lets a test check the order of events. */
  events: { step: number; kind: Update["kind"] }[];
}

export function newTrace(sessionId: string, task = ""): SessionTrace {
  return { sessionId, task, status: "ready", stopReason: null, step: 0, entries: [], usage: null, events: [] };
}

/**
 * Apply one update in place; consecutive thought chunks of a step join into one entry. Status
 * updates do not move the step: the daemon numbers a status change by the step it would start next.
 */
export function applyUpdate(trace: SessionTrace, step: number, update: Update): void {
  const moves = update.kind !== "status" && update.kind !== "usage_update" && update.kind !== "user_message_chunk";
  if (moves) trace.step = step;
  trace.events.push({ step, kind: update.kind });
  switch (update.kind) {
    case "user_message_chunk":
      trace.entries.push({ kind: "prompt", step, text: update.text });
      return;
    case "agent_thought_chunk":
      appendText(trace, "thought", step, update.text);
      return;
    case "agent_message_chunk":
      appendText(trace, "answer", step, update.text);
      return;
    case "tool_call":
      trace.entries.push({
        kind: "tool",
        step,
        toolCallId: update.toolCallId,
        name: update.name,
        arguments: update.arguments,
        rawArguments: update.rawArguments,
        state: "pending",
        liveOutput: "",
        liveOutputTruncated: false,
      });
      trace.status = "running";
      return;
    case "tool_call_update": {
      const entry = findTool(trace, update.toolCallId);
      if (entry === undefined) return;
      entry.state = update.observation === undefined ? update.status : callState(update.observation);
      if (update.observation !== undefined) entry.observation = update.observation;
      if (update.output !== undefined) entry.liveOutput += update.output.append;
      if (update.progress !== undefined) entry.progress = update.progress;
      if (update.liveOutputTruncated === true) entry.liveOutputTruncated = true;
      return;
    }
    case "usage_update":
      trace.usage = update.total;
      return;
    case "status":
      trace.status = update.status;
      trace.stopReason = update.stopReason ?? null;
      if (update.stopReason || update.message) {
        trace.entries.push({
          kind: "status",
          step: trace.step,
          status: update.status,
          stopReason: update.stopReason ?? null,
          message: update.message ?? null,
        });
      }
      return;
  }
}

function appendText(trace: SessionTrace, kind: "thought" | "answer", step: number, text: string): void {
  const last = trace.entries[trace.entries.length - 1];
  if (last !== undefined && last.kind === kind && last.step === step) {
    last.text += text;
    if (last.kind === "thought") last.chunks += 1;
    return;
  }
  trace.entries.push(kind === "thought" ? { kind, step, text, chunks: 1 } : { kind, step, text });
}

function findTool(trace: SessionTrace, toolCallId: string): Extract<TraceEntry, { kind: "tool" }> | undefined {
  for (let i = trace.entries.length - 1; i >= 0; i -= 1) {
    const entry = trace.entries[i];
    if (entry.kind === "tool" && entry.toolCallId === toolCallId) return entry;
  }
  return undefined;
}

/** All sessions the extension has seen, fed by agent/update. */
export class TraceStore {
  private readonly traces = new Map<string, SessionTrace>();
  private readonly listeners = new Set<(trace: SessionTrace) => void>();

  apply(params: UpdateParams): SessionTrace {
    const trace = this.ensure(params.sessionId);
    applyUpdate(trace, params.step, params.update);
    this.fire(trace);
    return trace;
  }

  ensure(sessionId: string, task = ""): SessionTrace {
    let trace = this.traces.get(sessionId);
    if (trace === undefined) {
      trace = newTrace(sessionId, task);
      this.traces.set(sessionId, trace);
    } else if (task && !trace.task) {
      trace.task = task;
    }
    return trace;
  }

  /**
   * Replace what we hold of a stored session (after a restart, or to show an old one) with the daemon's
   * replay of it: `replay` asks for it (agent/loadSession), its updates arrive before its answer, the task.
   */
  async reload(sessionId: string, replay: () => Promise<{ task: string }>): Promise<SessionTrace> {
    this.traces.set(sessionId, newTrace(sessionId));
    const { task } = await replay();
    const trace = this.ensure(sessionId, task);
    this.fire(trace);
    return trace;
  }

  get(sessionId: string): SessionTrace | undefined {
    return this.traces.get(sessionId);
  }

  all(): SessionTrace[] {
    return [...this.traces.values()];
  }

  active(): SessionTrace[] {
    return this.all().filter((trace) => trace.status === "running" || trace.status === "awaiting_approval");
  }

  onDidChange(listener: (trace: SessionTrace) => void): { dispose(): void } {
    this.listeners.add(listener);
    return { dispose: () => this.listeners.delete(listener) };
  }

  private fire(trace: SessionTrace): void {
    for (const listener of this.listeners) listener(trace);
  }
}

// -- one-line summaries ----------------------------------------------------------------------------

/**
 * Where a session stands, in a few words: "step 2 · count_file_lines", "step 2 · awaiting approval",
 * "model error". The status bar and the trace view's header both show this, so they never disagree.
 */
export function headline(trace: SessionTrace): string {
  const step = `step ${trace.step + 1}`;
  switch (trace.status) {
    case "running": {
      const tool = runningTool(trace);
      return tool ? `${step} · ${tool}` : step;
    }
    case "awaiting_approval":
      return `${step} · awaiting approval`;
    case "finished":
      return stopText(trace.stopReason);
    case "ready":
      return lastStopText(trace);
  }
}

/** The status-bar text: "$(sync~spin) mini-agent: step 2 · count_file_lines". */
export function statusLabel(trace: SessionTrace | undefined): string {
  if (trace === undefined || (trace.status === "ready" && trace.stopReason === null && trace.entries.length === 0)) {
    return "$(hubot) mini-agent";
  }
  const icons: Record<SessionStatus, string> = {
    running: "sync~spin",
    awaiting_approval: "bell",
    finished: trace.stopReason === "end_turn" ? "check" : "warning",
    ready: trace.stopReason === "error" ? "error" : "debug-pause",
  };
  return `$(${icons[trace.status]}) mini-agent: ${headline(trace)}`;
}

function runningTool(trace: SessionTrace): string | undefined {
  for (let i = trace.entries.length - 1; i >= 0; i -= 1) {
    const entry = trace.entries[i];
    if (entry.step !== trace.step) return undefined;
    if (entry.kind === "tool" && (entry.state === "pending" || entry.state === "in_progress")) return entry.name;
  }
  return undefined;
}

function lastStopText(trace: SessionTrace): string {
  if (trace.stopReason !== null) return stopText(trace.stopReason);
  for (let i = trace.entries.length - 1; i >= 0; i -= 1) {
    const entry = trace.entries[i];
    if (entry.kind === "status" && entry.stopReason) return stopText(entry.stopReason);
  }
  return "ready";
}

export function stopText(reason: StopReason | null): string {
  switch (reason) {
    case "end_turn":
      return "done";
    case "max_turn_requests":
      return "step budget used up";
    case "cancelled":
      return "cancelled";
    case "loop_detected":
      return "stopped: loop detected";
    case "max_tokens":
      return "stopped: context window full";
    case "error":
      return "model error";
    default:
      return "finished";
  }
}

/** The answer of the latest user turn, if it has one (an answer before a follow-up is not). */
export function finalAnswer(trace: SessionTrace): string | undefined {
  return latestAnswer(trace)?.text;
}

export function latestAnswer(trace: SessionTrace): Extract<TraceEntry, { kind: "answer" }> | undefined {
  for (let i = trace.entries.length - 1; i >= 0; i -= 1) {
    const entry = trace.entries[i];
    if (entry.kind === "prompt") return undefined;
    if (entry.kind === "answer") return entry;
  }
  return undefined;
}

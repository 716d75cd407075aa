/**
 * Real processes for the tests: the daemon over stdio (vscode-jsonrpc, the library under
 * vscode-languageclient) and the scripted model server from mini_agent.scripted.
 */

import { spawn, type ChildProcess } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { pathToFileURL } from "node:url";
import { createMessageConnection, StreamMessageReader, StreamMessageWriter, type MessageConnection } from "vscode-jsonrpc/node";
import type { AgentPeer, InitializationOptions } from "../src/protocol";

/** The repository root (this file runs from editors/vscode/out/test). */
export const REPO = path.resolve(__dirname, "..", "..", "..", "..");
export const EXAMPLE_WORKSPACE = path.join(REPO, "server", "mini_agent", "examples", "workspace");

/** MINI_AGENT_PYTHON, else the repository's .venv, else python3 on PATH. */
export const PYTHON =
  process.env.MINI_AGENT_PYTHON ??
  [path.join(REPO, ".venv", "bin", "python"), path.join(REPO, ".venv", "Scripts", "python.exe")].find(fs.existsSync) ??
  "python3";

function pythonEnv(): NodeJS.ProcessEnv {
  const paths = [path.join(REPO, "server"), path.join(REPO, "clients", "python"), process.env.PYTHONPATH].filter(Boolean);
  return { ...process.env, PYTHONPATH: paths.join(path.delimiter), PYTHONUNBUFFERED: "1" };
}

/** A fresh temporary copy of the example workspace. */
export function copyWorkspace(): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "mini-agent-vscode-"));
  fs.cpSync(EXAMPLE_WORKSPACE, dir, { recursive: true, filter: (src) => !src.includes("__pycache__") });
  return dir;
}

function stderrTail(proc: ChildProcess): () => string {
  let text = "";
  proc.stderr?.on("data", (chunk: Buffer) => {
    text = (text + chunk.toString()).slice(-4000);
  });
  return () => text;
}

async function stopProcess(proc: ChildProcess): Promise<void> {
  if (proc.exitCode !== null || proc.signalCode !== null) return;
  const exited = new Promise<void>((resolve) => proc.once("exit", () => resolve()));
  proc.kill("SIGTERM");
  const timer = setTimeout(() => proc.kill("SIGKILL"), 5000);
  await exited;
  clearTimeout(timer);
}

export interface Replay {
  url: string;
  close(): Promise<void>;
}

/** Start `python -m mini_agent.scripted` with a script; its first stdout line is the base URL. */
export async function startReplay(turns: unknown, dir: string): Promise<Replay> {
  const script = path.join(dir, `replay-${Date.now()}-${Math.random().toString(36).slice(2)}.json`);
  fs.writeFileSync(script, JSON.stringify(turns));
  const proc = spawn(PYTHON, ["-m", "mini_agent.scripted", "--script", script], { env: pythonEnv(), stdio: ["ignore", "pipe", "pipe"] });
  const stderr = stderrTail(proc);
  const url = await new Promise<string>((resolve, reject) => {
    let buffered = "";
    proc.stdout!.on("data", (chunk: Buffer) => {
      buffered += chunk.toString();
      const newline = buffered.indexOf("\n");
      if (newline >= 0) resolve(buffered.slice(0, newline).trim());
    });
    proc.once("exit", (code) => reject(new Error(`replay server exited (${code}): ${stderr()}`)));
  });
  return { url, close: () => stopProcess(proc) };
}

export interface DaemonConnection {
  connection: MessageConnection;
  /** The connection as the extension's protocol module sees a peer. */
  peer: AgentPeer;
  stderr(): string;
  close(): Promise<void>;
}

/** Start the daemon on stdio in `root` and take it through initialize/initialized, announcing `capabilities`. */
export async function startDaemon(
  root: string,
  initializationOptions: InitializationOptions,
  capabilities: object = {},
): Promise<DaemonConnection> {
  const proc = spawn(PYTHON, ["-m", "mini_agent"], { cwd: root, env: pythonEnv(), stdio: ["pipe", "pipe", "pipe"] });
  const stderr = stderrTail(proc);
  const connection = createMessageConnection(new StreamMessageReader(proc.stdout!), new StreamMessageWriter(proc.stdin!));
  connection.listen();
  await connection.sendRequest("initialize", {
    processId: process.pid,
    rootUri: pathToFileURL(root).href,
    capabilities,
    initializationOptions,
  });
  await connection.sendNotification("initialized", {});
  return {
    connection,
    peer: connection,
    stderr,
    close: async () => {
      try {
        await connection.sendRequest("shutdown");
        await connection.sendNotification("exit");
      } catch {
        // already gone: the process is stopped below either way
      }
      connection.dispose();
      await stopProcess(proc);
    },
  };
}

/** Resolve when `check` holds after some event; `subscribe` re-runs it on every change. */
export function waitFor(subscribe: (listener: () => void) => { dispose(): unknown }, check: () => boolean): Promise<void> {
  return new Promise((resolve) => {
    if (check()) {
      resolve();
      return;
    }
    const subscription = subscribe(() => {
      if (check()) {
        subscription.dispose();
        resolve();
      }
    });
  });
}

/**
 * Where the daemon comes from: the user's command, a Python interpreter, the workspace's virtual
 * environment, or PATH — in that order. Pure apart from the two probes it is given, so the tests
 * can check the order without touching the machine's PATH.
 */

import * as path from "node:path";

export interface LaunchSettings {
  /** An executable that serves the protocol on stdio (args from `args`). */
  command?: string;
  args?: string[];
  /** A Python interpreter with mini-agent installed: runs `python -m mini_agent`. */
  pythonPath?: string;
}

export interface Launch {
  command: string;
  args: string[];
  /** How it was found, for the log. */
  origin: "setting:command" | "setting:pythonPath" | "workspace venv" | "PATH";
}

export interface Probes {
  isExecutable(file: string): boolean;
  which(name: string): string | undefined;
  platform: NodeJS.Platform;
}

export const SERVE_ARGS = ["serve"];
export const VENV_DIRS = [".venv", "venv"];

export const INSTALL_HINT =
  "Install the daemon into the workspace's virtual environment (python -m venv .venv && " +
  ".venv/bin/pip install mini-agent, or pip install -e <mini-agent checkout>), or set " +
  "miniAgent.command to a mini-agent executable or miniAgent.pythonPath to a Python that has it.";

export function resolveLaunch(settings: LaunchSettings, workspaceRoot: string | undefined, probes: Probes): Launch | undefined {
  if (settings.command) {
    return { command: settings.command, args: settings.args ?? SERVE_ARGS, origin: "setting:command" };
  }
  if (settings.pythonPath) {
    return { command: settings.pythonPath, args: ["-m", "mini_agent"], origin: "setting:pythonPath" };
  }
  const exe = probes.platform === "win32" ? "mini-agent.exe" : "mini-agent";
  const bin = probes.platform === "win32" ? "Scripts" : "bin";
  if (workspaceRoot !== undefined) {
    for (const venv of VENV_DIRS) {
      const candidate = path.join(workspaceRoot, venv, bin, exe);
      if (probes.isExecutable(candidate)) return { command: candidate, args: SERVE_ARGS, origin: "workspace venv" };
    }
  }
  const onPath = probes.which(exe);
  return onPath === undefined ? undefined : { command: onPath, args: SERVE_ARGS, origin: "PATH" };
}

/** A PATH lookup over the given directories. */
export function whichIn(pathVar: string | undefined, isExecutable: (file: string) => boolean): (name: string) => string | undefined {
  const dirs = (pathVar ?? "").split(path.delimiter).filter(Boolean);
  return (name) => dirs.map((dir) => path.join(dir, name)).find(isExecutable);
}

/**
 * Why a configured launch cannot start, in words, or undefined when it can. Checked before spawning,
 * so a wrong path gives one message that names the setting instead of the spawn error.
 */
export function launchProblem(launch: Launch, probes: Probes): string | undefined {
  if (launch.origin !== "setting:command" && launch.origin !== "setting:pythonPath") return undefined;
  const found = launch.command.includes("/") || launch.command.includes("\\")
    ? probes.isExecutable(launch.command)
    : probes.which(launch.command) !== undefined;
  if (found) return undefined;
  const setting = launch.origin === "setting:command" ? "miniAgent.command" : "miniAgent.pythonPath";
  return (
    `Mini Agent could not start the daemon: ${setting} is set to “${launch.command}”, which does not exist ` +
    "or is not executable. Fix the path, or clear the setting to use the workspace's .venv."
  );
}

/**
 * The daemon's lifetime in the editor: find it, start it with vscode-languageclient over stdio,
 * hand the connection to an AgentClient, restart it when the settings or the API key change.
 */

import * as fs from "node:fs";
import * as readline from "node:readline";
import type { Readable } from "node:stream";
import * as vscode from "vscode";
import {
  LanguageClient,
  RevealOutputChannelOn,
  type InitializeParams,
  type LanguageClientOptions,
  type ServerOptions,
} from "vscode-languageclient/node";
import { DaemonLogReader } from "./daemonLog";
import { ELICITATION_CAPABILITY } from "./elicit";
import { INSTALL_HINT, launchProblem, resolveLaunch, whichIn, type Launch, type Probes } from "./launch";
import {
  AgentClient,
  initializationOptions,
  llmOptions,
  type AgentClientHandlers,
  type ClientSettings,
  type InitializationOptions,
  type LlmOptions,
  type ToolMode,
} from "./protocol";

export const SECRET_KEY = "miniAgent.apiKey";

/** The daemon cannot be started as configured; the message says which setting to fix. */
export class DaemonNotFound extends Error {
  constructor(why = `mini-agent was not found. ${INSTALL_HINT}`) {
    super(why);
  }
}

/**
 * The language client, minus two things the extension does itself: its own error toast when the
 * start fails (the extension reports that once, in words) and the window progress item (the status
 * bar item already shows the step).
 */
class AgentLanguageClient extends LanguageClient {
  private starting = false;

  override async start(): Promise<void> {
    this.starting = true;
    try {
      await super.start();
    } finally {
      this.starting = false;
    }
  }

  override error(text: string, data?: unknown, showNotification: boolean | "force" = true): void {
    super.error(text, data, this.starting ? false : showNotification);
  }

  protected override fillInitializeParams(params: InitializeParams): void {
    super.fillInitializeParams(params);
    if (params.capabilities.window !== undefined) params.capabilities.window.workDoneProgress = false;
    // window.showDocument is the language client's own (an external link opens with env.openExternal).
    params.capabilities.experimental = { ...(params.capabilities.experimental as object | undefined), agent: { elicitation: ELICITATION_CAPABILITY } };
  }
}

export class Daemon implements vscode.Disposable {
  private client: LanguageClient | undefined;
  private agent: AgentClient | undefined;
  private starting: Promise<AgentClient> | undefined;

  constructor(
    private readonly secrets: vscode.SecretStorage,
    private readonly output: vscode.LogOutputChannel,
    private readonly handlers: AgentClientHandlers,
  ) {}

  get running(): boolean {
    return this.agent !== undefined;
  }

  /** The connected client, starting the daemon on first use. */
  ensure(): Promise<AgentClient> {
    if (this.agent !== undefined) return Promise.resolve(this.agent);
    this.starting ??= this.start().finally(() => {
      this.starting = undefined;
    });
    return this.starting;
  }

  async restart(): Promise<AgentClient | undefined> {
    const wasRunning = this.running;
    await this.stop();
    return wasRunning ? this.ensure() : undefined;
  }

  async stop(): Promise<void> {
    const client = this.client;
    this.agent?.dispose();
    this.agent = undefined;
    this.client = undefined;
    if (client !== undefined && client.isRunning()) await client.stop();
  }

  dispose(): void {
    void this.stop();
  }

  private async start(): Promise<AgentClient> {
    const root = vscode.workspace.workspaceFolders?.[0]?.uri.fsPath;
    const probes = machineProbes();
    // An untrusted workspace's own .venv is workspace code: only the user's settings and PATH count.
    const launch = findLaunch(vscode.workspace.isTrusted ? root : undefined, probes);
    if (launch === undefined) throw new DaemonNotFound();
    const problem = launchProblem(launch, probes);
    if (problem !== undefined) throw new DaemonNotFound(problem);
    this.output.info(`starting ${launch.command} ${launch.args.join(" ")} (${launch.origin})`);
    const config = vscode.workspace.getConfiguration("miniAgent");
    const server: ServerOptions = {
      command: launch.command,
      args: launch.args,
      // No `transport`: with TransportKind.stdio the client appends "--stdio", which the daemon's CLI refuses.
      options: { cwd: root, env: { ...process.env, MINI_AGENT_LOG: config.get<string>("logLevel", "info").toUpperCase() } },
    };
    const options: LanguageClientOptions = {
      outputChannel: this.output,
      initializationOptions: await this.initializationOptions(),
      // Failures reach the user once, through the extension; the output channel keeps the details.
      revealOutputChannelOn: RevealOutputChannelOn.Never,
      // The daemon's log records at their own levels: the client's default writes all of stderr as errors.
      stdioOptions: {
        stdout: (input, channel) => eachLine(input, (line) => channel.info(line)),
        stderr: (input, channel) => {
          const reader = new DaemonLogReader();
          eachLine(input, (line) => {
            const { level, text } = reader.read(line);
            channel[level](text);
          });
        },
      },
      synchronize: { fileEvents: vscode.workspace.createFileSystemWatcher("**/*.py") },
    };
    const client = new AgentLanguageClient("miniAgent", "Mini Agent", server, options);
    // Handlers go on before start so nothing the daemon sends early is lost.
    const agent = new AgentClient(client, this.handlers);
    try {
      await client.start();
    } catch (error) {
      agent.dispose();
      throw new Error(`mini-agent did not start (${launch.command}): ${message(error)}`);
    }
    for (const tool of this.handlers.clientTools?.all() ?? []) await agent.registerClientTool(tool);
    this.client = client;
    this.agent = agent;
    return agent;
  }

  /** The model settings as they are now (a session started earlier keeps its own until resumed with these). */
  modelSettings(): LlmOptions {
    return llmOptions(settings());
  }

  private async initializationOptions(): Promise<InitializationOptions> {
    return initializationOptions(settings(), await this.secrets.get(SECRET_KEY), vscode.workspace.isTrusted);
  }
}

function settings(): ClientSettings {
  const config = vscode.workspace.getConfiguration("miniAgent");
  return {
    baseUrl: config.get<string>("baseUrl"),
    model: config.get<string>("model"),
    toolMode: config.get<ToolMode>("toolMode"),
    maxSteps: config.get<number>("maxSteps"),
  };
}

function machineProbes(): Probes {
  const isExecutable = (file: string): boolean => {
    try {
      fs.accessSync(file, fs.constants.X_OK);
      return fs.statSync(file).isFile();
    } catch {
      return false;
    }
  };
  return { isExecutable, which: whichIn(process.env.PATH, isExecutable), platform: process.platform };
}

function findLaunch(root: string | undefined, probes: Probes): Launch | undefined {
  const config = vscode.workspace.getConfiguration("miniAgent");
  return resolveLaunch(
    {
      command: config.get<string>("command") || undefined,
      args: config.get<string[]>("args"),
      pythonPath: config.get<string>("pythonPath") || undefined,
    },
    root,
    probes,
  );
}

function eachLine(input: Readable, take: (line: string) => void): void {
  readline.createInterface({ input, crlfDelay: Infinity, terminal: false, historySize: 0 }).on("line", take);
}

export function message(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

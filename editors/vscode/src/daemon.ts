/**
 * The daemon's lifetime in the editor: find it, start it with vscode-languageclient over stdio,
 * hand the connection to an AgentClient, restart it when the settings or the API key change.
 */

import * as fs from "node:fs";
import * as vscode from "vscode";
import { LanguageClient, type LanguageClientOptions, type ServerOptions } from "vscode-languageclient/node";
import { INSTALL_HINT, resolveLaunch, whichIn, type Launch } from "./launch";
import { AgentClient, type AgentClientHandlers, type InitializationOptions, type ToolMode } from "./protocol";

export const SECRET_KEY = "miniAgent.apiKey";

export class DaemonNotFound extends Error {
  constructor() {
    super(`mini-agent was not found. ${INSTALL_HINT}`);
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
    const launch = findLaunch(root);
    if (launch === undefined) throw new DaemonNotFound();
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
      synchronize: { fileEvents: vscode.workspace.createFileSystemWatcher("**/*.py") },
    };
    const client = new LanguageClient("miniAgent", "Mini Agent", server, options);
    // Handlers go on before start so nothing the daemon sends early is lost.
    const agent = new AgentClient(client, this.handlers);
    try {
      await client.start();
    } catch (error) {
      agent.dispose();
      throw new Error(`mini-agent did not start (${launch.command}): ${message(error)}`);
    }
    this.client = client;
    this.agent = agent;
    return agent;
  }

  private async initializationOptions(): Promise<InitializationOptions> {
    const config = vscode.workspace.getConfiguration("miniAgent");
    const apiKey = await this.secrets.get(SECRET_KEY);
    return {
      llm: {
        baseUrl: config.get<string>("baseUrl") || undefined,
        model: config.get<string>("model") || undefined,
        toolMode: config.get<ToolMode>("toolMode"),
        ...(apiKey ? { apiKey } : {}),
      },
      maxSteps: config.get<number>("maxSteps"),
    };
  }
}

function findLaunch(root: string | undefined): Launch | undefined {
  const config = vscode.workspace.getConfiguration("miniAgent");
  const isExecutable = (file: string): boolean => {
    try {
      fs.accessSync(file, fs.constants.X_OK);
      return fs.statSync(file).isFile();
    } catch {
      return false;
    }
  };
  return resolveLaunch(
    {
      command: config.get<string>("command") || undefined,
      args: config.get<string[]>("args"),
      pythonPath: config.get<string>("pythonPath") || undefined,
    },
    root,
    { isExecutable, which: whichIn(process.env.PATH, isExecutable), platform: process.platform },
  );
}

export function message(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/**
 * The mini-agent protocol as the extension speaks it (docs/protocol.md is the reference).
 *
 * Nothing here imports `vscode`: the module talks to any JSON-RPC peer with `sendRequest`,
 * `onNotification` and `onRequest`, so the same code runs under vscode-languageclient in the
 * editor and under plain vscode-jsonrpc in the tests, against the real daemon.
 */

import type { ElicitAnswer, ElicitParams } from "./elicit";

export interface Disposable {
  dispose(): unknown;
}

/** The slice of a JSON-RPC connection this module needs (LanguageClient and MessageConnection both fit). */
/** What the peer hands a request handler (vscode-jsonrpc's token): set once the daemon withdraws the
 * request with `$/cancelRequest` (the tool call that asked was cancelled or timed out). */
export interface Cancellation {
  readonly isCancellationRequested: boolean;
  onCancellationRequested(listener: () => unknown): Disposable;
}

export interface AgentPeer {
  sendRequest(method: string, params: unknown): Promise<unknown>;
  onNotification(method: string, handler: (params: any) => void): Disposable;
  onRequest(method: string, handler: (params: any, cancel: Cancellation) => unknown): Disposable;
}

// -- wire shapes ---------------------------------------------------------------------------------

export type SessionStatus = "ready" | "running" | "awaiting_approval" | "finished";
export type StopReason =
  | "end_turn"
  | "max_turn_requests"
  | "cancelled"
  | "loop_detected"
  | "max_tokens"
  | "error";
export type ToolMode = "react" | "native" | "json" | "auto";
export type Decision = "allow_once" | "allow_always" | "reject_once" | "reject_always" | "allow_once_expanded";
/** How often a session asks before a tool call (docs/protocol.md, agent/configureSession). */
export type PermissionMode = "ask_always" | "ask_when_needed" | "ask_never";

export interface Usage {
  promptTokens: number;
  completionTokens: number;
  cachedTokens: number;
}

export interface Tool {
  name: string;
  description: string;
  inputSchema: Record<string, unknown>;
  requiresApproval: boolean;
  title?: string;
  client?: boolean;
  annotations?: { idempotentHint?: boolean };
  source?: { path: string; function: string; line: number };
}

export interface ToolCall {
  id: string;
  name: string;
  arguments: unknown;
  rawArguments: string;
  parseError?: string;
}

export interface Observation {
  toolCallId: string;
  toolName: string;
  output: string;
  isError: boolean;
  elapsedMs: number;
  truncated?: boolean;
  logs?: string;
}

export interface PendingApproval {
  toolCall: ToolCall;
  step: number;
}

export interface StepResult {
  sessionId: string;
  index: number;
  thought: string;
  toolCalls: ToolCall[];
  observations: Observation[];
  finalAnswer: string | null;
  status: SessionStatus;
  stopReason: StopReason | null;
  error: string | null;
  usage: Usage;
  elapsedMs: number;
  toolMode?: string | null;
  pendingApprovals?: PendingApproval[];
}

export interface SessionSummary {
  sessionId: string;
  task: string;
  status: SessionStatus;
  stopReason: StopReason | null;
  finalAnswer: string | null;
  stepCount: number;
  usage: Usage;
  createdAt: string | number;
  updatedAt: string | number;
}

export interface Session extends SessionSummary {
  steps: StepResult[];
  tools: string[];
  pendingApprovals: PendingApproval[];
}

export interface RunResult {
  sessionId: string;
  status: SessionStatus;
  stopReason: StopReason | null;
  finalAnswer: string | null;
  steps: number;
  stepsRun: number;
  error: string | null;
  usage: Usage;
}

export type Update =
  | { kind: "user_message_chunk"; text: string }
  | { kind: "agent_thought_chunk"; text: string }
  | { kind: "agent_message_chunk"; text: string }
  | {
      kind: "tool_call";
      toolCallId: string;
      title?: string;
      name: string;
      arguments: unknown;
      rawArguments: string;
      status: "pending";
    }
  | {
      kind: "tool_call_update";
      toolCallId: string;
      status: "in_progress" | "completed" | "failed";
      observation?: Observation;
      /** While the call runs: what the tool printed since the last update. */
      output?: { append: string };
      /** While the call runs: the tool's own report of where it is. */
      progress?: ToolProgress;
      /** On the final update: the daemon stopped showing the call's printed output at its cap. */
      liveOutputTruncated?: boolean;
    }
  | { kind: "usage_update"; usage: Usage; total: Usage }
  | { kind: "status"; status: SessionStatus; stopReason?: StopReason | null; message?: string | null };

/** One of the daemon's slash commands (`agent/listCommands`); `name` has no leading "/". */
export interface SlashCommand {
  name: string;
  description: string;
  /** Present when the command takes an argument. */
  input?: { hint?: string };
}

/** The answer of a prompt or task that was a slash command: no model turn ran. */
export interface CommandAnswer {
  command: string;
  commandOutput?: string;
  ok?: boolean;
}

export interface ToolProgress {
  message?: string;
  /** 0 to 1. */
  fraction?: number;
}

export interface UpdateParams {
  sessionId: string;
  step: number;
  update: Update;
}

export interface PermissionOption {
  optionId: string;
  name: string;
  kind: Decision;
}

export interface PermissionRequest {
  sessionId: string;
  toolCall: ToolCall;
  tool: Tool;
  options: PermissionOption[];
  /** The sandbox refused this tool's last call: what "allow_once_expanded" would let this call do. */
  expansion?: { network: boolean; write: string | null };
}

export interface PermissionAnswer {
  decision: Decision;
  reason?: string;
}

export interface LlmOptions {
  baseUrl?: string;
  model?: string;
  apiKey?: string;
  toolMode?: ToolMode;
  temperature?: number;
  maxTokens?: number;
  maxRetries?: number;
}

export interface InitializationOptions {
  llm?: LlmOptions;
  maxSteps?: number;
  /** False in an untrusted workspace: the daemon then refuses workspace tools until agent/trustWorkspace. */
  workspaceTrusted?: boolean;
}

export interface ClientSettings {
  baseUrl?: string;
  model?: string;
  toolMode?: ToolMode;
  maxSteps?: number;
}

/** What `initialize` carries: the model settings, the API key if one is stored, and the workspace's trust. */
export function initializationOptions(
  settings: ClientSettings,
  apiKey: string | undefined,
  workspaceTrusted: boolean,
): InitializationOptions {
  return { llm: llmOptions(settings, apiKey), maxSteps: settings.maxSteps, workspaceTrusted };
}

/** The model settings as the protocol's `llm` object (initialize, agent/resumeSession). */
export function llmOptions(settings: ClientSettings, apiKey?: string): LlmOptions {
  return {
    baseUrl: settings.baseUrl || undefined,
    model: settings.model || undefined,
    toolMode: settings.toolMode,
    ...(apiKey ? { apiKey } : {}),
  };
}

/** An image attached to a prompt: its media type and its bytes in base64 (the daemon bounds them). */
export interface ImageAttachment {
  mimeType: "image/png" | "image/jpeg" | "image/gif" | "image/webp";
  data: string;
}

export interface StartSessionOptions {
  systemPrompt?: string;
  tools?: string[];
  llm?: LlmOptions;
  maxSteps?: number;
  permissionMode?: PermissionMode;
  images?: ImageAttachment[];
}

/** `agent/listModels`: the model choices of a model server (`source` "configured": it listed none, see `message`). */
export interface ModelListing {
  models: { id: string }[];
  current: string;
  baseUrl: string;
  source: "server" | "configured";
  message?: string;
}

/** `agent/configureSession`: a session's configuration, after the change. */
export interface SessionConfiguration {
  sessionId: string;
  model: string;
  permissionMode: PermissionMode;
  toolMode: ToolMode;
}

export interface ConfigureSessionOptions {
  model?: string;
  permissionMode?: PermissionMode;
  toolMode?: ToolMode;
}

export interface RegisterOptions {
  name?: string;
  description?: string;
  requiresApproval?: boolean;
}

// -- approvals -----------------------------------------------------------------------------------

/** A decision the user asked to keep: the extension answers for it until it is revoked. */
export interface StandingRule {
  tool: string;
  allow: boolean;
  since: number;
}

/** A permission request nobody answered yet; `agent/approve` settles it later. */
export interface DeferredApproval {
  sessionId: string;
  toolCall: ToolCall;
  tool: Tool;
}

/** What the user interface offers when the daemon asks: a choice, or undefined to decide later. */
export type PermissionPrompt = (request: PermissionRequest) => Promise<Decision | undefined>;

export class ApprovalDeferred extends Error {
  constructor(readonly toolCallId: string) {
    super(`approval of ${toolCallId} deferred: answer it with agent/approve`);
  }
}

/**
 * Standing allow/reject decisions held by the extension, per tool, for as long as it runs.
 *
 * The protocol has no way to revoke an `*_always` decision once the daemon holds it, so the
 * extension keeps such rules itself and sends the daemon only the `*_once` form: each later call
 * still asks, the extension answers from its rule without a prompt, and revoking the rule takes
 * effect at the very next call.
 */
export class ApprovalPolicy {
  private readonly rules = new Map<string, StandingRule>();
  private readonly deferred = new Map<string, DeferredApproval>();
  private readonly listeners = new Set<() => void>();

  constructor(private readonly prompt: PermissionPrompt, private readonly now: () => number = Date.now) {}

  /** Answer one `agent/requestPermission`; throws ApprovalDeferred when the user postpones it. */
  async answer(request: PermissionRequest): Promise<PermissionAnswer> {
    const rule = this.rules.get(request.toolCall.name);
    // a call the sandbox would refuse again is the person's to decide, whatever stands for the tool
    if (rule !== undefined && request.expansion === undefined) {
      return { decision: rule.allow ? "allow_once" : "reject_once", reason: "standing rule in the editor" };
    }
    const choice = await this.prompt(request);
    if (choice === undefined) {
      this.deferred.set(request.toolCall.id, {
        sessionId: request.sessionId,
        toolCall: request.toolCall,
        tool: request.tool,
      });
      this.changed();
      throw new ApprovalDeferred(request.toolCall.id);
    }
    return { decision: this.record(request.toolCall.name, choice) };
  }

  /** Keep an `*_always` choice as a rule; return the decision to send on the wire. */
  record(tool: string, choice: Decision): Decision {
    if (choice === "allow_always" || choice === "reject_always") {
      this.rules.set(tool, { tool, allow: choice === "allow_always", since: this.now() });
      this.changed();
    }
    return onceForm(choice);
  }

  standing(): StandingRule[] {
    return [...this.rules.values()];
  }

  pending(): DeferredApproval[] {
    return [...this.deferred.values()];
  }

  revoke(tool: string): boolean {
    const removed = this.rules.delete(tool);
    if (removed) this.changed();
    return removed;
  }

  /** Forget a deferred request (answered through agent/approve, or its session moved on). */
  settle(toolCallId: string): void {
    if (this.deferred.delete(toolCallId)) this.changed();
  }

  onDidChange(listener: () => void): Disposable {
    this.listeners.add(listener);
    return { dispose: () => this.listeners.delete(listener) };
  }

  private changed(): void {
    for (const listener of this.listeners) listener();
  }
}

export function onceForm(choice: Decision): Decision {
  if (choice === "allow_always") return "allow_once";
  if (choice === "reject_always") return "reject_once";
  return choice;
}

// -- client tools --------------------------------------------------------------------------------

/** The daemon's `agent/executeTool` request: run a client tool for a session's call. */
export interface ExecuteToolParams {
  sessionId: string;
  toolCallId: string;
  name: string;
  arguments: unknown;
}

/**
 * A tool the editor runs itself (other extensions contribute them through the extension's API):
 * the daemon shows it to the model like any other and asks for its result with `agent/executeTool`.
 * `run`'s value (a string, or any JSON value) becomes the observation; a throw becomes an error one.
 */
export interface ClientTool {
  name: string;
  description: string;
  inputSchema: Record<string, unknown>;
  requiresApproval?: boolean;
  run(args: unknown, call: { sessionId: string; toolCallId: string }): unknown;
}

/** The client tools of this window, by name; the daemon is told of each one. */
export class ClientTools {
  private readonly tools = new Map<string, ClientTool>();
  private readonly listeners = new Set<(tool: ClientTool) => void>();

  add(tool: ClientTool): Disposable {
    this.tools.set(tool.name, tool);
    for (const listener of this.listeners) listener(tool);
    return { dispose: () => this.tools.get(tool.name) === tool && this.tools.delete(tool.name) };
  }

  all(): ClientTool[] {
    return [...this.tools.values()];
  }

  onDidAdd(listener: (tool: ClientTool) => void): Disposable {
    this.listeners.add(listener);
    return { dispose: () => this.listeners.delete(listener) };
  }

  async execute(params: ExecuteToolParams): Promise<unknown> {
    const tool = this.tools.get(params.name);
    if (tool === undefined) throw new Error(`no client tool named ${params.name} in this editor (it was removed)`);
    return tool.run(params.arguments, { sessionId: params.sessionId, toolCallId: params.toolCallId });
  }
}

// -- the client ----------------------------------------------------------------------------------

export interface AgentClientHandlers {
  onUpdate?(params: UpdateParams): void;
  onToolsChanged?(tools: Tool[]): void;
  /** Answers `agent/requestPermission`; without one the daemon waits for `agent/approve`. */
  approvals?: ApprovalPolicy;
  /** Answers `agent/executeTool`. */
  clientTools?: ClientTools;
  /** Answers `agent/elicit` (an MCP server's question); without one every question is declined.
   * `cancel` is set when the daemon withdraws the question: close the prompts, the answer is not read. */
  elicit?(params: ElicitParams, cancel: Cancellation): Promise<ElicitAnswer>;
}

/** Typed agent/* requests over a peer, plus the daemon's notifications and requests routed to handlers. */
export class AgentClient {
  private readonly subscriptions: Disposable[];

  constructor(private readonly peer: AgentPeer, handlers: AgentClientHandlers = {}) {
    this.subscriptions = [
      peer.onNotification("agent/update", (params: UpdateParams) => handlers.onUpdate?.(params)),
      peer.onNotification("agent/toolsChanged", (params: { tools: Tool[] }) =>
        handlers.onToolsChanged?.(params.tools),
      ),
      peer.onRequest("agent/requestPermission", (params: PermissionRequest) => {
        if (handlers.approvals === undefined) throw new Error("this client does not answer approvals");
        return handlers.approvals.answer(params);
      }),
      peer.onRequest("agent/executeTool", (params: ExecuteToolParams) => {
        if (handlers.clientTools === undefined) throw new Error("this client has no client tools");
        return handlers.clientTools.execute(params);
      }),
      peer.onRequest("agent/elicit", (params: ElicitParams, cancel: Cancellation): Promise<ElicitAnswer> | ElicitAnswer =>
        handlers.elicit === undefined ? { action: "decline" } : handlers.elicit(params, cancel),
      ),
    ];
  }

  /** Tell the daemon about a client tool (again after a restart: it keeps no client tools). */
  async registerClientTool(tool: ClientTool): Promise<Tool[]> {
    const { name, description, inputSchema, requiresApproval = false } = tool;
    const params = { name, description, inputSchema, requiresApproval, client: true };
    return (await this.request<{ tools: Tool[] }>("agent/registerTool", params)).tools;
  }

  async registerFile(path: string, options: RegisterOptions = {}): Promise<Tool[]> {
    return (await this.request<{ tools: Tool[] }>("agent/registerTool", { path, ...options })).tools;
  }

  async registerFunction(path: string, fn: string, options: RegisterOptions = {}): Promise<Tool[]> {
    return (await this.request<{ tools: Tool[] }>("agent/registerTool", { path, function: fn, ...options })).tools;
  }

  /** The user trusted the workspace: the daemon may now load workspace tools. */
  async trustWorkspace(): Promise<Tool[]> {
    return (await this.request<{ tools: Tool[] }>("agent/trustWorkspace", {})).tools;
  }

  async unregisterTool(name: string): Promise<Tool[]> {
    return (await this.request<{ tools: Tool[] }>("agent/unregisterTool", { name })).tools;
  }

  async listTools(): Promise<Tool[]> {
    return (await this.request<{ tools: Tool[] }>("agent/listTools", {})).tools;
  }

  /** A task that is a slash command starts no session: the answer has `command` and a null `sessionId`. */
  startSession(
    task: string,
    options: StartSessionOptions = {},
  ): Promise<{ sessionId: string; status: SessionStatus } & Partial<CommandAnswer>> {
    return this.request("agent/startSession", { task, ...options });
  }

  /** The slash commands the daemon runs itself (the Ask box completes them). */
  async listCommands(): Promise<SlashCommand[]> {
    return (await this.request<{ commands: SlashCommand[] }>("agent/listCommands", {})).commands;
  }

  /** The models the daemon's model server (or `baseUrl`'s) lists; `refresh` asks the server again. */
  listModels(options: { baseUrl?: string; refresh?: boolean } = {}): Promise<ModelListing> {
    return this.request("agent/listModels", options);
  }

  /** Change a session's model or permission mode from its next model turn; answers its configuration. */
  configureSession(sessionId: string, options: ConfigureSessionOptions = {}): Promise<SessionConfiguration> {
    return this.request("agent/configureSession", { sessionId, ...options });
  }

  /** A follow-up user turn in a session that ended its turn (or is ready); `run` then goes on. */
  prompt(
    sessionId: string,
    text: string,
    images: ImageAttachment[] = [],
  ): Promise<{ sessionId: string; status: SessionStatus } & Partial<CommandAnswer>> {
    return this.request("agent/prompt", images.length ? { sessionId, text, images } : { sessionId, text });
  }

  run(sessionId: string, maxSteps?: number): Promise<RunResult> {
    return this.request("agent/run", maxSteps === undefined ? { sessionId } : { sessionId, maxSteps });
  }

  step(sessionId: string): Promise<StepResult> {
    return this.request("agent/step", { sessionId });
  }

  cancel(sessionId: string): Promise<{ sessionId: string; cancelled: boolean }> {
    return this.request("agent/cancel", { sessionId });
  }

  approve(sessionId: string, toolCallId: string, decision: Decision, reason?: string): Promise<unknown> {
    return this.request("agent/approve", { sessionId, toolCallId, decision, ...(reason ? { reason } : {}) });
  }

  listSessions(filter: { status?: SessionStatus; limit?: number; offset?: number } = {}): Promise<{
    sessions: SessionSummary[];
    total: number;
  }> {
    return this.request("agent/listSessions", filter);
  }

  /** Take a stored session up in this daemon, with new model settings if given (it keeps its own otherwise). */
  resumeSession(sessionId: string, llm?: LlmOptions): Promise<Session> {
    return this.request("agent/resumeSession", llm === undefined ? { sessionId } : { sessionId, llm });
  }

  /** A new session with this one's history up to `step` (default: every step that ended); the source is untouched. */
  forkSession(sessionId: string, step?: number): Promise<Session> {
    return this.request("agent/forkSession", step === undefined ? { sessionId } : { sessionId, step });
  }

  getSession(sessionId: string): Promise<Session> {
    return this.request("agent/getSession", { sessionId });
  }

  /** Replay a stored session as the agent/update notifications a live run sent (they come before the answer). */
  loadSession(sessionId: string): Promise<SessionSummary & { updatesSent: number }> {
    return this.request("agent/loadSession", { sessionId });
  }

  dispose(): void {
    for (const subscription of this.subscriptions) subscription.dispose();
  }

  private request<R>(method: string, params: unknown): Promise<R> {
    return this.peer.sendRequest(method, params) as Promise<R>;
  }
}

/** The error `data.reason` the daemon attaches to session errors (unknown_session, session_busy …). */
export function errorReason(error: unknown): string | undefined {
  const data = (error as { data?: { reason?: unknown } } | undefined)?.data;
  return typeof data?.reason === "string" ? data.reason : undefined;
}

/**
 * The mini-agent protocol as the extension speaks it (docs/protocol.md is the reference).
 *
 * Nothing here imports `vscode`: the module talks to any JSON-RPC peer with `sendRequest`,
 * `onNotification` and `onRequest`, so the same code runs under vscode-languageclient in the
 * editor and under plain vscode-jsonrpc in the tests, against the real daemon.
 */

export interface Disposable {
  dispose(): unknown;
}

/** The slice of a JSON-RPC connection this module needs (LanguageClient and MessageConnection both fit). */
export interface AgentPeer {
  sendRequest(method: string, params: unknown): Promise<unknown>;
  onNotification(method: string, handler: (params: any) => void): Disposable;
  onRequest(method: string, handler: (params: any) => unknown): Disposable;
}

// -- wire shapes ---------------------------------------------------------------------------------

export type SessionStatus = "ready" | "running" | "awaiting_approval" | "finished";
export type StopReason = "end_turn" | "max_turn_requests" | "cancelled" | "loop_detected" | "error";
export type ToolMode = "react" | "native" | "json" | "auto";
export type Decision = "allow_once" | "allow_always" | "reject_once" | "reject_always";

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
    }
  | { kind: "usage_update"; usage: Usage; total: Usage }
  | { kind: "status"; status: SessionStatus; stopReason?: StopReason | null; message?: string | null };

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
}

export interface InitializationOptions {
  llm?: LlmOptions;
  maxSteps?: number;
}

export interface StartSessionOptions {
  systemPrompt?: string;
  tools?: string[];
  llm?: LlmOptions;
  maxSteps?: number;
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
    if (rule !== undefined) {
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

// -- the client ----------------------------------------------------------------------------------

export interface AgentClientHandlers {
  onUpdate?(params: UpdateParams): void;
  onToolsChanged?(tools: Tool[]): void;
  /** Answers `agent/requestPermission`; without one the daemon waits for `agent/approve`. */
  approvals?: ApprovalPolicy;
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
    ];
  }

  async registerFile(path: string, options: RegisterOptions = {}): Promise<Tool[]> {
    return (await this.request<{ tools: Tool[] }>("agent/registerTool", { path, ...options })).tools;
  }

  async registerFunction(path: string, fn: string, options: RegisterOptions = {}): Promise<Tool[]> {
    return (await this.request<{ tools: Tool[] }>("agent/registerTool", { path, function: fn, ...options })).tools;
  }

  async listTools(): Promise<Tool[]> {
    return (await this.request<{ tools: Tool[] }>("agent/listTools", {})).tools;
  }

  startSession(task: string, options: StartSessionOptions = {}): Promise<{ sessionId: string; status: SessionStatus }> {
    return this.request("agent/startSession", { task, ...options });
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

  getSession(sessionId: string): Promise<Session> {
    return this.request("agent/getSession", { sessionId });
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

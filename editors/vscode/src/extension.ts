/**
 * Mini Agent for VS Code: commands, the status bar, approval prompts and the trace view around one
 * daemon per window. The protocol itself lives in protocol.ts and trace.ts.
 */

import * as path from "node:path";
import * as vscode from "vscode";
import { Daemon, DaemonNotFound, message, SECRET_KEY } from "./daemon";
import {
  AgentClient,
  ApprovalPolicy,
  ClientTools,
  type ClientTool,
  errorReason,
  type Decision,
  type ImageAttachment,
  type ModelListing,
  type PermissionMode,
  type PermissionRequest,
  type CommandAnswer,
  type RunResult,
  type SlashCommand,
  type SessionStatus,
  type SessionSummary,
  type StartSessionOptions,
  type ToolCall,
} from "./protocol";
import {
  DEFAULT_PERMISSION_MODE,
  isPermissionMode,
  modeChoice,
  modeItems,
  modelPicker,
  modelStatusText,
  modeStatusText,
  type ModelItem,
} from "./pickers";
import {
  approvalChoices,
  approvalPrompt,
  argumentsView,
  askTitle,
  continuesConversation,
  DEFAULT_DECISION,
  OPEN_SETTINGS,
  RETRY,
  runNotice,
  SHOW_TRACE,
  shorten,
  type ApprovalChoice,
} from "./prompts";
import { promptElicitation } from "./elicitUi";
import { attachmentOf, checkRoomForImage, IMAGE_TYPES, pastedAttachment } from "./images";
import { plainLabel, plainMessage } from "./inert";
import { functionAtLine } from "./python";
import { SessionsView, type SessionItem } from "./sessionsView";
import { commandItems, commandNotice, onEnter, type CommandItem } from "./slash";
import { finalAnswer, statusLabel, stopText, TraceStore, type SessionTrace } from "./trace";
import { TRACE_VIEW_TYPE, TraceView } from "./traceView";

let state: Extension | undefined;

const ARGUMENTS_SCHEME = "mini-agent-call";
/** Workspace state: the model and the permission mode picked in the status bar. */
const PICKED_MODEL = "miniAgent.pickedModel";
const PICKED_MODE = "miniAgent.permissionMode";

/** Read-only documents holding the arguments of the calls the user is reviewing. */
class CallArguments implements vscode.TextDocumentContentProvider {
  private readonly texts = new Map<string, string>();

  provideTextDocumentContent(uri: vscode.Uri): string {
    return this.texts.get(uri.toString()) ?? "";
  }

  /** Show `call`'s arguments beside the editor without taking the focus; the function returned closes them. */
  async show(call: ToolCall): Promise<() => Promise<void>> {
    const view = argumentsView(call);
    const name = `/${call.name} arguments.${view.cut ? "txt" : "jsonc"}`;
    const uri = vscode.Uri.from({ scheme: ARGUMENTS_SCHEME, path: name, query: call.id });
    this.texts.set(uri.toString(), view.text);
    const close = async (): Promise<void> => {
      this.texts.delete(uri.toString());
      const tabs = vscode.window.tabGroups.all
        .flatMap((group) => group.tabs)
        .filter((tab) => tab.input instanceof vscode.TabInputText && tab.input.uri.toString() === uri.toString());
      await vscode.window.tabGroups.close(tabs);
    };
    try {
      const document = await vscode.workspace.openTextDocument(uri);
      await vscode.window.showTextDocument(document, { viewColumn: vscode.ViewColumn.Beside, preview: true, preserveFocus: true });
    } catch (error) {
      state?.output.warn(`could not show the arguments of ${call.name}: ${message(error)}`);
    }
    return close;
  }
}

const callArguments = new CallArguments();

/** What other extensions get from `vscode.extensions.getExtension("mini-agent.mini-agent").exports`. */
export interface MiniAgentApi {
  /** Offer the agent a tool this editor runs; dispose to withdraw it from later calls. */
  registerTool(tool: ClientTool): vscode.Disposable;
}

export function activate(context: vscode.ExtensionContext): MiniAgentApi {
  const extension = new Extension(context);
  state = extension;
  context.subscriptions.push(extension);
  return { registerTool: (tool) => extension.addClientTool(tool) };
}

export function deactivate(): Promise<void> | undefined {
  return state?.daemon.stop();
}

type SessionArg = string | SessionItem | undefined;

class Extension implements vscode.Disposable {
  readonly output = vscode.window.createOutputChannel("Mini Agent", { log: true });
  readonly store = new TraceStore();
  readonly approvals = new ApprovalPolicy((request) => promptPermission(request));
  readonly clientTools = new ClientTools();
  readonly daemon: Daemon;
  private readonly traceView: TraceView;
  private readonly sessionsView: SessionsView;
  private readonly status = vscode.window.createStatusBarItem(vscode.StatusBarAlignment.Left, 50);
  private readonly modelStatus = vscode.window.createStatusBarItem("miniAgent.model", vscode.StatusBarAlignment.Left, 49);
  private readonly modeStatus = vscode.window.createStatusBarItem("miniAgent.permissionMode", vscode.StatusBarAlignment.Left, 48);
  private readonly disposables: vscode.Disposable[] = [];
  private focused: string | undefined;
  /** The session Ask continues (this window's latest Ask; see `continuesConversation`). */
  private conversation: string | undefined;
  /** Images for the next Ask (Attach Image, or pasted into the trace view). */
  private pendingImages: ImageAttachment[] = [];

  constructor(private readonly context: vscode.ExtensionContext) {
    this.daemon = new Daemon(context.secrets, this.output, {
      onUpdate: (params) => this.store.apply(params),
      approvals: this.approvals,
      clientTools: this.clientTools,
      elicit: promptElicitation,
    });
    this.traceView = new TraceView(context.extensionUri, this.store, (posted) => this.onTraceMessage(posted));
    this.sessionsView = new SessionsView(this.store, () => this.storedSessions());
    this.status.command = "miniAgent.showTrace";
    this.status.name = "Mini Agent";
    this.modelStatus.command = "miniAgent.pickModel";
    this.modelStatus.name = "Mini Agent model";
    this.modeStatus.command = "miniAgent.pickPermissionMode";
    this.modeStatus.name = "Mini Agent permission mode";
    this.disposables.push(
      this.output,
      this.status,
      this.modelStatus,
      this.modeStatus,
      this.traceView,
      this.daemon,
      vscode.window.registerTreeDataProvider("miniAgent.sessions", this.sessionsView),
      vscode.workspace.registerTextDocumentContentProvider(ARGUMENTS_SCHEME, callArguments),
      vscode.window.registerWebviewPanelSerializer(TRACE_VIEW_TYPE, {
        deserializeWebviewPanel: async (panel, saved) => this.traceView.restore(panel, saved),
      }),
      vscode.workspace.onDidChangeConfiguration((event) => this.onConfigurationChanged(event)),
      vscode.workspace.onDidGrantWorkspaceTrust(() => void this.onTrustGranted()),
      context.secrets.onDidChange((event) => {
        if (event.key === SECRET_KEY) void this.restartIfRunning("the API key changed");
      }),
      ...this.registerCommands(),
    );
    this.store.onDidChange((trace) => this.onTraceChanged(trace));
    this.updateContext();
    this.updateStatus();
    this.updatePickers();
  }

  dispose(): void {
    for (const disposable of this.disposables) disposable.dispose();
  }

  /** A tool from another extension: the running daemon hears of it now, a later one at its start. */
  addClientTool(tool: ClientTool): vscode.Disposable {
    const added = this.clientTools.add(tool);
    const tell = (what: string, send: (agent: AgentClient) => Promise<unknown>): void => {
      if (this.daemon.running) void this.guard(what, async () => send(await this.daemon.ensure()));
    };
    tell("registerClientTool", (agent) => agent.registerClientTool(tool));
    return new vscode.Disposable(() => {
      added.dispose();
      tell("unregisterClientTool", (agent) => agent.unregisterTool(tool.name));
    });
  }

  // -- commands ------------------------------------------------------------------------------------

  private registerCommands(): vscode.Disposable[] {
    const commands: Record<string, (...args: any[]) => unknown> = {
      "miniAgent.ask": () => this.ask(),
      "miniAgent.newConversation": () => this.ask(true),
      "miniAgent.registerFile": (uri?: vscode.Uri) => this.registerFile(uri),
      "miniAgent.registerFunction": () => this.registerFunction(),
      "miniAgent.showSessions": () => this.showSessions(),
      "miniAgent.resumeSession": (arg?: SessionArg) => this.resumeSession(arg),
      "miniAgent.forkSession": (arg?: SessionArg) => this.forkSession(arg),
      "miniAgent.attachImage": (uri?: vscode.Uri) => this.attachImage(uri),
      "miniAgent.cancel": (arg?: SessionArg) => this.cancel(arg),
      "miniAgent.manageApprovals": () => this.manageApprovals(),
      "miniAgent.setApiKey": () => this.setApiKey(),
      "miniAgent.showTrace": (arg?: SessionArg) => this.showTrace(arg),
      "miniAgent.showLog": () => this.output.show(true),
      "miniAgent.restart": () => this.restart(),
      "miniAgent.refreshSessions": () => this.sessionsView.refresh(),
      "miniAgent.pickModel": () => this.pickModel(),
      "miniAgent.pickPermissionMode": () => this.pickPermissionMode(),
    };
    return Object.entries(commands).map(([id, run]) =>
      vscode.commands.registerCommand(id, (...args: unknown[]) => this.guard(id, () => run(...args))),
    );
  }

  /** Every command: registering workspace code needs trust; errors end up as one message, never thrown. */
  private async guard(id: string, run: () => unknown): Promise<void> {
    const needsTrust = new Set(["miniAgent.registerFile", "miniAgent.registerFunction"]);
    if (!vscode.workspace.isTrusted && needsTrust.has(id)) {
      void vscode.window.showWarningMessage(
        "Mini Agent runs the workspace's Python functions as tools: trust this workspace first.",
      );
      return;
    }
    try {
      await run();
    } catch (error) {
      this.report(error);
    }
  }

  /** Continue the workspace's conversation when its last turn ended with an answer, else start one. */
  private async ask(fresh = false): Promise<void> {
    if (fresh) this.conversation = undefined;
    const last = this.conversation === undefined ? undefined : this.store.get(this.conversation);
    const follow = continuesConversation(last) ? last : undefined;
    const task = await this.askBox(
      askTitle(follow && (follow.task || follow.sessionId)),
      follow
        ? "A follow-up keeps the conversation so far (“/” lists commands); “New Conversation” starts afresh."
        : "What should the agent do? It can use the tools registered in this workspace (“/” lists commands).",
    );
    if (!task?.trim()) return;
    if (follow) await this.followUp(follow.sessionId, task);
    else await this.askTask(task);
  }

  /** The Ask box: free text, or one of the daemon's slash commands, completed from what is typed. */
  private askBox(title: string, placeholder: string): Promise<string | undefined> {
    const box = vscode.window.createQuickPick<CommandItem & vscode.QuickPickItem>();
    box.title = title;
    box.placeholder = placeholder;
    box.ignoreFocusOut = true;
    let commands: SlashCommand[] = [];
    const refresh = () => {
      box.items = commandItems(commands, box.value);
    };
    void this.daemon
      .ensure()
      .then((agent) => agent.listCommands())
      .then((listed) => {
        commands = listed;
        refresh();
      })
      .catch((error: unknown) => this.output.warn(`no slash commands: ${message(error)}`));
    return new Promise((resolve) => {
      box.onDidChangeValue(refresh);
      box.onDidAccept(() => {
        const next = onEnter(box.value, box.activeItems[0]);
        if ("complete" in next) {
          box.value = next.complete;
          refresh();
          return;
        }
        resolve(next.send);
        box.hide();
      });
      box.onDidHide(() => {
        resolve(undefined);
        box.dispose();
      });
      box.show();
    });
  }

  /** A prompt that was a slash command: the daemon answered it; show the answer, run nothing. */
  private showCommandAnswer(answer: CommandAnswer): void {
    const notice = commandNotice(answer);
    this.output.info(notice.text);
    const show = notice.severity === "info" ? vscode.window.showInformationMessage : vscode.window.showWarningMessage;
    void show(notice.text);
  }

  private async followUp(sessionId: string, text: string): Promise<RunResult | undefined> {
    const agent = await this.daemon.ensure();
    const answer = await agent.prompt(sessionId, text, this.takeImages()); // its user_message_chunk adds it to the trace
    if (answer.command !== undefined) {
      this.showCommandAnswer({ ...answer, command: answer.command });
      return undefined;
    }
    this.focused = sessionId;
    this.traceView.show(sessionId);
    return this.runSession(agent, sessionId);
  }

  private async askTask(task: string): Promise<RunResult | undefined> {
    const agent = await this.daemon.ensure();
    if ((await agent.listTools()).length === 0) {
      this.output.warn("no tools registered: the model answers alone (Mini Agent: Register tools in this file)");
    }
    const images = this.takeImages();
    const started = await agent.startSession(task, { ...this.sessionOptions(), ...(images.length ? { images } : {}) });
    if (started.command !== undefined) {
      this.showCommandAnswer({ ...started, command: started.command });
      return undefined;
    }
    const { sessionId } = started;
    this.conversation = sessionId;
    this.store.ensure(sessionId, task);
    this.focused = sessionId;
    this.traceView.show(sessionId);
    return this.runSession(agent, sessionId);
  }

  private async runSession(agent: AgentClient, sessionId: string): Promise<RunResult> {
    const result = await agent.run(sessionId);
    const trace = this.store.get(sessionId);
    if (trace !== undefined) {
      trace.status = result.status;
      trace.stopReason = result.stopReason;
      this.onTraceChanged(trace);
    }
    void this.sessionsView.refresh();
    const answer = result.finalAnswer ?? (trace ? finalAnswer(trace) : undefined);
    const notice = runNotice(result, answer, this.traceView.visible);
    if (notice !== undefined) {
      const show = {
        info: vscode.window.showInformationMessage,
        warning: vscode.window.showWarningMessage,
        error: vscode.window.showErrorMessage,
      }[notice.severity];
      void show(notice.text, ...notice.actions).then((pick) => this.onNoticeAction(pick, sessionId));
    }
    return result;
  }

  private async onNoticeAction(pick: string | undefined, sessionId: string): Promise<void> {
    if (pick === SHOW_TRACE) this.traceView.show(sessionId);
    if (pick === OPEN_SETTINGS) void vscode.commands.executeCommand("workbench.action.openSettings", "miniAgent");
    if (pick === RETRY) await this.guard("miniAgent.resumeSession", () => this.resumeSession(sessionId));
  }

  private async registerFile(uri?: vscode.Uri): Promise<void> {
    const document = await this.pythonDocument(uri);
    if (document === undefined) return;
    const agent = await this.daemon.ensure();
    const tools = await agent.registerFile(document.uri.fsPath);
    if (tools.length === 0) {
      void vscode.window.showWarningMessage(`No public functions in ${path.basename(document.uri.fsPath)}.`);
      return;
    }
    this.announceRegistered(tools.map((tool) => tool.name));
  }

  /** A passing word in the status bar: a toast per registration would pile up over the trace. */
  private announceRegistered(names: string[]): void {
    this.output.info(`registered ${names.join(", ")}`);
    vscode.window.setStatusBarMessage(`$(check) Mini Agent: registered ${names.join(", ")}`, 5000);
  }

  private async registerFunction(): Promise<void> {
    const editor = vscode.window.activeTextEditor;
    const document = await this.pythonDocument(editor?.document.uri);
    if (editor === undefined || document === undefined) return;
    const lines = document.getText().split(/\r?\n/);
    const name = functionAtLine(lines, editor.selection.active.line);
    if (name === undefined) {
      void vscode.window.showWarningMessage("Put the cursor inside (or on) a top-level def to register it.");
      return;
    }
    const agent = await this.daemon.ensure();
    const tools = await agent.registerFunction(document.uri.fsPath, name);
    this.announceRegistered(tools.map((tool) => tool.name));
  }

  /** The Python file to register, saved first: the daemon reads it from disk. */
  private async pythonDocument(uri?: vscode.Uri): Promise<vscode.TextDocument | undefined> {
    const target = uri ?? vscode.window.activeTextEditor?.document.uri;
    if (target === undefined || target.scheme !== "file" || !target.fsPath.endsWith(".py")) {
      void vscode.window.showWarningMessage("Open a Python file of this workspace first.");
      return undefined;
    }
    const document = await vscode.workspace.openTextDocument(target);
    if (document.isDirty && !(await document.save())) {
      void vscode.window.showWarningMessage("Save the file first: the agent loads tools from disk.");
      return undefined;
    }
    return document;
  }

  private async showSessions(): Promise<void> {
    const picked = await this.pickSession("Show session trace");
    if (picked !== undefined) await this.showTrace(picked);
  }

  private async showTrace(arg?: SessionArg): Promise<void> {
    const sessionId = sessionIdOf(arg) ?? this.focused ?? this.traceView.current;
    if (sessionId === undefined) {
      await this.showSessions();
      return;
    }
    if (this.store.get(sessionId) === undefined || !this.isLive(sessionId)) {
      const agent = await this.daemon.ensure();
      await this.store.reload(sessionId, () => agent.loadSession(sessionId));
    }
    this.focused = sessionId;
    this.traceView.show(sessionId);
    this.updateStatus();
  }

  private async resumeSession(arg?: SessionArg): Promise<void> {
    const sessionId = sessionIdOf(arg) ?? (await this.pickSession("Resume session", ["ready", "awaiting_approval"]));
    if (sessionId === undefined) return;
    const agent = await this.daemon.ensure();
    // A session keeps the model settings it started with; resume it with today's (the user may just
    // have fixed miniAgent.baseUrl after a model error).
    await agent.resumeSession(sessionId, this.daemon.modelSettings());
    await this.store.reload(sessionId, () => agent.loadSession(sessionId));
    this.focused = sessionId;
    this.traceView.show(sessionId);
    await this.runSession(agent, sessionId);
  }

  /** An image file (a screenshot saved, a diagram) for the next Ask only; also in the explorer's context menu. */
  private async attachImage(uri?: vscode.Uri): Promise<void> {
    checkRoomForImage(this.pendingImages.length); // before the picker: no file to pick in vain
    const picked =
      uri ??
      (await vscode.window.showOpenDialog({
        canSelectMany: false,
        title: "Attach an image to the next Ask",
        filters: { Images: Object.keys(IMAGE_TYPES) },
      }))?.[0];
    if (picked === undefined) return;
    const attachment = attachmentOf(picked.fsPath, await vscode.workspace.fs.readFile(picked));
    this.pendingImages.push(attachment);
    void vscode.window.showInformationMessage(
      `Mini Agent: ${path.basename(picked.fsPath)} goes with the next Ask (${this.pendingImages.length} image(s)).`,
    );
  }

  /**
   * What the trace view posts: an image pasted into it (a screenshot; VS Code's clipboard API holds
   * text only) goes with the next Ask, as a file would. The webview shows what the model and tools
   * wrote, so its message is checked field by field (pastedAttachment); anything else is ignored.
   */
  private onTraceMessage(posted: unknown): void {
    try {
      const attachment = pastedAttachment(posted);
      if (attachment === undefined) return;
      checkRoomForImage(this.pendingImages.length);
      this.pendingImages.push(attachment);
      void vscode.window.showInformationMessage(
        `Mini Agent: a pasted image goes with the next Ask (${this.pendingImages.length} image(s)).`,
      );
    } catch (error) {
      this.output.warn(`pasted image refused: ${message(error)}`);
      void vscode.window.showErrorMessage(plainMessage(`Mini Agent: the pasted image was not attached: ${message(error)}.`));
    }
  }

  private takeImages(): ImageAttachment[] {
    const images = this.pendingImages;
    this.pendingImages = [];
    return images;
  }

  /** A fork of the session shown (or picked): its history copied, shown in the trace, and the conversation Ask continues. */
  private async forkSession(arg?: SessionArg): Promise<void> {
    const sessionId = sessionIdOf(arg) ?? this.focused ?? (await this.pickSession("Fork session"));
    if (sessionId === undefined) return;
    const agent = await this.daemon.ensure();
    const forked = await agent.forkSession(sessionId);
    await this.store.reload(forked.sessionId, () => agent.loadSession(forked.sessionId));
    this.conversation = forked.sessionId;
    this.focused = forked.sessionId;
    this.traceView.show(forked.sessionId);
    this.updateStatus();
    void this.sessionsView.refresh();
    void vscode.window.showInformationMessage(
      `Mini Agent: forked into a new session (${forked.steps.length} steps); Ask goes on in the fork.`,
    );
  }

  private async cancel(arg?: SessionArg): Promise<void> {
    let sessionId = sessionIdOf(arg);
    if (sessionId === undefined) {
      const active = this.store.active();
      if (active.length === 0) {
        void vscode.window.showInformationMessage("Mini Agent: no session is running.");
        return;
      }
      sessionId = active.length === 1 ? active[0].sessionId : await this.pickFrom(active.map(summaryOf), "Cancel session");
    }
    if (sessionId === undefined) return;
    const agent = await this.daemon.ensure();
    const { cancelled } = await agent.cancel(sessionId);
    if (!cancelled) void vscode.window.showInformationMessage("Mini Agent: that session had no step in flight.");
  }

  private async manageApprovals(): Promise<void> {
    type Item = vscode.QuickPickItem & { act?: () => Promise<void> };
    const items: Item[] = [];
    const pending = this.approvals.pending();
    if (pending.length > 0) items.push({ label: "Waiting for a decision", kind: vscode.QuickPickItemKind.Separator });
    for (const wait of pending) {
      const asked = approvalPrompt(wait.toolCall);
      items.push({
        label: asked.label,
        description: asked.description,
        detail: `session ${wait.sessionId} — pick to decide`,
        act: async () => {
          const choice = await promptPermission({ sessionId: wait.sessionId, toolCall: wait.toolCall, tool: wait.tool, options: [] }, true);
          if (choice === undefined) return;
          const agent = await this.daemon.ensure();
          await agent.approve(wait.sessionId, wait.toolCall.id, this.approvals.record(wait.toolCall.name, choice));
          this.approvals.settle(wait.toolCall.id);
        },
      });
    }
    const rules = this.approvals.standing();
    if (rules.length > 0) items.push({ label: "Standing decisions (pick to revoke)", kind: vscode.QuickPickItemKind.Separator });
    for (const rule of rules) {
      items.push({
        label: `${rule.allow ? "$(check)" : "$(circle-slash)"} ${plainLabel(rule.tool)}`,
        description: rule.allow ? "always allowed" : "always rejected",
        detail: `since ${new Date(rule.since).toLocaleTimeString()} — the extension answers for it; pick to revoke`,
        act: async () => {
          this.approvals.revoke(rule.tool);
          void vscode.window.showInformationMessage(plainMessage(`Mini Agent: ${rule.tool} will ask again.`));
        },
      });
    }
    if (items.length === 0) {
      void vscode.window.showInformationMessage(
        "Mini Agent: no standing approvals and nothing waiting. “Always allow/reject” choices appear here.",
      );
      return;
    }
    const picked = await vscode.window.showQuickPick(items, { title: "Mini Agent: Manage approvals" });
    await picked?.act?.();
  }

  private async setApiKey(): Promise<void> {
    const key = await vscode.window.showInputBox({
      title: "Mini Agent: Set API key",
      prompt: "Stored in VS Code's secret storage, never in settings.json. Leave empty to remove it.",
      password: true,
      ignoreFocusOut: true,
    });
    if (key === undefined) return;
    if (key === "") await this.context.secrets.delete(SECRET_KEY);
    else await this.context.secrets.store(SECRET_KEY, key);
    void vscode.window.showInformationMessage(`Mini Agent: API key ${key ? "stored" : "removed"}.`);
  }

  private async restart(): Promise<void> {
    await this.daemon.stop();
    await this.daemon.ensure();
    void vscode.window.showInformationMessage("Mini Agent: daemon restarted.");
  }

  // -- model and permission mode -------------------------------------------------------------------

  /** The model new sessions use: the one picked in the status bar, else the miniAgent.model setting. */
  private pickedModel(): string | undefined {
    return this.context.workspaceState.get<string>(PICKED_MODEL) || vscode.workspace.getConfiguration("miniAgent").get<string>("model") || undefined;
  }

  private permissionMode(): PermissionMode {
    const stored = this.context.workspaceState.get<string>(PICKED_MODE);
    return isPermissionMode(stored) ? stored : DEFAULT_PERMISSION_MODE;
  }

  /** What a new session starts with: the picked model (over the daemon's) and permission mode. */
  private sessionOptions(): StartSessionOptions {
    const picked = this.context.workspaceState.get<string>(PICKED_MODEL);
    return { permissionMode: this.permissionMode(), ...(picked ? { llm: { model: picked } } : {}) };
  }

  private updatePickers(): void {
    const mode = modeChoice(this.permissionMode());
    this.modelStatus.text = modelStatusText(this.pickedModel());
    this.modelStatus.tooltip = "Mini Agent: the model of this conversation and the next ones. Click to pick another.";
    this.modeStatus.text = modeStatusText(mode.mode);
    this.modeStatus.tooltip = `Mini Agent: ${mode.label}. ${mode.description} Click to change.`;
    this.modelStatus.show();
    this.modeStatus.show();
  }

  /** The model quick pick: the model server's list through the daemon, with a "Refresh list" row. */
  private async pickModel(refresh = false): Promise<void> {
    let listing: ModelListing | undefined;
    let failure: string | undefined;
    try {
      listing = await (await this.daemon.ensure()).listModels(refresh ? { refresh: true } : {});
    } catch (error) {
      failure = message(error);
      this.output.warn(`agent/listModels: ${failure}`);
    }
    const { items, placeholder } = modelPicker(listing, this.pickedModel(), failure);
    const picked = await vscode.window.showQuickPick<ModelItem & vscode.QuickPickItem>(items, {
      title: "Mini Agent: Model",
      placeHolder: placeholder,
    });
    if (picked?.refresh) return this.pickModel(true);
    if (picked?.model === undefined) return;
    await this.configureConversation({ model: picked.model });
    await this.context.workspaceState.update(PICKED_MODEL, picked.model);
    this.output.info(`model: ${picked.model} (this conversation and the next ones)`);
    this.updatePickers();
  }

  private async pickPermissionMode(): Promise<void> {
    const items = modeItems(this.permissionMode());
    const picked = await vscode.window.showQuickPick(items, {
      title: "Mini Agent: Permission mode",
      placeHolder: "When the agent asks before running a tool; applies to this conversation and the next ones",
    });
    if (picked === undefined) return;
    await this.configureConversation({ permissionMode: picked.mode });
    await this.context.workspaceState.update(PICKED_MODE, picked.mode);
    this.output.info(`permission mode: ${picked.mode} (this conversation and the next ones)`);
    this.updatePickers();
  }

  /**
   * Apply a pick to the conversation Ask continues, when this daemon holds it; a refusal (ask_never in
   * an untrusted workspace) throws with the daemon's message, and the pick is not kept.
   */
  private async configureConversation(change: { model?: string; permissionMode?: PermissionMode }): Promise<void> {
    const sessionId = this.conversation;
    if (sessionId === undefined || !this.daemon.running) return;
    const agent = await this.daemon.ensure();
    try {
      await agent.configureSession(sessionId, change);
    } catch (error) {
      if (errorReason(error) === "unknown_session") return; // gone with an earlier daemon: the pick is for new sessions
      throw error;
    }
  }

  // -- sessions --------------------------------------------------------------------------------------

  private async storedSessions(): Promise<SessionSummary[] | undefined> {
    if (!this.daemon.running) return undefined;
    try {
      return (await (await this.daemon.ensure()).listSessions({ limit: 50 })).sessions;
    } catch (error) {
      this.output.error(`listSessions: ${message(error)}`);
      return undefined;
    }
  }

  private async pickSession(title: string, statuses?: SessionStatus[]): Promise<string | undefined> {
    const agent = await this.daemon.ensure();
    const { sessions } = await agent.listSessions({ limit: 100 });
    const wanted = statuses === undefined ? sessions : sessions.filter((s) => statuses.includes(s.status));
    if (wanted.length === 0) {
      void vscode.window.showInformationMessage("Mini Agent: no matching sessions.");
      return undefined;
    }
    return this.pickFrom(wanted, title);
  }

  private async pickFrom(sessions: SessionSummary[], title: string): Promise<string | undefined> {
    const items = sessions.map((s) => ({
      label: plainLabel(shorten(s.task, 80)),
      description: s.status === "finished" ? stopText(s.stopReason) : s.status.replace("_", " "),
      detail: plainLabel(`${s.stepCount} steps · ${s.sessionId}${s.finalAnswer ? ` · ${shorten(s.finalAnswer, 80)}` : ""}`),
      sessionId: s.sessionId,
    }));
    return (await vscode.window.showQuickPick(items, { title, matchOnDetail: true }))?.sessionId;
  }

  private isLive(sessionId: string): boolean {
    return (this.store.get(sessionId)?.events.length ?? 0) > 0;
  }

  // -- status ----------------------------------------------------------------------------------------

  private onTraceChanged(trace: SessionTrace): void {
    if (trace.status === "running" || trace.status === "awaiting_approval") this.focused = trace.sessionId;
    this.updateStatus();
  }

  private updateStatus(): void {
    const trace = this.focused === undefined ? undefined : this.store.get(this.focused);
    this.status.text = statusLabel(trace);
    this.status.tooltip = trace ? `${trace.task}\n\nClick to show the trace.` : "Mini Agent: click to show sessions.";
    this.status.show();
  }

  private updateContext(): void {
    void vscode.commands.executeCommand("setContext", "miniAgent.trusted", vscode.workspace.isTrusted);
    this.updateStatus();
  }

  /** The user trusted the workspace: a running daemon may now load its tools. */
  private async onTrustGranted(): Promise<void> {
    this.updateContext();
    if (!this.daemon.running) return;
    try {
      const tools = await (await this.daemon.ensure()).trustWorkspace();
      this.output.info(`workspace trusted; ${tools.length} tools available`);
    } catch (error) {
      this.output.error(`agent/trustWorkspace: ${message(error)}`);
    }
  }

  private onConfigurationChanged(event: vscode.ConfigurationChangeEvent): void {
    const restartKeys = ["command", "args", "pythonPath", "baseUrl", "model", "toolMode", "maxSteps", "logLevel"];
    if (event.affectsConfiguration("miniAgent.model")) {
      // The user chose a model in the settings: it wins over the one picked in the status bar.
      void this.context.workspaceState.update(PICKED_MODEL, undefined).then(() => this.updatePickers());
    }
    if (restartKeys.some((key) => event.affectsConfiguration(`miniAgent.${key}`))) {
      void this.restartIfRunning("the settings changed");
    }
  }

  private async restartIfRunning(why: string): Promise<void> {
    if (!this.daemon.running) return;
    if (this.store.active().length > 0) {
      void vscode.window.showInformationMessage(`Mini Agent: ${why}; run “Mini Agent: Restart daemon” when the session ends.`);
      return;
    }
    this.output.info(`restarting: ${why}`);
    await this.daemon.restart().catch((error: unknown) => this.report(error));
  }

  private report(error: unknown): void {
    this.output.error(`${message(error)}`);
    if (error instanceof DaemonNotFound) {
      void vscode.window
        .showErrorMessage(plainMessage(error.message), OPEN_SETTINGS, "Show log")
        .then((pick) => {
          if (pick === OPEN_SETTINGS) void vscode.commands.executeCommand("workbench.action.openSettings", "miniAgent");
          if (pick === "Show log") this.output.show(true);
        });
      return;
    }
    const reason = errorReason(error);
    const text = reason === "session_busy" ? "that session is already running" : message(error);
    // The daemon's message may quote the model server, a tool or an MCP server (see inert.ts).
    void vscode.window.showErrorMessage(plainMessage(`Mini Agent: ${text}`), "Show log").then((pick) => pick && this.output.show(true));
  }
}

// -- approval prompt -------------------------------------------------------------------------------

/**
 * Ask the user about one tool call: a notification first (it does not steal focus), then a review
 * picker with its choices in reading order and "Reject" active, so Enter never runs a tool by
 * accident, while a read-only document beside shows the call's arguments (indented JSON, at most
 * ARGUMENTS_SHOWN_CHARS characters) until the user decides. Dismissing either leaves the call waiting
 * (Manage approvals).
 */
async function promptPermission(request: PermissionRequest, direct = false): Promise<Decision | undefined> {
  const call = request.toolCall;
  const asked = approvalPrompt(call, request.tool.source ?? undefined);
  if (!direct) {
    const first = await vscode.window.showWarningMessage(asked.notice, "Review…");
    if (first === undefined) return undefined;
  }
  const closeArguments = await callArguments.show(call);
  const picker = vscode.window.createQuickPick<ApprovalChoice & vscode.QuickPickItem>();
  picker.title = asked.title;
  picker.placeholder = asked.placeholder;
  picker.items = [...approvalChoices(request)];
  picker.activeItems = picker.items.filter((item) => item.decision === DEFAULT_DECISION);
  picker.ignoreFocusOut = true;
  const decision = await new Promise<Decision | undefined>((resolve) => {
    picker.onDidAccept(() => resolve(picker.selectedItems[0]?.decision));
    picker.onDidHide(() => resolve(undefined));
    picker.show();
  });
  picker.dispose();
  await closeArguments();
  return decision;
}

function sessionIdOf(arg: SessionArg): string | undefined {
  return typeof arg === "string" ? arg : arg?.sessionId;
}

function summaryOf(trace: SessionTrace): SessionSummary {
  return {
    sessionId: trace.sessionId,
    task: trace.task,
    status: trace.status,
    stopReason: trace.stopReason,
    finalAnswer: finalAnswer(trace) ?? null,
    stepCount: trace.step + 1,
    usage: trace.usage ?? { promptTokens: 0, completionTokens: 0, cachedTokens: 0 },
    createdAt: "",
    updatedAt: "",
  };
}

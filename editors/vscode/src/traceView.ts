/**
 * The trace view: one webview panel that shows the trace of one session at a time and follows its
 * updates. It never takes focus — it is revealed beside the editor with preserveFocus. It is also
 * where a screenshot is pasted: VS Code's clipboard API holds text only, a webview's paste event
 * carries the image (media/trace.js posts it; `onMessage` gets it, unchecked).
 */

import * as vscode from "vscode";
import { MAX_IMAGE_BYTES, MAX_IMAGES } from "./images";
import { shorten } from "./prompts";
import { renderTrace } from "./render";
import type { SessionTrace, TraceStore } from "./trace";

export const TRACE_VIEW_TYPE = "miniAgent.trace";
const RENDER_DELAY_MS = 50;

export class TraceView implements vscode.Disposable {
  private panel: vscode.WebviewPanel | undefined;
  private sessionId: string | undefined;
  private timer: NodeJS.Timeout | undefined;
  private readonly subscription: { dispose(): void };

  constructor(
    private readonly extensionUri: vscode.Uri,
    private readonly store: TraceStore,
    private readonly onMessage: (posted: unknown) => void,
  ) {
    this.subscription = store.onDidChange((trace) => {
      if (trace.sessionId === this.sessionId) this.scheduleRender();
    });
  }

  /** Show a session's trace; creates the panel beside the editor without moving the focus. */
  show(sessionId: string): void {
    this.sessionId = sessionId;
    if (this.panel === undefined) {
      this.adopt(
        vscode.window.createWebviewPanel(
          TRACE_VIEW_TYPE,
          "Mini Agent",
          { viewColumn: vscode.ViewColumn.Beside, preserveFocus: true },
          this.webviewOptions(),
        ),
      );
    } else {
      this.panel.reveal(undefined, true);
    }
    this.render();
  }

  /** Restore a panel VS Code kept across a reload (the session is lost; it shows the latest one). */
  restore(panel: vscode.WebviewPanel, state: unknown): void {
    panel.webview.options = this.webviewOptions();
    this.adopt(panel);
    const saved = (state as { sessionId?: string } | undefined)?.sessionId;
    this.sessionId = saved ?? this.store.all().at(-1)?.sessionId;
    this.render();
  }

  get current(): string | undefined {
    return this.sessionId;
  }

  /** Whether the user can see the trace right now (then the run's outcome needs no notification). */
  get visible(): boolean {
    return this.panel?.visible === true;
  }

  dispose(): void {
    this.subscription.dispose();
    if (this.timer !== undefined) clearTimeout(this.timer);
    this.panel?.dispose();
  }

  private adopt(panel: vscode.WebviewPanel): void {
    this.panel = panel;
    panel.iconPath = vscode.Uri.joinPath(this.extensionUri, "media", "icon.svg");
    panel.webview.html = this.shell(panel.webview);
    panel.webview.onDidReceiveMessage(this.onMessage);
    panel.onDidDispose(() => {
      this.panel = undefined;
    });
  }

  private webviewOptions(): vscode.WebviewOptions & vscode.WebviewPanelOptions {
    return {
      enableScripts: true,
      retainContextWhenHidden: true,
      localResourceRoots: [vscode.Uri.joinPath(this.extensionUri, "media")],
    };
  }

  private scheduleRender(): void {
    if (this.timer !== undefined) return;
    this.timer = setTimeout(() => {
      this.timer = undefined;
      this.render();
    }, RENDER_DELAY_MS);
  }

  private render(): void {
    const trace: SessionTrace | undefined = this.sessionId ? this.store.get(this.sessionId) : undefined;
    if (this.panel === undefined || trace === undefined) return;
    this.panel.title = `Mini Agent: ${shorten(trace.task || trace.sessionId, 30)}`;
    void this.panel.webview.postMessage({ type: "trace", sessionId: trace.sessionId, html: renderTrace(trace) });
  }

  private shell(webview: vscode.Webview): string {
    const nonce = [...Array(32)].map(() => Math.floor(Math.random() * 36).toString(36)).join("");
    const media = (file: string) => webview.asWebviewUri(vscode.Uri.joinPath(this.extensionUri, "media", file));
    const csp = `default-src 'none'; style-src ${webview.cspSource}; script-src 'nonce-${nonce}';`;
    return `<!DOCTYPE html>
<html lang="en"><head><meta charset="UTF-8">
<meta http-equiv="Content-Security-Policy" content="${csp}">
<meta name="viewport" content="width=device-width, initial-scale=1.0">
<link rel="stylesheet" href="${media("trace.css")}">
<title>Mini Agent</title></head>
<body data-max-image-bytes="${MAX_IMAGE_BYTES}" data-max-images="${MAX_IMAGES}">
<main id="trace"><p class="empty">No session yet. Run “Mini Agent: Ask…”.</p></main>
<footer class="hint">Paste an image here (Ctrl+V, ⌘V on a Mac) to attach it to the next Ask.</footer>
<script nonce="${nonce}" src="${media("trace.js")}"></script></body></html>`;
  }
}

/**
 * The "Mini Agent Sessions" tree in the explorer: sessions seen live in this window first, then
 * the daemon's stored ones (listed only once the daemon runs; the tree never starts it).
 */

import * as vscode from "vscode";
import type { SessionStatus, SessionSummary } from "./protocol";
import { stopText, type TraceStore } from "./trace";
import { visible } from "./inert";
import { shorten } from "./prompts";

export interface SessionItem {
  sessionId: string;
  task: string;
  status: SessionStatus;
  detail: string;
}

const ICONS: Record<SessionStatus, string> = {
  ready: "debug-pause",
  running: "sync~spin",
  awaiting_approval: "bell",
  finished: "check",
};

export class SessionsView implements vscode.TreeDataProvider<SessionItem> {
  private readonly changed = new vscode.EventEmitter<void>();
  readonly onDidChangeTreeData = this.changed.event;
  private stored: SessionSummary[] = [];

  constructor(private readonly store: TraceStore, private readonly listStored: () => Promise<SessionSummary[] | undefined>) {
    store.onDidChange(() => this.changed.fire());
  }

  async refresh(): Promise<void> {
    this.stored = (await this.listStored()) ?? this.stored;
    this.changed.fire();
  }

  getChildren(): SessionItem[] {
    const live = this.store.all().reverse().map((trace) => ({
      sessionId: trace.sessionId,
      task: trace.task,
      status: trace.status,
      detail: trace.status === "finished" ? stopText(trace.stopReason) : trace.status.replace("_", " "),
    }));
    const seen = new Set(live.map((item) => item.sessionId));
    const older = this.stored
      .filter((summary) => !seen.has(summary.sessionId))
      .map((summary) => ({
        sessionId: summary.sessionId,
        task: summary.task,
        status: summary.status,
        detail: `${summary.stepCount} steps · ${summary.status === "finished" ? stopText(summary.stopReason) : summary.status}`,
      }));
    return [...live, ...older];
  }

  getTreeItem(item: SessionItem): vscode.TreeItem {
    const tree = new vscode.TreeItem(visible(shorten(item.task || item.sessionId, 60)));
    tree.description = item.detail;
    tree.tooltip = visible(`${item.task}\n\n${item.sessionId}`);
    tree.iconPath = new vscode.ThemeIcon(ICONS[item.status]);
    tree.contextValue = `session.${item.status}`;
    tree.command = { command: "miniAgent.showTrace", title: "Show trace", arguments: [item.sessionId] };
    return tree;
  }
}

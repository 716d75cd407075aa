/**
 * A trace as HTML for the trace view's webview. Pure string building, so the tests can check the
 * escaping, the folding of long observations and the marking of errors without a webview.
 */

import type { Usage } from "./protocol";
import { stopText, type SessionTrace, type TraceEntry } from "./trace";

/** Observations longer than this (characters or lines) start folded. */
export const FOLD_CHARS = 600;
export const FOLD_LINES = 12;

export function escapeHtml(text: string): string {
  return text
    .replace(/&/g, "&amp;")
    .replace(/</g, "&lt;")
    .replace(/>/g, "&gt;")
    .replace(/"/g, "&quot;")
    .replace(/'/g, "&#39;");
}

export function renderTrace(trace: SessionTrace): string {
  const parts = [
    `<header><h1>${escapeHtml(trace.task || trace.sessionId)}</h1>`,
    `<div class="meta">session <code>${escapeHtml(trace.sessionId)}</code> · ${escapeHtml(statusText(trace))}`,
    trace.usage ? ` · ${escapeHtml(usageText(trace.usage))}` : "",
    "</div></header>",
  ];
  let step = -1;
  for (const entry of trace.entries) {
    if (entry.step !== step) {
      step = entry.step;
      parts.push(`<h2 class="step">Step ${step + 1}</h2>`);
    }
    parts.push(renderEntry(entry));
  }
  return parts.join("");
}

function statusText(trace: SessionTrace): string {
  if (trace.status === "finished") return stopText(trace.stopReason);
  return trace.status.replace("_", " ");
}

export function usageText(usage: Usage): string {
  const cached = usage.cachedTokens ? ` (${usage.cachedTokens} cached)` : "";
  return `${usage.promptTokens} prompt${cached} + ${usage.completionTokens} completion tokens`;
}

function renderEntry(entry: TraceEntry): string {
  switch (entry.kind) {
    case "thought":
      return `<div class="thought"><pre>${escapeHtml(entry.text)}</pre></div>`;
    case "answer":
      return `<div class="answer"><div class="label">Final answer</div><pre>${escapeHtml(entry.text)}</pre></div>`;
    case "status": {
      const reason = entry.stopReason ? stopText(entry.stopReason) : entry.status;
      const message = entry.message ? `: ${escapeHtml(entry.message)}` : "";
      const cls = entry.stopReason === "end_turn" ? "status" : "status warn";
      return `<div class="${cls}">${escapeHtml(reason)}${message}</div>`;
    }
    case "tool":
      return renderTool(entry);
  }
}

function renderTool(entry: Extract<TraceEntry, { kind: "tool" }>): string {
  const failed = entry.state === "failed" || entry.observation?.isError === true;
  const args = entry.arguments === null || entry.arguments === undefined
    ? entry.rawArguments
    : JSON.stringify(entry.arguments, null, 2);
  const head =
    `<div class="tool-head"><span class="badge ${entry.state}">${escapeHtml(entry.state.replace("_", " "))}</span>` +
    ` <code class="tool-name">${escapeHtml(entry.name)}</code></div>`;
  const argBlock = args ? `<pre class="args">${escapeHtml(args)}</pre>` : "";
  const obs = entry.observation === undefined ? "" : renderObservation(entry.toolCallId, entry.observation.output, failed,
    entry.observation.truncated === true, entry.observation.elapsedMs);
  return `<div class="tool${failed ? " error" : ""}" data-call="${escapeHtml(entry.toolCallId)}">${head}${argBlock}${obs}</div>`;
}

function renderObservation(callId: string, output: string, isError: boolean, truncated: boolean, ms: number): string {
  const label = `${isError ? "Error" : "Observation"} · ${Math.round(ms)} ms${truncated ? " · truncated by the daemon" : ""}`;
  const cls = `observation${isError ? " error" : ""}`;
  const lines = output.split("\n").length;
  if (output.length <= FOLD_CHARS && lines <= FOLD_LINES) {
    return `<div class="${cls}"><div class="label">${escapeHtml(label)}</div><pre>${escapeHtml(output)}</pre></div>`;
  }
  const preview = output.split("\n", 1)[0].slice(0, 120);
  const summary = `${escapeHtml(label)} · ${lines} lines, ${output.length} chars — <span class="preview">${escapeHtml(preview)}…</span>`;
  return `<details class="${cls}" data-key="obs-${escapeHtml(callId)}"><summary>${summary}</summary><pre>${escapeHtml(output)}</pre></details>`;
}

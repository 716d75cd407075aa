/**
 * A trace as HTML for the trace view's webview. Pure string building, so the tests can check the
 * escaping, the folding of long observations and the marking of errors without a webview.
 */

import { visible } from "./inert";
import type { Observation, ToolProgress, Usage } from "./protocol";
import { headline, latestAnswer, stopText, type SessionTrace, type ToolCallState, type TraceEntry } from "./trace";

/** Observations longer than this (characters or lines) start folded. */
export const FOLD_CHARS = 600;
export const FOLD_LINES = 12;

/** `text` as HTML text: markup escaped, control characters shown (inert.ts `visible`). */
export function escapeHtml(text: string): string {
  return visible(text)
    .replace(/&/g, "&amp;")
    .replace(/</g, "&lt;")
    .replace(/>/g, "&gt;")
    .replace(/"/g, "&quot;")
    .replace(/'/g, "&#39;");
}

/**
 * The answer first and largest; below it each step once, as its tool cards, with the model's raw
 * text folded away (a closed <details>): the cards already say what it asked for. After a follow-up
 * the answer on top is the latest turn's; earlier answers and the follow-ups stay in their place.
 */
export function renderTrace(trace: SessionTrace): string {
  const latest = latestAnswer(trace);
  const failed = trace.stopReason !== null && trace.stopReason !== "end_turn";
  const parts = [
    `<header><h1>${escapeHtml(trace.task || trace.sessionId)}</h1>`,
    `<div class="meta"><span class="state${failed ? " warn" : ""}">${escapeHtml(headline(trace))}</span>`,
    ` · session <code>${escapeHtml(trace.sessionId)}</code>`,
    trace.usage ? ` · ${escapeHtml(usageText(trace.usage))}` : "",
    "</div></header>",
    latest === undefined
      ? ""
      : `<section class="answer" id="answer"><h2>Answer</h2><div class="answer-text">${escapeHtml(latest.text)}</div></section>`,
  ];
  let step = -1;
  for (const entry of trace.entries) {
    if (entry === latest) continue;
    if (entry.kind !== "status" && entry.kind !== "prompt" && entry.step !== step) {
      step = entry.step;
      parts.push(`<h2 class="step">Step ${step + 1}</h2>`);
    }
    parts.push(renderEntry(entry, trace.sessionId));
  }
  return parts.join("");
}

export function usageText(usage: Usage): string {
  const cached = usage.cachedTokens ? ` (${usage.cachedTokens} cached)` : "";
  return `${usage.promptTokens} prompt${cached} + ${usage.completionTokens} completion tokens`;
}

function renderEntry(entry: TraceEntry, sessionId: string): string {
  switch (entry.kind) {
    case "thought":
      return (
        `<details class="raw" data-key="raw-${escapeHtml(sessionId)}-${entry.step}">` +
        `<summary>Model output</summary><pre>${escapeHtml(entry.text)}</pre></details>`
      );
    case "answer":
    case "prompt": {
      // An earlier turn's answer, and the follow-up after it: the conversation in the order it went.
      const label = entry.kind === "answer" ? "Answer" : "Follow-up";
      return `<div class="turn ${entry.kind}"><div class="label">${label}</div><pre>${escapeHtml(entry.text)}</pre></div>`;
    }
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
  const args = entry.arguments === null || entry.arguments === undefined
    ? entry.rawArguments
    : JSON.stringify(entry.arguments, null, 2);
  const head =
    `<div class="tool-head"><span class="badge ${entry.state}">${escapeHtml(entry.state.replace("_", " "))}</span>` +
    ` <code class="tool-name">${escapeHtml(entry.name)}</code></div>`;
  const argBlock = args ? `<pre class="args">${escapeHtml(args)}</pre>` : "";
  const obs = entry.observation === undefined ? "" : renderObservation(entry.toolCallId, entry.observation, entry.state);
  const live = renderLiveOutput(entry);
  return `<div class="tool ${entry.state}" data-call="${escapeHtml(entry.toolCallId)}">${head}${argBlock}${live}${obs}</div>`;
}

/** A progress report in words: "indexing · 40%". */
export function progressText(progress: ToolProgress): string {
  const parts = [progress.message ?? ""];
  if (typeof progress.fraction === "number") parts.push(`${Math.round(progress.fraction * 100)}%`);
  return parts.filter((part) => part !== "").join(" · ");
}

/**
 * What the call printed: open and growing while it runs (with its latest progress report), then
 * folded (a closed <details>) once it ended, since the observation below is what the model got.
 */
function renderLiveOutput(entry: Extract<TraceEntry, { kind: "tool" }>): string {
  const running = entry.state === "pending" || entry.state === "in_progress";
  const text = entry.liveOutput;
  const cut = entry.liveOutputTruncated ? " · cut at the daemon's limit" : "";
  if (running) {
    const progress = entry.progress === undefined ? "" : progressText(entry.progress);
    const progressBlock = progress ? `<div class="progress">${escapeHtml(progress)}</div>` : "";
    const printed = text ? `<pre>${escapeHtml(text)}</pre>` : "";
    if (!progressBlock && !printed) return "";
    return `<div class="live-output running"><div class="label">Printed so far</div>${printed}${progressBlock}</div>`;
  }
  if (!text) return "";
  const lines = text.replace(/\n$/, "").split("\n").length;
  const summary = `Printed output · ${lines} line${lines === 1 ? "" : "s"}${cut}`;
  return (
    `<details class="live-output" data-key="live-${escapeHtml(entry.toolCallId)}">` +
    `<summary>${escapeHtml(summary)}</summary><pre>${escapeHtml(text)}</pre></details>`
  );
}

const OBSERVATION_LABELS: Partial<Record<ToolCallState, string>> = { failed: "Error", rejected: "Rejected" };

function renderObservation(callId: string, observation: Observation, state: ToolCallState): string {
  const { output, truncated, elapsedMs } = observation;
  const kind = OBSERVATION_LABELS[state] ?? "Observation";
  const time = state === "rejected" ? "" : ` · ${Math.round(elapsedMs)} ms`;
  const label = `${kind}${time}${truncated ? " · truncated by the daemon" : ""}`;
  const cls = `observation ${state}`;
  const lines = output.split("\n").length;
  if (output.length <= FOLD_CHARS && lines <= FOLD_LINES) {
    return `<div class="${cls}"><div class="label">${escapeHtml(label)}</div><pre>${escapeHtml(output)}</pre></div>`;
  }
  const preview = output.split("\n", 1)[0].slice(0, 120);
  const summary = `${escapeHtml(label)} · ${lines} lines, ${output.length} chars — <span class="preview">${escapeHtml(preview)}…</span>`;
  return `<details class="${cls}" data-key="obs-${escapeHtml(callId)}"><summary>${summary}</summary><pre>${escapeHtml(output)}</pre></details>`;
}

/**
 * What the extension asks and tells the user, as data: the approval choices in reading order with
 * the safe one as the default, and the single notice a run ends with. Pure, so the tests pin the
 * order, the default and when a notice appears, without a window.
 */

import { plainLabel, plainMessage, visible } from "./inert";
import type { Decision, PermissionRequest, RunResult, SessionStatus, StopReason, ToolCall } from "./protocol";
import { stopText } from "./trace";

export interface ApprovalChoice {
  label: string;
  description: string;
  decision: Decision;
}

/** In the order people read them; "Reject" is the default, so Enter never runs a tool by accident. */
export const APPROVAL_CHOICES: readonly ApprovalChoice[] = [
  { label: "Allow once", description: "run this call", decision: "allow_once" },
  { label: "Always allow", description: "run every call of this tool until you revoke it", decision: "allow_always" },
  { label: "Reject", description: "do not run it; the model is told", decision: "reject_once" },
  { label: "Always reject", description: "reject every call of this tool until you revoke it", decision: "reject_always" },
];
export const DEFAULT_DECISION: Decision = "reject_once";

/**
 * The choices for one request: the usual four, or, where the sandbox refused the tool's last call and
 * the daemon offers to run this call beyond it, "Allow once", the daemon's "Allow once, with …" and
 * "Reject" (once-only: nothing about such a call stands).
 */
export function approvalChoices(request: Pick<PermissionRequest, "options">): readonly ApprovalChoice[] {
  const expanded = request.options.find((option) => option.optionId === "allow_once_expanded");
  if (expanded === undefined) return APPROVAL_CHOICES;
  const [allowOnce, , reject] = APPROVAL_CHOICES;
  const grant: ApprovalChoice = {
    label: plainLabel(expanded.name),
    description: "this call only, beyond the sandbox that refused the last one",
    decision: "allow_once_expanded",
  };
  return [allowOnce, grant, reject];
}

/** Characters of a call's arguments the approval review shows; a line after them says how many more. */
export const ARGUMENTS_SHOWN_CHARS = 2000;

export interface ArgumentsView {
  text: string;
  /** Some of the arguments were left out, so the text is no longer JSON. */
  cut: boolean;
}

/**
 * What the approval review shows of a call's arguments: a comment naming the tool, then the arguments
 * as indented JSON (the model's raw text when it was not a JSON object), at most ARGUMENTS_SHOWN_CHARS
 * characters of them, then a line saying how many were left out.
 */
export function argumentsView(call: Pick<ToolCall, "name" | "arguments" | "rawArguments" | "parseError">): ArgumentsView {
  const full = (call.parseError === undefined ? JSON.stringify(call.arguments, null, 2) : undefined) ?? call.rawArguments;
  const header = `// The arguments Mini Agent asks to run ${call.name} with\n`;
  if (full.length <= ARGUMENTS_SHOWN_CHARS) return { text: `${header}${full}\n`, cut: false };
  const end = /[\ud800-\udbff]/.test(full[ARGUMENTS_SHOWN_CHARS - 1]) ? ARGUMENTS_SHOWN_CHARS - 1 : ARGUMENTS_SHOWN_CHARS;
  const left = full.length - end;
  return { text: `${header}${full.slice(0, end)}\n… ${left} more characters not shown\n`, cut: true };
}

export const RETRY = "Retry";
export const OPEN_SETTINGS = "Open Settings";
export const SHOW_TRACE = "Show trace";

export interface Notice {
  severity: "info" | "warning" | "error";
  text: string;
  actions: string[];
}

/**
 * The one notice a run ends with, if any. The trace view already shows the answer and the stop, so
 * while it is visible only a failure that needs an action speaks up; a model error is shown with the
 * daemon's own words, a way to fix the settings and a way to run on. The answer and the error are
 * others' text: a notification would make a link of `[x](command:…)` in them (see inert.ts).
 */
export function runNotice(result: RunResult, answer: string | undefined, traceVisible: boolean): Notice | undefined {
  if (result.stopReason === "error") {
    return { severity: "error", text: plainMessage(`Mini Agent: ${result.error ?? stopText("error")}`), actions: [RETRY, OPEN_SETTINGS] };
  }
  if (traceVisible || result.stopReason === null || result.stopReason === "cancelled") return undefined;
  if (result.stopReason === "end_turn") {
    return answer ? { severity: "info", text: plainMessage(`Mini Agent: ${shorten(answer, 200)}`), actions: [SHOW_TRACE] } : undefined;
  }
  return { severity: "warning", text: `Mini Agent: ${stopText(result.stopReason)}`, actions: [SHOW_TRACE] };
}

export interface ApprovalPrompt {
  /** The notification that asks first (it does not take the focus). */
  notice: string;
  /** The review picker's title and placeholder. */
  title: string;
  placeholder: string;
  /** The row of a waiting call in "Manage approvals". */
  label: string;
  description: string;
}

/**
 * The texts that ask about a tool call. The tool's name comes from the workspace, its arguments from
 * the model, the source path from the workspace: none may make a link in the notification, an icon
 * in a row, or hide or reorder what the user reads (see inert.ts).
 */
export function approvalPrompt(call: Pick<ToolCall, "name" | "arguments" | "rawArguments">, source?: { path: string; line: number }): ApprovalPrompt {
  const inline = shorten(JSON.stringify(call.arguments) ?? call.rawArguments, 80);
  const where = source ? ` · defined in ${source.path}:${source.line}` : "";
  return {
    notice: plainMessage(`Mini Agent wants to run ${call.name}(${inline})`),
    title: visible(`Allow Mini Agent to run “${call.name}”?`),
    placeholder: visible(`${call.name}(${inline})${where} — arguments shown beside; Enter rejects; Escape decides later`),
    label: `$(bell) ${plainLabel(call.name)}`,
    description: plainLabel(shorten(JSON.stringify(call.arguments) ?? call.rawArguments, 60)),
  };
}

/** One line of at most `max` characters. */
export function shorten(text: string, max: number): string {
  const line = text.replace(/\s+/g, " ").trim();
  return line.length <= max ? line : `${line.slice(0, max - 1)}…`;
}

/**
 * The Ask input box's title: always "Mini Agent: Ask", and when it continues a conversation, which one
 * (its first task).
 */
export function askTitle(continuing: string | undefined): string {
  return continuing === undefined ? "Mini Agent: Ask" : `Mini Agent: Ask — continuing “${shorten(continuing, 40)}”`;
}

/**
 * Whether Ask continues the conversation `last` (this window's latest Ask) rather than start a fresh
 * one: after a turn that ended with an answer, or while it is ready (not run yet, or cancelled by the
 * user). A run that stopped on a model error, its step budget or a loop is left alone: asking again
 * starts afresh, and Retry / Resume go on with it. "Mini Agent: New Conversation" always starts afresh.
 */
export function continuesConversation(last: { status: SessionStatus; stopReason: StopReason | null } | undefined): boolean {
  if (last === undefined) return false;
  if (last.status === "ready") return last.stopReason === null || last.stopReason === "cancelled";
  return last.status === "finished" && last.stopReason === "end_turn";
}

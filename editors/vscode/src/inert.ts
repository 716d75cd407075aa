/**
 * Text that others wrote (the model, a tool, an MCP server, the model server, a workspace file), made
 * inert for the places VS Code renders something of it. The extension builds no MarkdownString; what
 * VS Code interprets in plain strings is:
 *
 * - links: a notification's message (showInformationMessage and the like) and an input box's prompt or
 *   validation message turn `[label](command:…)`, `[label](https://…)` and `[label](file:…)` into
 *   links, and a click on a `command:` link runs that command with the arguments in its query. Such
 *   text must never reach them as it is: `noLinks` puts a zero-width space between `]` and `(`, so
 *   the text reads the same and nothing is a link.
 * - icons: quick pick rows, an input box's prompt and status bar texts draw `$(name)` as an icon;
 *   `noIcons` escapes it as `\$(name)`, which VS Code shows as written.
 * - control characters: none is interpreted in the DOM, but they are invisible, and a bidirectional
 *   override reorders what follows it; `visible` shows each as itself (ESC as ␛, CR as ␍, U+202E as
 *   ‹U+202E›), newline and tab kept.
 *
 * Pure, so the unit tests check it against VS Code's own link pattern without a window.
 */

/** The link pattern of VS Code's linkedText.ts (notifications, input box prompts and messages). */
export const VSCODE_LINK = /\[([^\]]+)\]\(((?:https?:\/\/|command:|file:)[^)\s]+)(?: (["'])(.+?)(\3))?\)/gi;

/** Control characters (newline and tab kept) and the bidirectional-text controls. */
const CONTROLS = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]/g;

function show(char: string): string {
  const code = char.charCodeAt(0);
  if (code < 0x20) return String.fromCharCode(0x2400 + code); // ␀ … ␟, ␛ for ESC
  if (code === 0x7f) return "\u2421"; // ␡
  return `‹U+${code.toString(16).toUpperCase().padStart(4, "0")}›`;
}

/** `text` with its control characters shown as symbols; newline and tab stay. */
export function visible(text: string): string {
  return text.replace(CONTROLS, show);
}

/** `text` with no `[label](target)` that VS Code would make a link of; it reads the same. */
export function noLinks(text: string): string {
  return text.replace(/\]\(/g, "]\u200b(");
}

/** `text` with `$(name)` shown as written, not as an icon. */
export function noIcons(text: string): string {
  return text.replace(/\$\(/g, "\\$(");
}

/** For a notification's message (which draws no icons): visible, and no links. */
export function plainMessage(text: string): string {
  return noLinks(visible(text));
}

/** For an input box's prompt or validation message: visible, no links, no icons. */
export function plainPrompt(text: string): string {
  return noIcons(noLinks(visible(text)));
}

/** For a quick pick row or a status bar text: visible, no icons. */
export function plainLabel(text: string): string {
  return noIcons(visible(text));
}

/**
 * Slash commands in the Ask box: which of the daemon's commands (`agent/listCommands`) the text typed
 * so far can complete to, what Enter does with a highlighted one, and the words a command's answer
 * is shown with. Pure, so the tests pin them without a window.
 */

import { plainLabel, plainMessage } from "./inert";
import type { CommandAnswer, SlashCommand } from "./protocol";

export interface CommandItem {
  label: string;
  description: string;
  /** What the box holds once this item is taken: "/name", and a space when the command takes an argument. */
  completion: string;
}

/** The commands `typed` completes to: only while it is one word starting with "/" (else a prompt is free text). */
export function commandItems(commands: readonly SlashCommand[], typed: string): CommandItem[] {
  const word = typed.trimStart();
  if (!word.startsWith("/") || /\s/.test(word)) return [];
  return commands
    .filter((command) => `/${command.name}`.startsWith(word))
    .map((command) => ({
      label: `/${command.name}`,
      description: plainLabel(command.input?.hint ? `${command.description} (${command.input.hint})` : command.description),
      completion: command.input ? `/${command.name} ` : `/${command.name}`,
    }));
}

/**
 * Enter in the Ask box: with a command highlighted that the text does not spell out yet, complete to
 * it (the box stays open, e.g. for `/model NAME`); otherwise send the text.
 */
export function onEnter(typed: string, active: CommandItem | undefined): { send: string } | { complete: string } {
  if (active !== undefined && typed.trim() !== active.completion.trim()) return { complete: active.completion };
  return { send: typed };
}

/** The notification a command's answer is shown with (its output may quote a model, a tool or a server: see inert.ts). */
export function commandNotice(answer: CommandAnswer): { severity: "info" | "warning"; text: string } {
  const head = `Mini Agent /${answer.command}${answer.ok === false ? " failed" : ""}`;
  const output = (answer.commandOutput ?? "").trim();
  return { severity: answer.ok === false ? "warning" : "info", text: plainMessage(output ? `${head}: ${output}` : head) };
}

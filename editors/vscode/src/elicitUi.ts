/**
 * The prompts of an MCP server's question (src/elicit.ts) in VS Code: an input box per text field
 * (checked as it is typed, the default filled in), a quick pick per choice, a multi-select quick pick
 * for a list of choices, a modal message for a link. Each stays open when focus moves elsewhere, so a
 * click into the editor does not cancel the question; Escape does.
 */

import * as vscode from "vscode";
import { answerElicitation, type Choice, type ElicitAnswer, type ElicitParams, type ElicitUi } from "./elicit";
import type { Cancellation } from "./protocol";

type ChoiceItem = vscode.QuickPickItem & { choice: Choice };

function items(choices: Choice[]): ChoiceItem[] {
  return choices.map((choice) => ({ label: choice.label, description: choice.description, picked: choice.picked, choice }));
}

/** The prompts, each closed when `cancel` is set (the daemon withdrew the question). */
export function vscodeElicitUi(cancel?: vscode.CancellationToken): ElicitUi {
  return {
    input: ({ title, prompt, value, validate }) =>
      Promise.resolve(vscode.window.showInputBox({ title, prompt, value, validateInput: validate, ignoreFocusOut: true }, cancel)),
    pick: async ({ title, placeholder, choices }) =>
      (await vscode.window.showQuickPick(items(choices), { title, placeHolder: placeholder, ignoreFocusOut: true }, cancel))?.choice,
    pickMany: async ({ title, placeholder, choices }) =>
      (
        await vscode.window.showQuickPick(
          items(choices),
          { title, placeHolder: placeholder, ignoreFocusOut: true, canPickMany: true },
          cancel,
        )
      )?.map((item) => item.choice),
    confirm: ({ message, detail, buttons }) => Promise.resolve(vscode.window.showInformationMessage(message, { modal: true, detail }, ...buttons)),
    openExternal: (url) => Promise.resolve(vscode.env.openExternal(vscode.Uri.parse(url))),
  };
}

/** Answer one `agent/elicit` with VS Code's prompts; `cancel` (the request's token) closes them. */
export function promptElicitation(params: ElicitParams, cancel?: Cancellation): Promise<ElicitAnswer> {
  return answerElicitation(params, vscodeElicitUi(cancel as vscode.CancellationToken | undefined));
}

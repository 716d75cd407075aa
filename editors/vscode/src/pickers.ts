/**
 * The model and permission-mode pickers of the status bar, as data: the three modes in the words a
 * user reads, the quick pick items built from an `agent/listModels` answer, and the status bar texts.
 * Nothing here imports `vscode`, so the unit tests check it directly.
 */

import { plainLabel, visible } from "./inert";
import type { ModelListing, PermissionMode } from "./protocol";

export interface ModeChoice {
  mode: PermissionMode;
  /** The picker's name for the mode. */
  label: string;
  /** What the status bar item shows. */
  short: string;
  description: string;
}

/** The three permission modes, in the picker's order (docs/protocol.md, agent/configureSession). */
export const PERMISSION_MODES: readonly ModeChoice[] = [
  {
    mode: "ask_always",
    label: "Ask before every tool call",
    short: "Ask always",
    description: "Every tool call waits for your answer, read-only ones too.",
  },
  {
    mode: "ask_when_needed",
    label: "Ask when a tool needs approval",
    short: "Ask when needed",
    description: "Only the calls of tools that need approval wait for your answer.",
  },
  {
    mode: "ask_never",
    label: "Never ask (I'm watching)",
    short: "Never ask",
    description: "Calls run without asking, except one reaching outside the workspace; needs a trusted workspace.",
  },
];

export const DEFAULT_PERMISSION_MODE: PermissionMode = "ask_when_needed";

export function isPermissionMode(value: unknown): value is PermissionMode {
  return PERMISSION_MODES.some((choice) => choice.mode === value);
}

export function modeChoice(mode: PermissionMode): ModeChoice {
  return PERMISSION_MODES.find((choice) => choice.mode === mode) ?? PERMISSION_MODES[1];
}

/** The mode quick pick's items, the current one marked. */
export function modeItems(current: PermissionMode): (ModeChoice & { picked: boolean })[] {
  return PERMISSION_MODES.map((choice) => ({
    ...choice,
    description: choice.mode === current ? `(current) ${choice.description}` : choice.description,
    picked: choice.mode === current,
  }));
}

export const REFRESH_LABEL = "$(refresh) Refresh list";

/** One row of the model quick pick: a model to switch to, or the "Refresh list" row. */
export interface ModelItem {
  label: string;
  description?: string;
  detail?: string;
  model?: string;
  refresh?: boolean;
}

export interface ModelPicker {
  items: ModelItem[];
  /** What the quick pick says above its rows: where the choices come from, or why there is only one. */
  placeholder: string;
}

/**
 * The model quick pick from an `agent/listModels` answer; `current` is the model new sessions use
 * (the one picked before, else the daemon's). Without an answer (`failure` says why) the current
 * model is the only choice. The current model is always a row, first when the server does not list it.
 */
export function modelPicker(listing: ModelListing | undefined, current: string | undefined, failure?: string): ModelPicker {
  const chosen = current ?? listing?.current;
  const listed = listing?.models.map((model) => model.id) ?? [];
  const ids = chosen !== undefined && !listed.includes(chosen) ? [chosen, ...listed] : listed;
  const why =
    listing === undefined
      ? `The daemon could not list the models: ${failure ?? "no answer"}.`
      : listing.source === "configured"
        ? listing.message ?? "The model server listed no models: the configured one is the only choice."
        : undefined;
  // The ids and the message come from the model server: rows show them as written (see inert.ts).
  const items: ModelItem[] = ids.map((id) => ({
    label: plainLabel(id),
    model: id,
    description: id === chosen ? "(current)" : undefined,
    detail: why === undefined ? undefined : plainLabel(why),
  }));
  items.push({ label: REFRESH_LABEL, refresh: true, description: "ask the model server again" });
  const placeholder = why ?? `The models ${listing?.baseUrl ?? "the model server"} lists; the pick applies from the next model turn.`;
  return { items, placeholder: visible(placeholder) };
}

/** The model status bar item's text. */
export function modelStatusText(model: string | undefined): string {
  return `$(hubot) ${model === undefined ? "model" : plainLabel(model)}`;
}

/** The permission-mode status bar item's text. */
export function modeStatusText(mode: PermissionMode): string {
  return `$(shield) ${modeChoice(mode).short}`;
}

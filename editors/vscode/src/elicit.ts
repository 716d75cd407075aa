/**
 * An MCP server's question to the user (`agent/elicit`), as a walk through prompts: one text prompt
 * per string or number field (checked as it is typed), one pick for a boolean or a choice, a
 * multi-pick for a list of choices, defaults filled in, then a last pick to send the answers or
 * decline. URL mode asks in a modal message to open the link or decline. A dismissed prompt cancels
 * the question.
 *
 * Nothing here imports `vscode`: the prompts come through `ElicitUi`, so the unit tests walk the same
 * code with scripted answers and the extension gives it input boxes and quick picks.
 *
 * Everything the prompts show of the question is the server's text: an input box's prompt and its
 * validation message would make a link (a `command:` one runs a command) of `[x](command:…)`, rows
 * draw `$(name)` as an icon; so each is made plain here (inert.ts).
 */

import { plainLabel, plainPrompt, visible } from "./inert";

/** What the client announces under `capabilities.experimental.agent.elicitation`: form and URL mode. */
export const ELICITATION_CAPABILITY = { form: {}, url: {} } as const;

/** A flat JSON object schema of primitive properties (the MCP elicitation subset). */
export interface PropertySchema {
  type?: "string" | "number" | "integer" | "boolean" | "array";
  title?: string;
  description?: string;
  default?: unknown;
  enum?: unknown[];
  enumNames?: string[];
  oneOf?: { const: unknown; title?: string }[];
  anyOf?: { const: unknown; title?: string }[];
  items?: PropertySchema;
  format?: string;
  minimum?: number;
  maximum?: number;
  minLength?: number;
  maxLength?: number;
}

export interface RequestedSchema {
  type?: "object";
  properties?: Record<string, PropertySchema>;
  required?: string[];
}

export interface ElicitParams {
  sessionId: string;
  serverName: string;
  message: string;
  requestedSchema?: RequestedSchema;
  mode?: "form" | "url";
  url?: string;
  elicitationId?: string;
}

export type ElicitAnswer =
  | { action: "accept"; content?: Record<string, unknown> }
  | { action: "decline" }
  | { action: "cancel" };

export interface Choice {
  label: string;
  value: unknown;
  description?: string;
  picked?: boolean;
}

/** The prompts a walk needs; each resolves to undefined when the user dismisses it. */
export interface ElicitUi {
  input(options: { title: string; prompt: string; value?: string; validate(text: string): string | undefined }): Promise<string | undefined>;
  pick(options: { title: string; placeholder: string; choices: Choice[] }): Promise<Choice | undefined>;
  pickMany(options: { title: string; placeholder: string; choices: Choice[] }): Promise<Choice[] | undefined>;
  /** A modal message with buttons; the button's label, or undefined when dismissed. */
  confirm(options: { message: string; detail: string; buttons: string[] }): Promise<string | undefined>;
  openExternal(url: string): Promise<boolean>;
}

export const SEND = "Send";
export const DECLINE = "Decline";
export const OPEN = "Open";
export const NO_ANSWER = "(no answer)";

export interface Field {
  name: string;
  schema: PropertySchema;
  required: boolean;
}

/** The form's fields: the required ones first, in the order `required` lists them, then the rest in schema order. */
export function formFields(schema: RequestedSchema | undefined): Field[] {
  const properties = schema?.properties ?? {};
  const required = schema?.required ?? [];
  const names = Object.keys(properties);
  const rank = (name: string) => (required.includes(name) ? required.indexOf(name) : required.length + names.indexOf(name));
  return names
    .sort((a, b) => rank(a) - rank(b))
    .map((name) => ({ name, schema: properties[name], required: required.includes(name) }));
}

/** The field's choices (from `enum`, `oneOf`/`anyOf` consts, or the items of an array), if it has any. */
export function fieldChoices(schema: PropertySchema): Choice[] | undefined {
  const source = schema.type === "array" && schema.items !== undefined ? schema.items : schema;
  if (Array.isArray(source.enum)) {
    return source.enum.map((value, i) => ({ label: String(source.enumNames?.[i] ?? value), value }));
  }
  const options = source.oneOf ?? source.anyOf;
  if (Array.isArray(options)) return options.map((option) => ({ label: String(option.title ?? option.const), value: option.const }));
  return undefined;
}

const FORMATS: Record<string, [RegExp, string]> = {
  email: [/^[^\s@]+@[^\s@]+\.[^\s@]+$/, "an email address"],
  uri: [/^[a-z][a-z0-9+.-]*:\S+$/i, "a URI such as https://example.com"],
  date: [/^\d{4}-\d{2}-\d{2}$/, "a date as YYYY-MM-DD"],
  "date-time": [/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}/, "a date and time as YYYY-MM-DDTHH:MM:SSZ"],
};

/** The parsed answer to a text field: `value` (undefined: an optional field left empty), or what is wrong. */
export type Parsed = { value: string | number | undefined; problem?: undefined } | { problem: string };

/** Parse what was typed for a string, number or integer field. */
export function parseField(field: Field, text: string): Parsed {
  const schema = field.schema;
  if (text === "") return field.required ? { problem: `${fieldTitle(field)} is required` } : { value: undefined };
  if (schema.type === "number" || schema.type === "integer") {
    const number = text.trim() === "" ? Number.NaN : Number(text);
    if (!Number.isFinite(number)) return { problem: `“${text}” is not a number` };
    if (schema.type === "integer" && !Number.isInteger(number)) return { problem: `“${text}” is not a whole number` };
    if (schema.minimum !== undefined && number < schema.minimum) return { problem: `at least ${schema.minimum}` };
    if (schema.maximum !== undefined && number > schema.maximum) return { problem: `at most ${schema.maximum}` };
    return { value: number };
  }
  const length = [...text].length;
  if (schema.minLength !== undefined && length < schema.minLength) return { problem: `at least ${schema.minLength} characters` };
  if (schema.maxLength !== undefined && length > schema.maxLength) return { problem: `at most ${schema.maxLength} characters` };
  const format = schema.format === undefined ? undefined : FORMATS[schema.format];
  if (format !== undefined && !format[0].test(text)) return { problem: `not ${format[1]}` };
  return { value: text };
}

export function fieldTitle(field: Field): string {
  return field.schema.title ?? field.name;
}

/** The walk's title: who asks, and what. */
export function elicitTitle(params: ElicitParams): string {
  return visible(`${params.serverName} asks: ${params.message}`);
}

const LEFT_OUT = Symbol("left out");

/** Choices shown as written (their labels and descriptions are the server's). */
function plainChoices(choices: Choice[]): Choice[] {
  return choices.map((choice) => ({
    ...choice,
    label: plainLabel(choice.label),
    ...(choice.description === undefined ? {} : { description: plainLabel(choice.description) }),
  }));
}

/** Ask one field; undefined when dismissed, LEFT_OUT when an optional field is left without an answer. */
async function askField(ui: ElicitUi, title: string, field: Field, step: string): Promise<unknown> {
  const schema = field.schema;
  const label = `${fieldTitle(field)}${field.required ? "" : " (optional)"}${step}`;
  const placeholder = schema.description ? `${label} — ${schema.description}` : label;
  if (schema.type === "array") {
    const defaults = Array.isArray(schema.default) ? schema.default : [];
    const choices = (fieldChoices(schema) ?? []).map((choice) => ({ ...choice, picked: defaults.includes(choice.value) }));
    const picked = await ui.pickMany({ title, placeholder: visible(placeholder), choices: plainChoices(choices) });
    return picked?.map((choice) => choice.value);
  }
  const choices =
    schema.type === "boolean"
      ? [
          { label: "Yes", value: true },
          { label: "No", value: false },
        ]
      : fieldChoices(schema);
  if (choices !== undefined) {
    const marked = choices.map((choice) => (choice.value === schema.default ? { ...choice, description: "default" } : choice));
    const ordered = [...marked.filter((c) => c.description === "default"), ...marked.filter((c) => c.description !== "default")];
    if (!field.required) ordered.push({ label: NO_ANSWER, value: LEFT_OUT });
    const picked = await ui.pick({ title, placeholder: visible(placeholder), choices: plainChoices(ordered) });
    return picked?.value;
  }
  const value = schema.default === undefined ? undefined : String(schema.default);
  const validate = (typed: string) => {
    const problem = parseField(field, typed).problem;
    return problem === undefined ? undefined : plainPrompt(problem);
  };
  const text = await ui.input({ title, prompt: plainPrompt(placeholder), value, validate });
  if (text === undefined) return undefined;
  const parsed = parseField(field, text);
  if (parsed.problem !== undefined) return undefined; // the input box does not accept a wrong answer
  return parsed.value === undefined ? LEFT_OUT : parsed.value;
}

async function form(params: ElicitParams, ui: ElicitUi): Promise<ElicitAnswer> {
  const title = elicitTitle(params);
  const fields = formFields(params.requestedSchema);
  const content: Record<string, unknown> = {};
  for (const [i, field] of fields.entries()) {
    const step = fields.length > 1 ? ` (${i + 1}/${fields.length})` : "";
    const value = await askField(ui, title, field, step);
    if (value === undefined) return { action: "cancel" };
    if (value !== LEFT_OUT) content[field.name] = value;
  }
  const shown = Object.entries(content).map(([name, value]) => `${name}: ${JSON.stringify(value)}`);
  const choices = [
    { label: SEND, value: SEND, description: shown.join(", ") },
    { label: DECLINE, value: DECLINE, description: `tell ${params.serverName} no` },
  ];
  const placeholder = fields.length > 0 ? `Send these answers to ${params.serverName}?` : params.message;
  const final = await ui.pick({ title, placeholder: visible(placeholder), choices: plainChoices(choices) });
  if (final === undefined) return { action: "cancel" };
  return final.value === SEND ? { action: "accept", content } : { action: "decline" };
}

async function link(params: ElicitParams, ui: ElicitUi): Promise<ElicitAnswer> {
  const url = params.url ?? "";
  const button = await ui.confirm({ message: elicitTitle(params), detail: visible(`Open ${url}?`), buttons: [OPEN, DECLINE] });
  if (button === undefined) return { action: "cancel" };
  if (button === DECLINE) return { action: "decline" };
  await ui.openExternal(url);
  return { action: "accept" };
}

/** Walk the user through one `agent/elicit` and return the answer for the daemon. */
export function answerElicitation(params: ElicitParams, ui: ElicitUi): Promise<ElicitAnswer> {
  return params.mode === "url" ? link(params, ui) : form(params, ui);
}

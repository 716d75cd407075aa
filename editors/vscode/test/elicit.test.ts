/**
 * An MCP server's question (`agent/elicit`): the walk through the prompts with scripted answers, and
 * the same walk answering the real daemon, whose workspace names tests/support/eliciting_mcp_server.py:
 * what the user typed is what the server records.
 */

import * as assert from "node:assert/strict";
import * as fs from "node:fs";
import * as path from "node:path";
import { after, before, describe, test } from "node:test";
import {
  answerElicitation,
  DECLINE,
  ELICITATION_CAPABILITY,
  formFields,
  NO_ANSWER,
  OPEN,
  parseField,
  SEND,
  type Choice,
  type ElicitAnswer,
  type ElicitParams,
  type ElicitUi,
} from "../src/elicit";
import { AgentClient } from "../src/protocol";
import { copyWorkspace, REPO, startDaemon, startReplay, type DaemonConnection, type Replay } from "./harness";

type Shown = { kind: string; title: string; text: string; value?: string; choices?: string[] };

/** A UI whose answers are scripted: a string is typed (or a label picked), undefined dismisses. */
function scripted(answers: (string | string[] | undefined)[]): { ui: ElicitUi; shown: Shown[]; opened: string[] } {
  const shown: Shown[] = [];
  const opened: string[] = [];
  const byLabel = (choices: Choice[], label: string) => choices.find((c) => c.label === label) ?? assert.fail(`no choice ${label}`);
  const ui: ElicitUi = {
    input: async ({ title, prompt, value, validate }) => {
      shown.push({ kind: "input", title, text: prompt, value });
      const typed = answers.shift() as string | undefined;
      if (typed !== undefined) assert.equal(validate(typed), undefined, `the input box would refuse ${typed}`);
      return typed;
    },
    pick: async ({ title, placeholder, choices }) => {
      shown.push({ kind: "pick", title, text: placeholder, choices: choices.map((c) => c.label) });
      const label = answers.shift() as string | undefined;
      return label === undefined ? undefined : byLabel(choices, label);
    },
    pickMany: async ({ title, placeholder, choices }) => {
      shown.push({ kind: "pickMany", title, text: placeholder, choices: choices.map((c) => `${c.picked ? "[x]" : "[ ]"} ${c.label}`) });
      const labels = answers.shift() as string[] | undefined;
      return labels?.map((label) => byLabel(choices, label));
    },
    confirm: async ({ message, detail, buttons }) => {
      shown.push({ kind: "confirm", title: message, text: detail, choices: buttons });
      return answers.shift() as string | undefined;
    },
    openExternal: async (url) => {
      opened.push(url);
      return true;
    },
  };
  return { ui, shown, opened };
}

const NAME_FORM: ElicitParams = {
  sessionId: "s",
  serverName: "greeter",
  message: "What is your name?",
  requestedSchema: {
    type: "object",
    properties: {
      greeting: { type: "string", title: "Greeting", default: "hello" },
      name: { type: "string", title: "Name", description: "Your name" },
    },
    required: ["name"],
  },
};

describe("the walk through a form", () => {
  test("the server's words are shown as written: no link, no icon, no hidden control character", async () => {
    const link = "[x](command:workbench.action.terminal.new)";
    const params: ElicitParams = {
      sessionId: "s",
      serverName: "greeter\u202e",
      message: `Your name? ${link}\u001b[8m`,
      requestedSchema: {
        properties: {
          name: { type: "string", title: `Name ${link}`, description: `see ${link} $(check)` },
          size: { type: "string", enum: ["s"], enumNames: [`Small $(check) ${link}`] },
        },
        required: ["name", "size"],
      },
    };
    // Enter on the empty name first: the input box's message (which VS Code also renders links in) says why.
    const validated: string[] = [];
    const { ui, shown } = scripted(["Ada", `Small \\$(check) ${link}`, SEND]);
    const input = ui.input;
    ui.input = (options) => {
      validated.push(options.validate("") ?? "");
      return input(options);
    };
    assert.deepEqual(await answerElicitation(params, ui), { action: "accept", content: { name: "Ada", size: "s" } });
    // Where VS Code renders links (an input box's prompt and message) there is none; a row draws icons, not links.
    const linked = [...shown.filter((s) => s.kind === "input").map((s) => s.text), ...validated];
    const links = /\[([^\]]+)\]\(((?:https?:\/\/|command:|file:)[^)\s]+)(?: (["'])(.+?)(\3))?\)/i;
    for (const text of linked) assert.ok(!links.test(text), `a link in ${JSON.stringify(text)}`);
    for (const text of shown.flatMap((s) => [s.title, s.text, ...(s.choices ?? [])])) {
      assert.ok(!/[\u0000-\u0008\u000b-\u001f\u202e]/.test(text), `a control character in ${JSON.stringify(text)}`);
    }
    assert.deepEqual(shown[1].choices, [`Small \\$(check) ${link}`], "the choice's icon shown as written");
    assert.equal(shown[0].title, `greeter‹U+202E› asks: Your name? [x](command:workbench.action.terminal.new)␛[8m`);
    assert.match(shown[0].text, /^Name \[x\]\u200b\(command:.* — see \[x\]\u200b\(command:\S+ \\\$\(check\)$/);
    assert.match(validated[0], /^Name \[x\]\u200b\(command:\S+ is required$/);
  });

  test("required fields first; the default is filled in; Send accepts what was typed", async () => {
    const { ui, shown } = scripted(["Ada", "hello", SEND]);
    const answer = await answerElicitation(NAME_FORM, ui);
    assert.deepEqual(answer, { action: "accept", content: { name: "Ada", greeting: "hello" } });
    assert.deepEqual(
      shown.map((s) => [s.kind, s.text, s.value]),
      [
        ["input", "Name (1/2) — Your name", undefined],
        ["input", "Greeting (optional) (2/2)", "hello"],
        ["pick", "Send these answers to greeter?", undefined],
      ],
    );
    assert.ok(shown.every((s) => s.title === "greeter asks: What is your name?"));
    assert.deepEqual(shown[2].choices, [SEND, DECLINE]);
  });

  test("Escape at any prompt cancels; Decline declines", async () => {
    assert.deepEqual(await answerElicitation(NAME_FORM, scripted([undefined]).ui), { action: "cancel" });
    assert.deepEqual(await answerElicitation(NAME_FORM, scripted(["Ada", "hi", undefined]).ui), { action: "cancel" });
    assert.deepEqual(await answerElicitation(NAME_FORM, scripted(["Ada", "hi", DECLINE]).ui), { action: "decline" });
  });

  test("numbers, booleans, choices and lists come back typed; an optional field left empty is left out", async () => {
    const params: ElicitParams = {
      ...NAME_FORM,
      requestedSchema: {
        properties: {
          age: { type: "integer", minimum: 0 },
          ratio: { type: "number" },
          subscribe: { type: "boolean", default: false },
          color: { type: "string", oneOf: [{ const: "r", title: "Red" }, { const: "g", title: "Green" }] },
          size: { type: "string", enum: ["s", "m"] },
          tags: { type: "array", items: { type: "string", enum: ["a", "b", "c"] }, default: ["b"] },
          note: { type: "string" },
        },
        required: ["age", "ratio", "subscribe", "color", "tags"],
      },
    };
    const { ui, shown } = scripted(["42", "0.5", "No", "Green", ["a", "b"], NO_ANSWER, "", SEND]);
    const answer = await answerElicitation(params, ui);
    assert.deepEqual(answer, { action: "accept", content: { age: 42, ratio: 0.5, subscribe: false, color: "g", tags: ["a", "b"] } });
    assert.deepEqual(shown[2].choices, ["No", "Yes"], "the default first");
    assert.deepEqual(shown[4].choices, ["[ ] a", "[x] b", "[ ] c"]);
    assert.deepEqual(shown[5].choices, ["s", "m", NO_ANSWER]);
  });

  test("what the input box refuses, and why", () => {
    const field = (schema: object, required = true) => ({ name: "f", schema, required });
    assert.deepEqual(parseField(field({ type: "string", title: "Name" }), ""), { problem: "Name is required" });
    assert.deepEqual(parseField(field({ type: "string" }, false), ""), { value: undefined });
    assert.deepEqual(parseField(field({ type: "integer" }), "4.5"), { problem: "“4.5” is not a whole number" });
    assert.deepEqual(parseField(field({ type: "number" }), "x"), { problem: "“x” is not a number" });
    assert.deepEqual(parseField(field({ type: "number", maximum: 3 }), "4"), { problem: "at most 3" });
    assert.deepEqual(parseField(field({ type: "string", format: "email" }), "ada"), { problem: "not an email address" });
    assert.deepEqual(parseField(field({ type: "string", format: "email" }), "ada@example.com"), { value: "ada@example.com" });
    assert.deepEqual(parseField(field({ type: "string", maxLength: 2 }), "abc"), { problem: "at most 2 characters" });
  });

  test("fields follow `required`, then the schema's order", () => {
    const fields = formFields({ properties: { c: {}, b: {}, a: {} }, required: ["b"] });
    assert.deepEqual(fields.map((f) => [f.name, f.required]), [["b", true], ["c", false], ["a", false]]);
  });
});

describe("a link to open (URL mode)", () => {
  const params: ElicitParams = { sessionId: "s", serverName: "signer", message: "Please sign", mode: "url", url: "https://example.com/form", elicitationId: "e" };

  test("Open opens it externally and accepts; Decline and Escape do not open it", async () => {
    const opening = scripted([OPEN]);
    assert.deepEqual(await answerElicitation(params, opening.ui), { action: "accept" });
    assert.deepEqual(opening.opened, ["https://example.com/form"]);
    assert.deepEqual(opening.shown[0].choices, [OPEN, DECLINE]);
    const declining = scripted([DECLINE]);
    assert.deepEqual(await answerElicitation(params, declining.ui), { action: "decline" });
    const dismissing = scripted([undefined]);
    assert.deepEqual(await answerElicitation(params, dismissing.ui), { action: "cancel" });
    assert.deepEqual([...declining.opened, ...dismissing.opened], []);
  });
});

const WITHDRAW_WAIT_MS = 30_000; // for the daemon's $/cancelRequest once the call is cancelled; past it the test fails

describe("the real daemon asks through agent/elicit", () => {
  const SERVER = path.join(REPO, "tests", "support", "eliciting_mcp_server.py");
  const PYTHON = process.env.MINI_AGENT_PYTHON ?? path.join(REPO, ".venv", "bin", "python");
  const CALL = 'Thought: I will ask.\nAction: greeter_ask_name\nAction Input: {}';
  const FINAL = "Final Answer: {last_observation}";
  let workspace: string;
  let replay: Replay;
  let daemon: DaemonConnection;
  let answersFile: string;

  before(async () => {
    workspace = copyWorkspace();
    answersFile = path.join(workspace, "answers.txt");
    fs.writeFileSync(
      path.join(workspace, "pyproject.toml"),
      [
        "[[tool.mini-agent.mcp_servers]]",
        'name = "greeter"',
        `command = ${JSON.stringify(PYTHON)}`,
        `args = [${JSON.stringify(SERVER)}, ${JSON.stringify(answersFile)}]`,
        "requires_approval = false",
      ].join("\n") + "\n",
    );
    replay = await startReplay([CALL, FINAL, CALL, FINAL, CALL].map((content) => ({ content })), workspace);
    const options = { llm: { baseUrl: replay.url, model: "replay", toolMode: "react" as const }, maxSteps: 4, workspaceTrusted: true };
    daemon = await startDaemon(workspace, options, { experimental: { agent: { elicitation: ELICITATION_CAPABILITY } } });
  });

  after(async () => {
    await daemon?.close();
    await replay?.close();
    if (workspace !== undefined) fs.rmSync(workspace, { recursive: true, force: true });
  });

  async function ask(typed: (string | undefined)[]): Promise<string> {
    const { ui } = scripted(typed);
    const client = new AgentClient(daemon.peer, { elicit: (params) => answerElicitation(params, ui) });
    try {
      const { sessionId } = await client.startSession("Greet me");
      const result = await client.run(sessionId);
      assert.equal(result.stopReason, "end_turn", result.error ?? "");
      return (result.finalAnswer ?? "").split("\n")[0];
    } finally {
      client.dispose();
    }
  }

  test("the name typed reaches the server; Escape reaches it as cancel", async () => {
    assert.equal(await ask(["Ada", "hello", SEND]), "hello Ada");
    assert.equal(await ask([undefined]), "cancel");
    assert.deepEqual(fs.readFileSync(answersFile, "utf-8").trim().split("\n"), ["hello Ada", "cancel"]);
  });

  test("a question whose call is cancelled is withdrawn: the handler's token is set", async () => {
    let asked: () => void = () => undefined;
    const questionArrived = new Promise<void>((resolve) => (asked = resolve));
    let withdrawn: (set: boolean) => void = () => undefined;
    const cancelled = new Promise<boolean>((resolve) => (withdrawn = resolve));
    const client = new AgentClient(daemon.peer, {
      elicit: (_params, cancel) => {
        asked();
        return new Promise<ElicitAnswer>((answer) =>
          cancel.onCancellationRequested(() => {
            withdrawn(cancel.isCancellationRequested);
            answer({ action: "cancel" });
          }),
        );
      },
    });
    try {
      const { sessionId } = await client.startSession("Greet me");
      const run = client.run(sessionId);
      await questionArrived;
      await client.cancel(sessionId);
      assert.equal((await run).stopReason, "cancelled");
      const never = new Promise<string>((resolve) => setTimeout(() => resolve("no $/cancelRequest"), WITHDRAW_WAIT_MS).unref());
      assert.equal(await Promise.race([cancelled, never]), true);
    } finally {
      client.dispose();
    }
    assert.deepEqual(fs.readFileSync(answersFile, "utf-8").trim().split("\n"), ["hello Ada", "cancel"]);
  });
});

/**
 * The pure parts of the extension: finding the daemon, the def at the cursor, the trace folding
 * and rendering rules, the approval policy's bookkeeping.
 */

import * as assert from "node:assert/strict";
import * as path from "node:path";
import { describe, test } from "node:test";
import { DaemonLogReader } from "../src/daemonLog";
import { launchProblem, resolveLaunch, whichIn } from "../src/launch";
import { APPROVAL_CHOICES, approvalChoices, approvalPrompt, ARGUMENTS_SHOWN_CHARS, argumentsView, askTitle, continuesConversation, DEFAULT_DECISION, OPEN_SETTINGS, RETRY, runNotice } from "../src/prompts";
import { plainLabel, plainMessage, plainPrompt, visible, VSCODE_LINK } from "../src/inert";
import {
  ApprovalDeferred,
  ApprovalPolicy,
  initializationOptions,
  onceForm,
  type PermissionRequest,
  type RunResult,
} from "../src/protocol";
import { DEFAULT_PERMISSION_MODE, isPermissionMode, modeItems, modelPicker, modelStatusText, modeStatusText, PERMISSION_MODES, REFRESH_LABEL } from "../src/pickers";
import { attachmentOf, attachmentOfPasted, checkRoomForImage, MAX_IMAGE_BYTES, MAX_IMAGES, pastedAttachment } from "../src/images";
import { functionAtLine } from "../src/python";
import { escapeHtml, FOLD_CHARS, renderTrace } from "../src/render";
import { commandItems, commandNotice, onEnter } from "../src/slash";
import { applyUpdate, DECLINED_PREFIX, finalAnswer, newTrace, statusLabel, type SessionTrace } from "../src/trace";

describe("resolveLaunch", () => {
  const root = path.join(path.sep, "ws");
  const probes = (executables: string[]) => ({
    isExecutable: (file: string) => executables.includes(file),
    which: whichIn([path.join(path.sep, "usr", "bin")].join(path.delimiter), (file) => executables.includes(file)),
    platform: "linux" as NodeJS.Platform,
  });

  test("the command setting wins, with serve as the default argument", () => {
    const launch = resolveLaunch({ command: "/opt/ma", pythonPath: "/usr/bin/python3" }, root, probes([]));
    assert.deepEqual(launch, { command: "/opt/ma", args: ["serve"], origin: "setting:command" });
  });

  test("a Python path runs the module", () => {
    assert.deepEqual(resolveLaunch({ pythonPath: "/py" }, root, probes([]))?.args, ["-m", "mini_agent"]);
  });

  test("then the workspace's .venv, then venv, then PATH", () => {
    const venv = path.join(root, ".venv", "bin", "mini-agent");
    const plain = path.join(root, "venv", "bin", "mini-agent");
    const onPath = path.join(path.sep, "usr", "bin", "mini-agent");
    assert.equal(resolveLaunch({}, root, probes([venv, plain, onPath]))?.command, venv);
    assert.equal(resolveLaunch({}, root, probes([plain, onPath]))?.command, plain);
    assert.equal(resolveLaunch({}, root, probes([onPath]))?.origin, "PATH");
    assert.equal(resolveLaunch({}, undefined, probes([venv])), undefined);
  });

  test("a configured path that is not there is refused before any spawn, naming the setting", () => {
    const missing = resolveLaunch({ command: "/nowhere/mini-agent" }, root, probes([]))!;
    assert.match(launchProblem(missing, probes([]))!, /miniAgent\.command is set to “\/nowhere\/mini-agent”, which does not exist/);
    assert.equal(launchProblem(missing, probes(["/nowhere/mini-agent"])), undefined);
    const bare = resolveLaunch({ pythonPath: "python9" }, root, probes([]))!;
    assert.match(launchProblem(bare, probes([]))!, /miniAgent\.pythonPath/);
    assert.equal(launchProblem(bare, probes([path.join(path.sep, "usr", "bin", "python9")])), undefined);
  });
});

describe("functionAtLine", () => {
  const source = [
    "import os", // 0
    "", // 1
    "@tool", // 2
    "def first(a: int) -> int:", // 3
    "    return a", // 4
    "", // 5
    "async def second(", // 6
    "    b: str,", // 7
    ") -> str:", // 8
    "    def inner(): pass", // 9
    "    return b", // 10
    "class Thing:", // 11
    "    def method(self): ...", // 12
  ];

  test("finds the def the cursor is in, on, or decorated below", () => {
    assert.equal(functionAtLine(source, 0), undefined);
    assert.equal(functionAtLine(source, 2), "first");
    assert.equal(functionAtLine(source, 3), "first");
    assert.equal(functionAtLine(source, 5), "first");
    assert.equal(functionAtLine(source, 8), "second");
    assert.equal(functionAtLine(source, 10), "second", "nested defs belong to the top-level one");
    assert.equal(functionAtLine(source, 12), undefined, "methods are not tools");
  });
});

describe("trace folding and rendering", () => {
  test("thought chunks of a step join; a new step starts a new entry", () => {
    const trace = newTrace("s1", "task");
    applyUpdate(trace, 0, { kind: "agent_thought_chunk", text: "Thought: a" });
    applyUpdate(trace, 0, { kind: "agent_thought_chunk", text: "b" });
    applyUpdate(trace, 1, { kind: "agent_thought_chunk", text: "c" });
    assert.deepEqual(
      trace.entries.map((e) => (e.kind === "thought" ? [e.step, e.text, e.chunks] : e.kind)),
      [[0, "Thought: ab", 2], [1, "c", 1]],
    );
  });

  test("a failed call is marked, a long observation folded, everything escaped", () => {
    const trace = newTrace("s<1>", "<b>task</b>");
    applyUpdate(trace, 0, { kind: "status", status: "running" });
    applyUpdate(trace, 0, {
      kind: "tool_call", toolCallId: "c1", name: "read", arguments: { p: "<x>" }, rawArguments: "{}", status: "pending",
    });
    assert.equal(statusLabel(trace), "$(sync~spin) mini-agent: step 1 · read");
    const long = "line\n".repeat(FOLD_CHARS);
    applyUpdate(trace, 0, {
      kind: "tool_call_update", toolCallId: "c1", status: "failed",
      observation: { toolCallId: "c1", toolName: "read", output: long, isError: true, elapsedMs: 3 },
    });
    const html = renderTrace(trace);
    assert.ok(!html.includes("<b>task</b>") && html.includes(escapeHtml("<b>task</b>")));
    assert.ok(html.includes('class="tool failed"'));
    assert.match(html, /<details class="observation failed" data-key="obs-c1"><summary>Error · 3 ms/);
    assert.ok(html.includes("&quot;&lt;x&gt;&quot;"));
    assert.equal(statusLabel(trace), "$(sync~spin) mini-agent: step 1");
  });
});

/** A run of `count` at step 0 (thought, call, observation), then the answer at step 1. */
function answeredTrace(output: string, isError = false): SessionTrace {
  const trace = newTrace("s", "count");
  applyUpdate(trace, 0, { kind: "status", status: "running" });
  applyUpdate(trace, 0, { kind: "agent_thought_chunk", text: "Thought: count it.\nAction: count\nAction Input: {}" });
  applyUpdate(trace, 0, { kind: "tool_call", toolCallId: "c1", name: "count", arguments: {}, rawArguments: "{}", status: "pending" });
  applyUpdate(trace, 0, {
    kind: "tool_call_update", toolCallId: "c1", status: isError ? "failed" : "completed",
    observation: { toolCallId: "c1", toolName: "count", output, isError, elapsedMs: 1 },
  });
  applyUpdate(trace, 1, { kind: "agent_thought_chunk", text: "Thought: done.\nFinal Answer: 42 lines" });
  applyUpdate(trace, 1, { kind: "agent_message_chunk", text: "42 lines" });
  applyUpdate(trace, 1, { kind: "status", status: "finished", stopReason: "end_turn" });
  return trace;
}

const count = (text: string, part: string) => text.split(part).length - 1;

describe("the trace view shows each thing once", () => {
  test("raw model text is folded, the answer comes once, first and as the answer block", () => {
    const html = renderTrace(answeredTrace("42"));
    assert.equal(count(html, "42 lines"), 2, "the answer block and the folded raw text of the last step");
    const answerAt = html.indexOf('<section class="answer"');
    assert.ok(answerAt > 0 && answerAt < html.indexOf('class="step"'), "the answer comes before the steps");
    assert.equal(count(html, "<details class=\"raw\""), 2);
    assert.ok(!/<details[^>]*\bopen\b/.test(html), "raw text starts folded");
    assert.equal(count(html, "<pre class=\"args\">"), 1, "one card per call");
    assert.deepEqual([...html.matchAll(/Step (\d+)/g)].map((m) => m[1]), ["1", "2"]);
  });

  test("a rejected call has its own state, neither failed nor an error", () => {
    const trace = answeredTrace(`${DECLINED_PREFIX} Reason: not now`, true);
    const html = renderTrace(trace);
    const call = trace.entries.find((e) => e.kind === "tool");
    assert.equal(call?.kind === "tool" && call.state, "rejected");
    assert.ok(html.includes('<span class="badge rejected">rejected</span>'));
    assert.ok(html.includes("Rejected") && !html.includes("Error") && !html.includes("failed"));
  });

  test("the status bar and the trace agree on the step while a call waits for approval", () => {
    const trace = newTrace("s", "count");
    applyUpdate(trace, 0, { kind: "status", status: "running" });
    applyUpdate(trace, 0, { kind: "tool_call", toolCallId: "a", name: "count", arguments: {}, rawArguments: "{}", status: "pending" });
    applyUpdate(trace, 0, { kind: "tool_call_update", toolCallId: "a", status: "completed",
      observation: { toolCallId: "a", toolName: "count", output: "1", isError: false, elapsedMs: 1 } });
    applyUpdate(trace, 1, { kind: "tool_call", toolCallId: "b", name: "rm", arguments: {}, rawArguments: "{}", status: "pending" });
    // The daemon numbers this status by the step it would start next (len(steps)).
    applyUpdate(trace, 2, { kind: "status", status: "awaiting_approval" });
    const headings = [...renderTrace(trace).matchAll(/Step (\d+)/g)].map((m) => m[1]);
    assert.equal(headings.at(-1), "2");
    assert.equal(statusLabel(trace), "$(bell) mini-agent: step 2 · awaiting approval");
    assert.ok(renderTrace(trace).includes(">step 2 · awaiting approval<"));
  });

  test("after a follow-up the earlier answer stays in its place and the top waits for the new one", () => {
    const trace = answeredTrace("42");
    applyUpdate(trace, 2, { kind: "user_message_chunk", text: "and <twice> that?" });
    assert.equal(trace.step, 1, "the user's words are no step of the model's");
    assert.equal(finalAnswer(trace), undefined, "the earlier answer is not the follow-up's");
    const html = renderTrace(trace);
    assert.ok(!html.includes('<section class="answer"'), html);
    assert.ok(html.includes('<div class="turn answer"><div class="label">Answer</div><pre>42 lines</pre></div>'), html);
    assert.ok(html.includes('<div class="turn prompt"><div class="label">Follow-up</div><pre>and &lt;twice&gt; that?</pre></div>'), html);
    applyUpdate(trace, 2, { kind: "agent_thought_chunk", text: "Final Answer: 84 lines" });
    applyUpdate(trace, 2, { kind: "agent_message_chunk", text: "84 lines" });
    const answered = renderTrace(trace);
    assert.equal(finalAnswer(trace), "84 lines");
    assert.ok(answered.indexOf("84 lines") < answered.indexOf('class="step"'), "the new answer on top");
    assert.ok(answered.indexOf("42 lines</pre></div>") < answered.indexOf("Follow-up"), "then the old answer, the follow-up");
    assert.deepEqual([...answered.matchAll(/Step (\d+)/g)].map((m) => m[1]), ["1", "2", "3"]);
  });

  test("a run that failed never reads as ready", () => {
    const trace = newTrace("s", "count");
    applyUpdate(trace, 0, { kind: "status", status: "running" });
    applyUpdate(trace, 0, { kind: "status", status: "ready", stopReason: "error", message: "cannot reach http://127.0.0.1:9/v1" });
    const html = renderTrace(trace);
    assert.ok(!html.includes(">ready<"), html);
    assert.ok(html.includes('<span class="state warn">model error</span>'));
    assert.equal(statusLabel(trace), "$(error) mini-agent: model error");
  });
});

describe("prompts", () => {
  test("approval choices read in order and the default is the safe one", () => {
    assert.deepEqual(APPROVAL_CHOICES.map((c) => c.label), ["Allow once", "Always allow", "Reject", "Always reject"]);
    assert.equal(DEFAULT_DECISION, "reject_once");
    assert.equal(APPROVAL_CHOICES.find((c) => c.decision === DEFAULT_DECISION)?.label, "Reject");
  });

  const result = (over: Partial<RunResult>): RunResult => ({
    sessionId: "s", status: "finished", stopReason: "end_turn", finalAnswer: "42", steps: 2, stepsRun: 2, error: null,
    usage: { promptTokens: 1, completionTokens: 1, cachedTokens: 0 }, ...over,
  });

  test("an answer is a notification only when the trace is hidden", () => {
    assert.equal(runNotice(result({}), "42", true), undefined);
    assert.deepEqual(runNotice(result({}), "42", false), { severity: "info", text: "Mini Agent: 42", actions: ["Show trace"] });
    assert.equal(runNotice(result({ stopReason: "cancelled", status: "ready" }), undefined, false), undefined);
  });

  test("a model error is one message, in the daemon's words, with Retry and Open Settings", () => {
    const error = "Cannot reach the model server at http://127.0.0.1:9/v1: connection refused. Start it, or set miniAgent.baseUrl.";
    const notice = runNotice(result({ stopReason: "error", status: "ready", error, finalAnswer: null }), undefined, true);
    assert.deepEqual(notice, { severity: "error", text: `Mini Agent: ${error}`, actions: [RETRY, OPEN_SETTINGS] });
  });

  test("a request that no longer fits the context window says so, not just 'finished'", () => {
    const notice = runNotice(result({ stopReason: "max_tokens", status: "ready", finalAnswer: null }), undefined, false);
    assert.deepEqual(notice, { severity: "warning", text: "Mini Agent: stopped: context window full", actions: ["Show trace"] });
  });
});

describe("initialize", () => {
  test("the workspace's trust goes to the daemon", () => {
    const options = initializationOptions({ baseUrl: "http://m/v1", model: "", toolMode: "react", maxSteps: 5 }, undefined, false);
    assert.deepEqual(options, { llm: { baseUrl: "http://m/v1", model: undefined, toolMode: "react" }, maxSteps: 5, workspaceTrusted: false });
    assert.equal(initializationOptions({}, "k", true).workspaceTrusted, true);
    assert.equal(initializationOptions({}, "k", true).llm?.apiKey, "k");
  });
});

describe("ApprovalPolicy", () => {
  const request = (id: string, name = "rm"): PermissionRequest => ({
    sessionId: "s",
    toolCall: { id, name, arguments: {}, rawArguments: "{}" },
    tool: { name, description: "", inputSchema: {}, requiresApproval: true },
    options: [],
  });

  test("always-choices become rules and go out as once-decisions", async () => {
    let prompts = 0;
    const policy = new ApprovalPolicy(async () => {
      prompts += 1;
      return "reject_always";
    });
    assert.deepEqual(await policy.answer(request("1")), { decision: "reject_once" });
    assert.equal((await policy.answer(request("2"))).decision, "reject_once");
    assert.equal(prompts, 1);
    assert.equal(policy.revoke("rm"), true);
    await policy.answer(request("3"));
    assert.equal(prompts, 2);
    assert.deepEqual(["allow_once", "allow_always", "reject_once", "reject_always"].map((d) => onceForm(d as never)),
      ["allow_once", "allow_once", "reject_once", "reject_once"]);
  });

  test("a dismissed prompt is kept as pending and answered with an error", async () => {
    const policy = new ApprovalPolicy(async () => undefined);
    await assert.rejects(policy.answer(request("7")), ApprovalDeferred);
    assert.deepEqual(policy.pending().map((p) => p.toolCall.id), ["7"]);
    policy.settle("7");
    assert.equal(policy.pending().length, 0);
  });
});

describe("continuesConversation", () => {
  test("the input box is titled Ask either way, and says which conversation it continues", () => {
    assert.equal(askTitle(undefined), "Mini Agent: Ask");
    assert.equal(askTitle("How many lines?"), "Mini Agent: Ask — continuing “How many lines?”");
    assert.equal(askTitle("x".repeat(60)), `Mini Agent: Ask — continuing “${"x".repeat(39)}…”`);
  });


  test("Ask goes on after an answer, or while the session is ready", () => {
    assert.equal(continuesConversation({ status: "finished", stopReason: "end_turn" }), true);
    assert.equal(continuesConversation({ status: "ready", stopReason: null }), true);
    assert.equal(continuesConversation({ status: "ready", stopReason: "cancelled" }), true);
  });

  test("no session, one still running, or one that stopped short starts a fresh conversation", () => {
    assert.equal(continuesConversation(undefined), false);
    assert.equal(continuesConversation({ status: "running", stopReason: null }), false);
    assert.equal(continuesConversation({ status: "awaiting_approval", stopReason: null }), false);
    assert.equal(continuesConversation({ status: "ready", stopReason: "error" }), false);
    for (const stopReason of ["max_turn_requests", "loop_detected", "max_tokens"] as const) {
      assert.equal(continuesConversation({ status: "finished", stopReason }), false, stopReason);
    }
  });
});

describe("argumentsView", () => {
  test("indented JSON under a comment naming the tool", () => {
    const view = argumentsView({ name: "delete_file", arguments: { file_path: "notes.txt" }, rawArguments: "" });
    assert.equal(view.cut, false);
    assert.equal(view.text, '// The arguments Mini Agent asks to run delete_file with\n{\n  "file_path": "notes.txt"\n}\n');
  });

  test("the model's raw text when it was not a JSON object", () => {
    const view = argumentsView({ name: "t", arguments: {}, rawArguments: "{oops", parseError: "not JSON" });
    assert.match(view.text, /\n\{oops\n$/);
  });

  test("bounded, with how much was left out", () => {
    const long = "x".repeat(ARGUMENTS_SHOWN_CHARS * 2);
    const view = argumentsView({ name: "write", arguments: { text: long }, rawArguments: "" });
    const full = JSON.stringify({ text: long }, null, 2);
    assert.equal(view.cut, true);
    assert.ok(view.text.includes(full.slice(0, ARGUMENTS_SHOWN_CHARS)), "the first characters are shown");
    assert.ok(!view.text.includes(full.slice(0, ARGUMENTS_SHOWN_CHARS + 1)), "no more than the bound");
    assert.match(view.text, new RegExp(`… ${full.length - ARGUMENTS_SHOWN_CHARS} more characters not shown\\n$`));
  });
});

describe("DaemonLogReader", () => {
  test("each record at the level the daemon logged it, without the label", () => {
    const reader = new DaemonLogReader();
    const levels = [
      "[mini-agent] DEBUG mini_agent.x: d",
      "[mini-agent] INFO mini_agent.llm.client: model requests go to http://h/v1",
      "[mini-agent] WARNING mini_agent.app.config: w",
      "[mini-agent] ERROR mini_agent.x: e",
      "[mini-agent] CRITICAL mini_agent.x: c",
    ].map((line) => reader.read(line));
    assert.deepEqual(levels.map((l) => l.level), ["debug", "info", "warn", "error", "error"]);
    assert.equal(levels[1].text, "mini_agent.llm.client: model requests go to http://h/v1");
  });

  test("a continuation line takes its record's level; one before any record is an error", () => {
    const reader = new DaemonLogReader();
    assert.equal(reader.read("Traceback (most recent call last):").level, "error");
    assert.equal(reader.read("[mini-agent] INFO mini_agent.x: two lines").level, "info");
    assert.deepEqual(reader.read("  the second"), { level: "info", text: "  the second" });
  });
});

describe("the model and permission-mode pickers", () => {
  const listing = { models: [{ id: "qwen" }, { id: "llama" }], current: "qwen", baseUrl: "http://m/v1", source: "server" as const };

  test("the three modes in the picker's words, the default the middle one, the current one marked", () => {
    assert.deepEqual(PERMISSION_MODES.map((m) => [m.mode, m.label]), [
      ["ask_always", "Ask before every tool call"],
      ["ask_when_needed", "Ask when a tool needs approval"],
      ["ask_never", "Never ask (I'm watching)"],
    ]);
    assert.equal(DEFAULT_PERMISSION_MODE, "ask_when_needed");
    const items = modeItems("ask_always");
    assert.deepEqual(items.map((i) => i.picked), [true, false, false]);
    assert.match(items[0].description, /^\(current\) Every tool call waits/);
    assert.ok(isPermissionMode("ask_never") && !isPermissionMode("never"));
    assert.equal(modeStatusText("ask_never"), "$(shield) Never ask");
  });

  test("the server's models, the current one marked, then Refresh list", () => {
    const { items, placeholder } = modelPicker(listing, "llama");
    assert.deepEqual(items.map((i) => [i.label, i.description ?? ""]), [
      ["qwen", ""],
      ["llama", "(current)"],
      [REFRESH_LABEL, "ask the model server again"],
    ]);
    assert.ok(items[2].refresh && items[2].model === undefined);
    assert.match(placeholder, /http:\/\/m\/v1 lists/);
    assert.equal(modelStatusText("llama"), "$(hubot) llama");
  });

  test("a model the server does not list stays a choice, first", () => {
    assert.deepEqual(modelPicker(listing, "mine").items.map((i) => i.model), ["mine", "qwen", "llama", undefined]);
    assert.equal(modelPicker(listing, undefined).items[0].description, "(current)", "the daemon's current one");
  });

  test("a server that lists none or is down: the configured model alone, and why in the daemon's words", () => {
    const down = { models: [{ id: "replay" }], current: "replay", baseUrl: "http://m/v1", source: "configured" as const, message: "the model server at http://m/v1 did not answer in 2 s" };
    const { items, placeholder } = modelPicker(down, undefined);
    assert.equal(placeholder, "the model server at http://m/v1 did not answer in 2 s");
    assert.deepEqual(items.map((i) => i.label), ["replay", REFRESH_LABEL]);
    assert.equal(items[0].detail, placeholder);
    const noDaemon = modelPicker(undefined, "replay", "mini-agent was not found");
    assert.equal(noDaemon.placeholder, "The daemon could not list the models: mini-agent was not found.");
    assert.deepEqual(noDaemon.items.map((i) => i.label), ["replay", REFRESH_LABEL]);
  });
});

describe("live tool output in the trace", () => {
  const start = (trace: SessionTrace) =>
    applyUpdate(trace, 0, { kind: "tool_call", toolCallId: "c1", name: "printer", arguments: {}, rawArguments: "{}", status: "pending" });
  test("printed text accumulates under the running call, with its latest progress, then folds when it ends", () => {
    const trace = newTrace("s1", "print");
    start(trace);
    applyUpdate(trace, 0, { kind: "tool_call_update", toolCallId: "c1", status: "in_progress", output: { append: "one\ntw" } });
    applyUpdate(trace, 0, { kind: "tool_call_update", toolCallId: "c1", status: "in_progress", output: { append: "o <b>\n" } });
    applyUpdate(trace, 0, { kind: "tool_call_update", toolCallId: "c1", status: "in_progress", progress: { message: "halfway", fraction: 0.5 } });
    const running = renderTrace(trace);
    assert.ok(running.includes('<div class="live-output running"><div class="label">Printed so far</div><pre>one\ntwo &lt;b&gt;\n</pre><div class="progress">halfway · 50%</div></div>'), running);
    applyUpdate(trace, 0, {
      kind: "tool_call_update", toolCallId: "c1", status: "completed", liveOutputTruncated: true,
      observation: { toolCallId: "c1", toolName: "printer", output: "done", isError: false, truncated: false, elapsedMs: 5 },
    });
    const ended = renderTrace(trace);
    assert.ok(!ended.includes("live-output running"), ended);
    assert.ok(ended.includes('<details class="live-output" data-key="live-c1"><summary>Printed output · 2 lines · cut at the daemon&#39;s limit</summary><pre>one\ntwo &lt;b&gt;\n</pre></details>'), ended);
  });
  test("a call that printed nothing shows no output block", () => {
    const trace = newTrace("s1", "quiet");
    start(trace);
    assert.ok(!renderTrace(trace).includes("live-output"));
  });
});

describe("slash commands in the Ask box", () => {
  const commands = [
    { name: "compact", description: "Compact the context now" },
    { name: "model", description: "Pick the model", input: { hint: "NAME" } },
  ];
  test("only a single word starting with / completes", () => {
    assert.deepEqual(commandItems(commands, "/"), [
      { label: "/compact", description: "Compact the context now", completion: "/compact" },
      { label: "/model", description: "Pick the model (NAME)", completion: "/model " },
    ]);
    assert.deepEqual(commandItems(commands, "/m").map((item) => item.label), ["/model"]);
    assert.deepEqual(commandItems(commands, "compact"), []);
    assert.deepEqual(commandItems(commands, "/model large"), []);
  });
  test("Enter completes a highlighted command first, then sends", () => {
    const [compact, model] = commandItems(commands, "/");
    assert.deepEqual(onEnter("/co", compact), { complete: "/compact" });
    assert.deepEqual(onEnter("/compact", compact), { send: "/compact" });
    assert.deepEqual(onEnter("/mo", model), { complete: "/model " });
    assert.deepEqual(onEnter("/model ", model), { send: "/model " });
    assert.deepEqual(onEnter("count lines", undefined), { send: "count lines" });
  });
  test("a command's answer is a notice: a warning when it failed", () => {
    assert.deepEqual(commandNotice({ command: "tools", commandOutput: "count_file_lines\n", ok: true }), { severity: "info", text: "Mini Agent /tools: count_file_lines" });
    assert.deepEqual(commandNotice({ command: "mode", commandOutput: "unknown mode", ok: false }), { severity: "warning", text: "Mini Agent /mode failed: unknown mode" });
  });
});

describe("others' text is inert where VS Code would interpret it", () => {
  // A model's answer, a tool argument, a server's message: a command link, OSC 52 (clipboard), hidden
  // text, a carriage return, a right-to-left override and an icon.
  const hostile = "[x](command:workbench.action.terminal.new) \u001b]52;c;cHduZWQ=\u0007 \u001b[8mhidden\u001b[0m\rok \u202e$(check)";
  /** What VS Code's notification and input-box renderers would make links of (linkedText.ts's pattern). */
  const links = (text: string) => text.match(VSCODE_LINK) ?? [];
  const controls = (text: string) => text.match(/[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069]/g) ?? [];

  test("the escaping: no link, no icon, every control character visible, the words kept", () => {
    assert.deepEqual(links(hostile).length, 1, "the pattern does find the link in the raw text");
    for (const plain of [plainMessage(hostile), plainPrompt(hostile)]) {
      assert.deepEqual(links(plain), []);
      assert.deepEqual(controls(plain), []);
      assert.equal(plain.replace(/\u200b/g, "").replace(/\\\$\(/g, "$("), visible(hostile));
    }
    assert.equal(visible(hostile), "[x](command:workbench.action.terminal.new) ␛]52;c;cHduZWQ=␇ ␛[8mhidden␛[0m␍ok ‹U+202E›$(check)");
    assert.ok(plainPrompt(hostile).endsWith("\\$(check)") && plainLabel(hostile).endsWith("\\$(check)"), "an icon is shown as written");
    assert.ok(plainMessage(hostile).endsWith("$(check)"), "a notification draws no icons: nothing to escape");
    assert.equal(visible("line 1\n\tline 2 — ünïcødé"), "line 1\n\tline 2 — ünïcødé", "newline, tab and other text unchanged");
  });

  const result = (over: Partial<RunResult>): RunResult => ({
    sessionId: "s", status: "finished", stopReason: "end_turn", finalAnswer: hostile, steps: 2, stepsRun: 2, error: null,
    usage: { promptTokens: 1, completionTokens: 1, cachedTokens: 0 }, ...over,
  });

  test("the answer's notification and a model error's", () => {
    const answered = runNotice(result({}), hostile, false);
    const failed = runNotice(result({ stopReason: "error", status: "ready", error: hostile, finalAnswer: null }), undefined, true);
    for (const notice of [answered, failed]) {
      assert.ok(notice);
      assert.deepEqual(links(notice.text), [], notice.text);
      assert.deepEqual(controls(notice.text), [], notice.text);
      assert.match(notice.text, /command:workbench\.action\.terminal\.new/, "the text is still there to read");
    }
  });

  test("the approval prompt: the model's arguments and the workspace's tool name", () => {
    const call = { name: "run$(check)", arguments: { cmd: hostile }, rawArguments: "" };
    const asked = approvalPrompt(call, { path: "tools\u202e.py", line: 3 });
    assert.deepEqual(links(asked.notice), [], asked.notice);
    for (const text of Object.values(asked)) assert.deepEqual(controls(text), [], text);
    assert.match(asked.notice, /^Mini Agent wants to run run\$\(check\)\(\{"cmd":"\[x\]\u200b\(command:/);
    assert.equal(asked.label, "$(bell) run\\$(check)", "our icon, then the name as written");
    assert.ok(asked.description.includes("\\$(check)") || !asked.description.includes("$("), asked.description);
    assert.match(asked.placeholder, /defined in tools‹U\+202E›\.py:3/);
  });

  test("a command's answer, the daemon's command list, the model server's ids", () => {
    const notice = commandNotice({ command: "tools", commandOutput: hostile, ok: true });
    assert.deepEqual(links(notice.text), []);
    assert.deepEqual(controls(notice.text), []);
    const [item] = commandItems([{ name: "mcp", description: hostile }], "/m");
    assert.deepEqual(controls(item.description), []);
    assert.ok(item.description.endsWith("\\$(check)"));
    const id = "gpt\u001b[8m$(check)";
    const picker = modelPicker({ models: [{ id }], current: id, baseUrl: "http://x/v1", source: "server" }, undefined);
    assert.equal(picker.items[0].label, "gpt␛[8m\\$(check)");
    assert.equal(picker.items[0].model, id, "the pick is still the server's id");
    assert.equal(modelStatusText(id), "$(hubot) gpt␛[8m\\$(check)");
  });

  test("the trace webview shows control characters, and escapes markup as before", () => {
    const trace = newTrace("s", "<b>task</b>\u202e");
    applyUpdate(trace, 0, { kind: "agent_message_chunk", text: hostile });
    const html = renderTrace(trace);
    assert.ok(!html.includes("\u001b") && !html.includes("\u202e"), html);
    assert.ok(html.includes("‹U+202E›") && html.includes("␛]52;c;cHduZWQ=␇"), html);
    assert.ok(!html.includes("<b>task</b>"));
  });
});

describe("attached images", () => {
  test("a png becomes a base64 attachment; another kind, an empty file or one past 5 MiB is refused by name", () => {
    const png = new Uint8Array([0x89, 0x50, 0x4e, 0x47]);
    assert.deepEqual(attachmentOf("/tmp/Shot.PNG", png), { mimeType: "image/png", data: "iVBORw==" });
    assert.equal(attachmentOf("a.jpg", png).mimeType, "image/jpeg");
    assert.throws(() => attachmentOf("notes.txt", png), /notes\.txt is not a png, jpeg, gif or webp image/);
    assert.throws(() => attachmentOf("empty.png", new Uint8Array()), /empty\.png is empty/);
    assert.throws(() => attachmentOf("big.webp", new Uint8Array(MAX_IMAGE_BYTES + 1)), /big\.webp is larger than 5 MiB/);
  });

  test("a pasted image is taken by the same rules: a kind the daemon reads, base64 it decodes, at most 5 MiB and not empty", () => {
    assert.deepEqual(attachmentOfPasted("image/png", "iVBORw=="), { mimeType: "image/png", data: "iVBORw==" });
    assert.equal(attachmentOfPasted("image/webp", "AAAA").mimeType, "image/webp");
    assert.throws(() => attachmentOfPasted("image/bmp", "iVBORw=="), /its type "image\/bmp" is not png, jpeg, gif or webp/);
    assert.throws(() => attachmentOfPasted("text/plain", "aGk="), /is not png, jpeg, gif or webp/);
    assert.throws(() => attachmentOfPasted("image/png", "not base64!"), /its data is not base64/);
    assert.throws(() => attachmentOfPasted("image/png", "iVBORw"), /its data is not base64/, "padding missing: the daemon refuses it");
    assert.throws(() => attachmentOfPasted("image/png", "iVBO\nRw=="), /its data is not base64/, "whitespace is refused, not skipped");
    assert.throws(() => attachmentOfPasted("image/png", "iV=BORw="), /its data is not base64/);
    assert.throws(() => attachmentOfPasted("image/png", ""), /it is empty/);
  });

  test("a pasted image's size is what its base64 decodes to: exactly 5 MiB is taken, one byte more is refused", () => {
    const largest = Buffer.alloc(MAX_IMAGE_BYTES, 7).toString("base64");
    assert.equal(attachmentOfPasted("image/jpeg", largest).data, largest);
    assert.throws(() => attachmentOfPasted("image/jpeg", Buffer.alloc(MAX_IMAGE_BYTES + 1).toString("base64")), /it is larger than 5 MiB/);
    assert.throws(() => attachmentOfPasted("image/jpeg", "A".repeat(20 * 1024 * 1024)), /it is larger than 5 MiB/);
    for (const size of [1, 2, 3, 4, 5]) {
      const data = Buffer.alloc(size, 1).toString("base64");
      assert.deepEqual(attachmentOfPasted("image/gif", data), { mimeType: "image/gif", data }, `${size} bytes`);
    }
  });

  test("the trace view's paste message is checked field by field; other messages are not a paste", () => {
    for (const other of [undefined, null, "attachImage", 42, [], { type: "trace" }, { mimeType: "image/png", data: "iVBORw==" }]) {
      assert.equal(pastedAttachment(other), undefined, JSON.stringify(other));
    }
    const paste = { type: "attachImage", mimeType: "image/png", bytes: 4, data: "iVBORw==" };
    assert.deepEqual(pastedAttachment({ ...paste, extra: "[x](command:evil)" }), { mimeType: "image/png", data: "iVBORw==" }, "only what it checked");
    assert.deepEqual(pastedAttachment({ type: "attachImage", mimeType: "image/png", data: "iVBORw==" }), { mimeType: "image/png", data: "iVBORw==" });
    assert.throws(() => pastedAttachment({ type: "attachImage", data: "iVBORw==" }), /it came without a media type/);
    assert.throws(() => pastedAttachment({ ...paste, mimeType: ["image/png"] }), /it came without a media type/);
    assert.throws(() => pastedAttachment({ ...paste, mimeType: "image/tiff" }), /its type "image\/tiff" is not png, jpeg, gif or webp/);
    assert.throws(() => pastedAttachment({ ...paste, data: undefined }), /it came without its data/);
    assert.throws(() => pastedAttachment({ ...paste, data: { length: 4 } }), /it came without its data/);
    // The webview does not read a file past the bound: its size alone is the refusal.
    assert.throws(() => pastedAttachment({ type: "attachImage", mimeType: "image/png", bytes: MAX_IMAGE_BYTES + 1 }), /it is larger than 5 MiB/);
    // A size that understates the data does not let it through.
    const big = Buffer.alloc(MAX_IMAGE_BYTES + 1).toString("base64");
    assert.throws(() => pastedAttachment({ ...paste, bytes: 4, data: big }), /it is larger than 5 MiB/);
  });

  test("the next Ask takes as many images as the daemon allows a prompt, and no more", () => {
    assert.equal(MAX_IMAGES, 4);
    for (let count = 0; count < MAX_IMAGES; count++) assert.doesNotThrow(() => checkRoomForImage(count));
    assert.throws(() => checkRoomForImage(MAX_IMAGES), /the next Ask already carries 4 images, the most a prompt may carry/);
  });
});

describe("a call the sandbox refused", () => {
  test("its request offers allow once, the daemon's expanded choice, and reject; others get the usual four", () => {
    const options = [
      { optionId: "allow_once", name: "Allow once", kind: "allow_once" as const },
      { optionId: "allow_once_expanded", name: "Allow once, with network access", kind: "allow_once" as const },
      { optionId: "reject_once", name: "Reject", kind: "reject_once" as const },
    ];
    const choices = approvalChoices({ options });
    assert.deepEqual(choices.map((c) => c.decision), ["allow_once", "allow_once_expanded", "reject_once"]);
    assert.equal(choices[1].label, "Allow once, with network access");
    assert.equal(approvalChoices({ options: [] }), APPROVAL_CHOICES);
  });

  test("a standing rule of the extension does not answer it: the person decides", async () => {
    const asked: string[] = [];
    const policy = new ApprovalPolicy(async (request) => {
      asked.push(request.toolCall.name);
      return "allow_once_expanded";
    });
    policy.record("knock", "allow_always");
    const call = { id: "c1", name: "knock", arguments: {}, rawArguments: "{}" } as never;
    const tool = { name: "knock" } as never;
    const usual = await policy.answer({ sessionId: "s", toolCall: call, tool, options: [] });
    assert.equal(usual.decision, "allow_once");
    const expanded = await policy.answer({
      sessionId: "s", toolCall: call, tool, options: [], expansion: { network: true, write: null },
    });
    assert.deepEqual([expanded.decision, asked], ["allow_once_expanded", ["knock"]]);
  });
});

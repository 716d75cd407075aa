/**
 * The extension's protocol module against the real daemon over stdio, with the scripted model
 * server as the model: what the trace view would show, approvals, cancel.
 */

import * as assert from "node:assert/strict";
import * as fs from "node:fs";
import * as path from "node:path";
import { after, before, describe, test } from "node:test";
import {
  AgentClient,
  ApprovalPolicy,
  ClientTools,
  llmOptions,
  type Decision,
  type PermissionRequest,
  type Tool,
} from "../src/protocol";
import { attachmentOfPasted, MAX_IMAGE_BYTES } from "../src/images";
import { modelPicker } from "../src/pickers";
import { continuesConversation } from "../src/prompts";
import { renderTrace } from "../src/render";
import { commandItems } from "../src/slash";
import { finalAnswer, statusLabel, TraceStore, type SessionTrace, type TraceEntry } from "../src/trace";
import { copyWorkspace, REPO, startDaemon, startReplay, waitFor, type DaemonConnection, type Replay } from "./harness";

const COUNT_SCHEMA = [
  'Thought: I should count the lines of schema.py.\nAction: count_file_lines\nAction Input: {"file_path": "schema.py"}',
];
const FINAL = { content: "Thought: I have the count.\nFinal Answer: schema.py has {last_observation} non-empty lines." };

/** What count_file_lines(file, ignore_empty=True) returns, computed here independently. */
function nonEmptyLines(file: string): number {
  return fs.readFileSync(file, "utf-8").split("\n").filter((line) => line.trim() !== "").length;
}

interface Rig {
  workspace: string;
  replay: Replay;
  daemon: DaemonConnection;
  store: TraceStore;
  client: AgentClient;
  asked: PermissionRequest[];
  approvals: ApprovalPolicy;
}

/** A workspace copy, a replay server with `turns`, the daemon, and an AgentClient with a scripted prompt. */
async function rig(turns: unknown[], answers: (Decision | undefined)[] = []): Promise<Rig> {
  const workspace = copyWorkspace();
  const replay = await startReplay(turns, workspace);
  const daemon = await startDaemon(workspace, { llm: { baseUrl: replay.url, model: "replay", toolMode: "react" }, maxSteps: 6 });
  const store = new TraceStore();
  const asked: PermissionRequest[] = [];
  const approvals = new ApprovalPolicy(async (request) => {
    asked.push(request);
    return answers.shift();
  });
  const client = new AgentClient(daemon.peer, { onUpdate: (params) => store.apply(params), approvals });
  return { workspace, replay, daemon, store, client, asked, approvals };
}

async function closeRig(r: Rig | undefined): Promise<void> {
  if (r === undefined) return;
  r.client.dispose();
  await r.daemon.close();
  await r.replay.close();
  fs.rmSync(r.workspace, { recursive: true, force: true });
}

type Tools = Extract<TraceEntry, { kind: "tool" }>;
const tools = (trace: SessionTrace): Tools[] => trace.entries.filter((e): e is Tools => e.kind === "tool");

describe("ask: a run streamed into the trace model", () => {
  let r: Rig;
  let registered: Tool[];
  let trace: SessionTrace;
  let expected: number;

  before(async () => {
    r = await rig([{ content: COUNT_SCHEMA[0] }, FINAL]);
    expected = nonEmptyLines(path.join(r.workspace, "schema.py"));
    registered = await r.client.registerFile(path.join(r.workspace, "tools.py"));
    const { sessionId, status } = await r.client.startSession("How many non-empty lines does schema.py have?");
    assert.equal(status, "ready");
    const result = await r.client.run(sessionId);
    assert.equal(result.stopReason, "end_turn", r.daemon.stderr());
    assert.equal(result.status, "finished");
    trace = r.store.get(sessionId)!;
  });
  after(() => closeRig(r));

  test("registering tools.py reflects both public functions", () => {
    assert.deepEqual(registered.map((tool) => tool.name).sort(), ["count_file_lines", "list_python_files"]);
    const count = registered.find((tool) => tool.name === "count_file_lines")!;
    assert.deepEqual((count.inputSchema as { required?: string[] }).required, ["file_path"]);
    assert.equal(count.source?.function, "count_file_lines");
  });

  test("thought chunks, the tool call, its observation and the final answer arrive in order", () => {
    const kinds = trace.events.map((event) => `${event.step}:${event.kind}`);
    const firstThought = kinds.indexOf("0:agent_thought_chunk");
    const call = kinds.indexOf("0:tool_call");
    const done = kinds.lastIndexOf("0:tool_call_update");
    const answer = kinds.indexOf("1:agent_message_chunk");
    assert.ok(firstThought >= 0 && firstThought < call && call < done && done < answer, kinds.join(" "));
    const thought = trace.entries.find((e) => e.kind === "thought" && e.step === 0);
    assert.ok(thought?.kind === "thought" && thought.chunks >= 1 && thought.text.includes("count the lines"));
  });

  test("the observation carries the tool's real value", () => {
    const [call] = tools(trace);
    assert.equal(call.name, "count_file_lines");
    assert.deepEqual(call.arguments, { file_path: "schema.py" });
    assert.equal(call.state, "completed");
    assert.equal(call.observation?.isError, false);
    assert.equal(call.observation?.output.trim(), String(expected));
  });

  test("the final answer quotes it, and usage is counted", () => {
    assert.equal(finalAnswer(trace), `schema.py has ${expected} non-empty lines.`);
    assert.equal(trace.status, "finished");
    assert.equal(trace.stopReason, "end_turn");
    assert.ok(trace.usage !== null && trace.usage.promptTokens > 0 && trace.usage.completionTokens > 0);
    assert.match(statusLabel(trace), /^\$\(check\) mini-agent: done$/);
  });

  test("the stored session rebuilds the same trace (Show sessions: agent/loadSession)", async () => {
    const { sessions } = await r.client.listSessions();
    assert.ok(sessions.some((s) => s.sessionId === trace.sessionId && s.stepCount === 2));
    const stored = await r.store.reload(trace.sessionId, () => r.client.loadSession(trace.sessionId));
    assert.notEqual(stored, trace, "a trace of its own, rebuilt from the replay");
    assert.equal(stored.task, "How many non-empty lines does schema.py have?", "the task, from the answer");
    const shape = (t: SessionTrace) => t.entries.filter((e) => e.kind !== "status").map((e) => `${e.step}:${e.kind}`);
    assert.deepEqual(shape(stored), shape(trace));
    assert.equal(tools(stored)[0].observation?.output.trim(), String(expected));
    assert.equal(finalAnswer(stored), finalAnswer(trace));
  });

  test("the trace view's HTML shows the call, the observation and the answer", () => {
    const html = renderTrace(trace);
    assert.ok(html.includes("count_file_lines"));
    assert.ok(html.includes(`&quot;file_path&quot;: &quot;schema.py&quot;`));
    assert.ok(html.includes(`schema.py has ${expected} non-empty lines.`));
  });
});

describe("approvals", () => {
  let r: Rig | undefined;
  after(() => closeRig(r));

  test("allow always is held by the extension; revoked, the next call asks again; a rejection reaches the model", async () => {
    const call = { content: COUNT_SCHEMA[0] };
    // another file: the same call again would be answered from its first result (llm.harness.knownResults)
    const another = { content: COUNT_SCHEMA[0].replace("schema.py", "metrics.py").replace("schema.py", "metrics.py") };
    const rejected = { content: "Final Answer: not allowed: {last_observation}" };
    r = await rig([call, another, FINAL, call, rejected], ["allow_always", "reject_once"]);
    const [tool] = await r.client.registerFunction(path.join(r.workspace, "tools.py"), "count_file_lines", {
      requiresApproval: true,
    });
    assert.equal(tool.requiresApproval, true);

    const first = await r.client.startSession("count twice");
    assert.equal((await r.client.run(first.sessionId)).stopReason, "end_turn", r.daemon.stderr());
    assert.equal(r.asked.length, 1, "the second call is answered by the standing rule, without a prompt");
    const request = r.asked[0];
    assert.equal(request.sessionId, first.sessionId);
    assert.equal(request.toolCall.name, "count_file_lines");
    assert.deepEqual(request.toolCall.arguments, { file_path: "schema.py" });
    assert.equal(request.tool.requiresApproval, true);
    assert.deepEqual(request.options.map((o) => o.kind).sort(), ["allow_always", "allow_once", "reject_always", "reject_once"]);
    const firstCalls = tools(r.store.get(first.sessionId)!);
    assert.equal(firstCalls.length, 2);
    assert.ok(firstCalls.every((c) => c.state === "completed" && c.observation?.isError === false));
    assert.deepEqual(r.approvals.standing().map((rule) => [rule.tool, rule.allow]), [["count_file_lines", true]]);

    assert.equal(r.approvals.revoke("count_file_lines"), true);
    const second = await r.client.startSession("count once more");
    const secondRun = await r.client.run(second.sessionId);
    assert.equal(secondRun.stopReason, "end_turn", r.daemon.stderr());
    assert.equal(r.asked.length, 2, "revoked: the call prompts again");
    const [refused] = tools(r.store.get(second.sessionId)!);
    assert.equal(refused.state, "rejected");
    assert.equal(refused.observation?.isError, true);
    assert.ok(secondRun.finalAnswer?.startsWith("not allowed: "));
    assert.ok(secondRun.finalAnswer!.length > "not allowed: ".length);
  });

  test("a prompt dismissed leaves the run waiting; agent/approve lets it go on", async () => {
    await closeRig(r);
    r = await rig([{ content: COUNT_SCHEMA[0] }, FINAL], [undefined]);
    const expected = nonEmptyLines(path.join(r.workspace, "schema.py"));
    await r.client.registerFunction(path.join(r.workspace, "tools.py"), "count_file_lines", { requiresApproval: true });
    const { sessionId } = await r.client.startSession("count with a late approval");
    const running = r.client.run(sessionId);
    const policy = r.approvals;
    await waitFor((listener) => policy.onDidChange(listener), () => policy.pending().length === 1);
    const [waiting] = policy.pending();
    assert.equal(waiting.sessionId, sessionId);
    const stored = await r.client.getSession(sessionId);
    assert.equal(stored.status, "awaiting_approval");
    assert.deepEqual(stored.pendingApprovals.map((p) => p.toolCall.id), [waiting.toolCall.id]);

    await r.client.approve(sessionId, waiting.toolCall.id, "allow_once");
    policy.settle(waiting.toolCall.id);
    const result = await running;
    assert.equal(result.stopReason, "end_turn", r.daemon.stderr());
    assert.equal(result.finalAnswer, `schema.py has ${expected} non-empty lines.`);
    assert.equal(policy.pending().length, 0);
  });
});

describe("client tools", () => {
  let r: Rig | undefined;
  after(() => closeRig(r));

  test("a tool the editor runs answers agent/executeTool; its throw becomes an error observation", async () => {
    const ask = (name: string) => ({ content: `Thought: ask the editor.\nAction: ${name}\nAction Input: {"word": "tea"}` });
    r = await rig([ask("open_editors"), ask("broken"), { content: "Final Answer: {last_observation}" }]);
    const calls: unknown[] = [];
    const editorTools = new ClientTools();
    const schema = { type: "object", properties: { word: { type: "string" } }, required: ["word"] };
    editorTools.add({ name: "open_editors", description: "What the editor has open.", inputSchema: schema,
      run: (args, call) => { calls.push([args, call.sessionId]); return "a.py, b.py"; } });
    editorTools.add({ name: "broken", description: "Always fails.", inputSchema: schema, run: () => { throw new Error("no editor here"); } });
    const client = new AgentClient(r.daemon.peer, { onUpdate: (params) => r!.store.apply(params), clientTools: editorTools });
    for (const tool of editorTools.all()) {
      const [registered] = await client.registerClientTool(tool);
      assert.equal(registered.client, true);
    }
    const { sessionId } = await client.startSession("what is open?");
    const result = await client.run(sessionId);
    assert.equal(result.stopReason, "end_turn", r.daemon.stderr());
    assert.deepEqual(calls, [[{ word: "tea" }, sessionId]]);
    const [ok, failed] = tools(r.store.get(sessionId)!);
    assert.equal(ok.observation?.output, "a.py, b.py");
    assert.equal(ok.state, "completed");
    assert.equal(failed.state, "failed");
    assert.match(failed.observation?.output ?? "", /no editor here/);
    client.dispose();
  });
});

describe("a model that is down", () => {
  let r: Rig | undefined;
  after(() => closeRig(r));

  test("the run stops with the daemon's error; Retry resumes the session with the fixed URL and runs on", async () => {
    r = await rig([{ content: "Final Answer: back again" }]);
    const dead = { baseUrl: "http://127.0.0.1:9/v1", model: "replay", toolMode: "react" as const };
    // What initialize would carry had the user's setting pointed at a dead server (no retries: quicker).
    const { sessionId } = await r.client.startSession("still there?", { llm: { ...llmOptions(dead), maxRetries: 0 } });
    const failed = await r.client.run(sessionId);
    assert.equal(failed.stopReason, "error");
    assert.match(failed.error ?? "", /127\.0\.0\.1:9/);
    const trace = r.store.get(sessionId)!;
    assert.equal(statusLabel(trace), "$(error) mini-agent: model error");

    // What the Retry action does once the setting is fixed: resume with today's settings, then run.
    const resumed = await r.client.resumeSession(sessionId, llmOptions({ ...dead, baseUrl: r.replay.url }));
    assert.equal(resumed.status, "ready");
    const again = await r.client.run(sessionId);
    assert.equal(again.stopReason, "end_turn", r.daemon.stderr());
    assert.equal(again.finalAnswer, "back again");
  });
});

describe("cancel", () => {
  let r: Rig | undefined;
  after(() => closeRig(r));

  test("agent/cancel during a slow model reply ends the step as cancelled; Resume runs the session on", async () => {
    // The reply starts at once and then stalls, so the cancel surely meets a request in flight (a cancel
    // that came before the request would leave the slow turn for the resumed run).
    const slow = { chunks: ["Thought: waiting for the model", "\nFinal Answer: too late"], chunk_delay: 60 };
    r = await rig([slow, { content: "Final Answer: resumed after the cancel" }]);
    const { sessionId } = await r.client.startSession("wait for a slow model");
    const running = r.client.run(sessionId);
    const store = r.store;
    const streaming = () => store.get(sessionId)?.entries.some((e) => e.kind === "thought") ?? false;
    await waitFor((listener) => store.onDidChange(listener), streaming);
    assert.match(statusLabel(store.get(sessionId)!), /^\$\(sync~spin\) mini-agent: step 1/);

    const answer = await r.client.cancel(sessionId);
    assert.equal(answer.cancelled, true);
    const result = await running;
    assert.equal(result.stopReason, "cancelled");
    assert.equal(result.status, "ready");
    assert.equal(result.finalAnswer, null);
    const trace = store.get(sessionId)!;
    assert.equal(trace.status, "ready");
    assert.ok(trace.entries.some((e) => e.kind === "status" && e.stopReason === "cancelled"));
    assert.equal(statusLabel(trace), "$(debug-pause) mini-agent: cancelled");
    // What "Resume session" does: reload the stored trace, then run again with updates streaming into it.
    await r.client.resumeSession(sessionId);
    const resumed = await store.reload(sessionId, () => r!.client.loadSession(sessionId));
    assert.equal(resumed.status, "ready");
    const again = await r.client.run(sessionId);
    assert.equal(again.stopReason, "end_turn", r.daemon.stderr());
    assert.equal(again.finalAnswer, "resumed after the cancel");
    assert.equal(store.get(sessionId), resumed);
    assert.equal(finalAnswer(resumed), "resumed after the cancel");
    assert.equal(resumed.status, "finished");
  });
});

describe("continuing the conversation", () => {
  let r: Rig | undefined;
  after(() => closeRig(r));

  test("a second ask reaches the model as a follow-up of the same session (agent/prompt)", async () => {
    r = await rig([{ content: "Final Answer: first answer" }, { content: "Final Answer: you said: {last_user}" }]);
    const { sessionId } = await r.client.startSession("first question");
    const first = await r.client.run(sessionId);
    assert.equal(first.finalAnswer, "first answer", r.daemon.stderr());
    assert.equal(continuesConversation(r.store.get(sessionId)), true);

    // What Ask does when it continues: agent/prompt on the same session, then agent/run.
    const prompted = await r.client.prompt(sessionId, "and a follow-up");
    assert.deepEqual(prompted, { sessionId, status: "ready" });
    assert.deepEqual(r.store.get(sessionId)!.entries.at(-1), { kind: "prompt", step: 1, text: "and a follow-up" });
    const second = await r.client.run(sessionId);
    assert.equal(second.stopReason, "end_turn", r.daemon.stderr());
    assert.equal(second.finalAnswer, "you said: and a follow-up");
    const stored = await r.client.getSession(sessionId);
    assert.deepEqual(
      stored.steps.map((step) => step.finalAnswer),
      ["first answer", "you said: and a follow-up"],
    );

    // The trace reads as the conversation went: answer, follow-up, the next step and its answer on top.
    const trace = r.store.get(sessionId)!;
    assert.deepEqual(
      trace.entries.filter((e) => e.kind !== "thought").map((e) => `${e.step} ${e.kind}`),
      ["0 answer", "0 status", "1 prompt", "1 answer", "1 status"],
    );
    assert.equal(finalAnswer(trace), "you said: and a follow-up");
    const html = renderTrace(trace);
    assert.ok(html.indexOf("you said: and a follow-up") < html.indexOf("Step 1"), "the latest answer on top");
    const order = ["Step 1", "first answer", "Follow-up", "and a follow-up", "Step 2"].map((part) => html.indexOf(part, html.indexOf("Step 1")));
    assert.deepEqual([...order].sort((a, b) => a - b), order, html);

    // Shown again later (a reload: agent/loadSession), the follow-up is in the same place, once; a
    // replay keeps only the session's last status.
    const shape = (t: SessionTrace) => t.entries.filter((e) => e.kind !== "status").map((e) => `${e.step} ${e.kind}`);
    const reloaded = await r.store.reload(sessionId, () => r!.client.loadSession(sessionId));
    assert.deepEqual(shape(reloaded), shape(trace));
    const again = renderTrace(reloaded);
    assert.equal(again.split("Follow-up").length, 2, again);
    const replayed = ["Step 1", "first answer", "Follow-up", "and a follow-up", "Step 2"].map((part) => again.indexOf(part, again.indexOf("Step 1")));
    assert.deepEqual([...replayed].sort((a, b) => a - b), replayed, again);
  });
});

describe("the model and permission-mode pickers", () => {
  let r: Rig | undefined;
  after(() => closeRig(r));

  test("the picker lists the server's models; a new session in ask_always with the picked model asks even for a read-only tool", async () => {
    r = await rig([{ content: COUNT_SCHEMA[0] }, FINAL], ["allow_once"]);
    await r.client.registerFile(path.join(r.workspace, "tools.py"));
    const listing = await r.client.listModels();
    assert.equal(listing.source, "server");
    // The daemon's model is "replay" and the server lists it: one choice, current, then Refresh list.
    assert.deepEqual(modelPicker(listing, "mine").items.map((i) => i.model), ["mine", "replay", undefined]);
    const { sessionId } = await r.client.startSession("How many lines?", { permissionMode: "ask_always", llm: { model: "replay" } });
    const configured = await r.client.configureSession(sessionId);
    assert.deepEqual([configured.model, configured.permissionMode], ["replay", "ask_always"]);
    const result = await r.client.run(sessionId);
    assert.equal(result.stopReason, "end_turn", r.daemon.stderr());
    assert.deepEqual(r.asked.map((a) => a.toolCall.name), ["count_file_lines"], "the read-only tool asked");
    assert.equal(result.finalAnswer, `schema.py has ${nonEmptyLines(path.join(r.workspace, "schema.py"))} non-empty lines.`);
  });

  test("a model server that is down: the configured model alone, and why", async () => {
    const listing = await r!.client.listModels({ baseUrl: "http://127.0.0.1:9/v1", refresh: true });
    const { items, placeholder } = modelPicker(listing, undefined);
    assert.equal(listing.source, "configured");
    assert.deepEqual(items.map((i) => i.model), ["replay", undefined]);
    assert.match(placeholder, /127\.0\.0\.1:9/);
  });

  test("Never ask in an untrusted workspace: refused with the daemon's message", async () => {
    const { sessionId } = await r!.client.startSession("anything");
    await assert.rejects(r!.client.configureSession(sessionId, { permissionMode: "ask_never" }), (error: Error) => {
      assert.match(error.message, /not trusted/);
      return true;
    });
  });
});

/** A workspace tool that prints 5 lines 0.3 s apart, holding after the third until a file named go exists (20 s at most). */
const SLOW_PRINT = path.join(REPO, "editors", "vscode", "test", "fixtures", "slow.py");

describe("live tool output and slash commands", () => {
  let r: Rig;
  before(async () => {
    r = await rig([
      { content: 'Thought: I will print.\nAction: slow_print\nAction Input: {"lines": 5}' },
      { content: "Thought: It printed.\nFinal Answer: the tool said {last_observation}" },
    ]);
    fs.copyFileSync(SLOW_PRINT, path.join(r.workspace, "slow.py"));
    await r.client.registerFile(path.join(r.workspace, "slow.py"));
  });
  after(() => closeRig(r));

  test("what the tool prints grows under the running call, then folds; the observation is the return value", async () => {
    const { sessionId } = await r.client.startSession("Print some lines");
    const running = r.client.run(sessionId);
    const call = () => tools(r.store.ensure(sessionId))[0];
    // Bounded by the tool: it waits 20 s at most for "go" (under the daemon's 30 s tool timeout), so a daemon that shows nothing live ends the run first.
    const first = await Promise.race([
      waitFor((listener) => r.store.onDidChange(listener), () => call()?.liveOutput.includes("line 3") === true).then(() => "printed"),
      running.then(() => "ended"),
    ]);
    assert.equal(first, "printed", `the third printed line showed before the run ended: ${JSON.stringify(call())}`);
    assert.equal(call().state, "in_progress", "the tool is holding: the call still runs");
    assert.equal(call().observation, undefined);
    assert.equal(call().liveOutput, "line 1\nline 2\nline 3\n");
    const live = renderTrace(r.store.get(sessionId)!);
    assert.ok(live.includes('<div class="live-output running"><div class="label">Printed so far</div><pre>line 1\nline 2\nline 3\n</pre>'), live);
    fs.writeFileSync(path.join(r.workspace, "go"), "");
    const result = await running;
    assert.equal(result.stopReason, "end_turn", r.daemon.stderr());
    assert.equal(call().observation?.output, "printed 5 lines", "the model got the return value alone");
    assert.equal(call().liveOutput, "line 1\nline 2\nline 3\nline 4\nline 5\n");
    const done = renderTrace(r.store.get(sessionId)!);
    assert.ok(done.includes(`<details class="live-output" data-key="live-${call().toolCallId}"><summary>Printed output · 5 lines</summary>`), done);
    assert.ok(!done.includes("live-output running"), done);
  });

  test("the Ask box completes the daemon's commands; /tools answers without a model turn", async () => {
    const commands = await r.client.listCommands();
    assert.deepEqual(commandItems(commands, "/t").map((item) => item.label).sort(), ["/tools", "/trust"]);
    assert.deepEqual(commandItems(commands, "/mo").map((item) => item.completion).sort(), ["/mode ", "/model "], "room for the argument");
    assert.deepEqual(commandItems(commands, "/comp").map((item) => item.completion), ["/compact"]);
    assert.deepEqual(commandItems(commands, "/model x"), [], "no completion once the argument starts");
    const sessionId = r.store.all()[0].sessionId;
    const answer = await r.client.prompt(sessionId, "/tools");
    assert.equal(answer.command, "tools");
    assert.ok(answer.commandOutput?.includes("slow_print"), answer.commandOutput);
    assert.equal(answer.status, "finished", "the session's status, unchanged");
  });
});

describe("forking the conversation", () => {
  let r: Rig | undefined;
  let forkedId = "";
  after(() => closeRig(r));

  test("a fork (agent/forkSession) carries the history into a new session whose follow-up leaves the source alone", async () => {
    r = await rig([{ content: "Final Answer: first answer" }, { content: "Final Answer: side, after {last_user}" }]);
    const { sessionId } = await r.client.startSession("first question");
    assert.equal((await r.client.run(sessionId)).finalAnswer, "first answer", r.daemon.stderr());

    // What Fork Session does: fork, then rebuild the fork's trace from the store (agent/loadSession).
    const forked = await r.client.forkSession(sessionId);
    forkedId = forked.sessionId;
    assert.notEqual(forked.sessionId, sessionId);
    assert.deepEqual(forked.steps.map((step) => step.finalAnswer), ["first answer"]);
    const trace = await r.store.reload(forked.sessionId, () => r!.client.loadSession(forked.sessionId));
    assert.equal(finalAnswer(trace), "first answer");

    await r.client.prompt(forked.sessionId, "a side question");
    assert.equal((await r.client.run(forked.sessionId)).finalAnswer, "side, after a side question");
    const source = await r.client.getSession(sessionId);
    assert.deepEqual(source.steps.map((step) => step.finalAnswer), ["first answer"], "the source is untouched");
    await assert.rejects(r.client.forkSession(sessionId, 5), /has no finished step 5/);
  });

  test("an image attached to a follow-up comes back in its user_message_chunk; a refused one names the bound", async () => {
    const forked = forkedId;
    await assert.rejects(
      r!.client.prompt(forked, "look", [{ mimeType: "image/png", data: "not base64!" }]),
      /images\[0\]: data is not base64/,
    );
    await r!.client.prompt(forked, "look at this", [{ mimeType: "image/png", data: "iVBORw==" }]);
    const entries = r!.store.get(forked)!.entries;
    assert.ok(entries.some((e) => e.kind === "prompt" && e.text === "look at this"), JSON.stringify(entries));
    // this rig runs react: the daemon says the image was left out
    assert.match(JSON.stringify(entries.at(-1)), /The 1 image attached was not sent to the model: tool mode react/);
  });

  test("a pasted image the extension takes, the daemon takes too, up to the byte; what it refuses, the daemon refuses", async () => {
    const largest = attachmentOfPasted("image/png", Buffer.alloc(MAX_IMAGE_BYTES, 1).toString("base64"));
    await r!.client.prompt(forkedId, "the largest paste", [largest]);
    const entries = r!.store.get(forkedId)!.entries;
    assert.ok(entries.some((e) => e.kind === "prompt" && e.text === "the largest paste"), JSON.stringify(entries.map((e) => e.kind)));
    const over = Buffer.alloc(MAX_IMAGE_BYTES + 1, 1).toString("base64");
    assert.throws(() => attachmentOfPasted("image/png", over), /larger than 5 MiB/);
    await assert.rejects(r!.client.prompt(forkedId, "too large", [{ mimeType: "image/png", data: over }]), /larger than 5242880 bytes/);
    assert.throws(() => attachmentOfPasted("image/png", "iVBORw"), /not base64/);
    await assert.rejects(r!.client.prompt(forkedId, "unpadded", [{ mimeType: "image/png", data: "iVBORw" }]), /data is not base64/);
  });
});

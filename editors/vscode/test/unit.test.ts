/**
 * The pure parts of the extension: finding the daemon, the def at the cursor, the trace folding
 * and rendering rules, the approval policy's bookkeeping.
 */

import * as assert from "node:assert/strict";
import * as path from "node:path";
import { describe, test } from "node:test";
import { resolveLaunch, whichIn } from "../src/launch";
import { ApprovalDeferred, ApprovalPolicy, onceForm, type PermissionRequest } from "../src/protocol";
import { functionAtLine } from "../src/python";
import { escapeHtml, FOLD_CHARS, renderTrace } from "../src/render";
import { applyUpdate, newTrace, statusLabel } from "../src/trace";

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
    assert.ok(html.includes('class="tool error"'));
    assert.match(html, /<details class="observation error" data-key="obs-c1"><summary>Error · 3 ms/);
    assert.ok(html.includes("&quot;&lt;x&gt;&quot;"));
    assert.equal(statusLabel(trace), "$(sync~spin) mini-agent: step 1");
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

/**
 * The end-to-end user journey in a real VS Code (code-server), driven as a person drives it: the
 * command palette, the quick open, the input box, the notification buttons and Enter, with what the
 * user sees read from the workbench's DOM and from inside the trace webview, all through Chromium's
 * DevTools protocol (playwright-core over Debian's chromium-headless-shell).
 *
 *   node out/test/e2e/ui.js URL WORKSPACE
 *
 * e2e-code-server.sh starts code-server, the scripted model server and this script; the model plays
 * a run (count lines), its follow-up (Ask again: the same session, which the answer shows by quoting the
 * first turn's tool result), a screenshot pasted into the trace view (a text paste and a bmp first: nothing,
 * then a refusal) that the next follow-up carries to the daemon, a New Conversation whose tool prints while it runs (its lines show under the
 * running call, then fold), the /tools command completed in the input box, and, each in a New Conversation, a run that tries to delete a file (the
 * user rejects it with Enter, having seen its arguments beside the picker) and one where the user points miniAgent.baseUrl at a dead server, meets
 * the error, fixes the URL and presses Retry; then the user picks the model in the status bar (the
 * next request names it, as the daemon's log shows) and "Ask before every tool call" (a read-only
 * tool then asks); then the workspace names an MCP server that asks for a name, and the user types it
 * into the input box (the server records what it got); then the workspace names an MCP server behind
 * OAuth, and its sign-in page opens in a new browser tab and completes; last the user points miniAgent.command at a missing file. Between them the daemon's INFO log line must show in the output channel as [info]. Each part prints PASS, or FAIL with what the page showed (and the next part still runs); any
 * FAIL exits non-zero.
 */

import * as assert from "node:assert/strict";
import * as fs from "node:fs";
import * as path from "node:path";
import { chromium, type Frame, type Page } from "playwright-core";

const [url, workspace] = process.argv.slice(2);
const BROWSER = process.env.E2E_CHROMIUM ?? "/usr/bin/chromium-headless-shell";
const WAIT_MS = Number(process.env.E2E_WAIT_MS ?? 60_000);

/** Re-check `probe` until it returns something other than undefined/false; fail with `what` after WAIT_MS. */
async function until<T>(what: string, probe: () => Promise<T | undefined | false>): Promise<T> {
  const deadline = Date.now() + WAIT_MS;
  let last: unknown;
  for (;;) {
    try {
      const value = await probe();
      if (value !== undefined && value !== false) return value;
    } catch (error) {
      last = error;
    }
    if (Date.now() > deadline) throw new Error(`gave up waiting for ${what}${last ? ` (${String(last)})` : ""}`);
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

const quickInput = (page: Page) => page.locator(".quick-input-widget");

/** Type into the quick input and take the row whose label holds `label`. */
async function pick(page: Page, text: string, label: string): Promise<void> {
  const input = quickInput(page).locator("input.input");
  await input.fill(text);
  const row = quickInput(page).locator(".monaco-list-row", { hasText: label }).first();
  await row.waitFor({ state: "visible", timeout: WAIT_MS });
  await row.click();
}

async function command(page: Page, title: string): Promise<void> {
  await page.keyboard.press("F1");
  await quickInput(page).waitFor({ state: "visible", timeout: WAIT_MS });
  await pick(page, `>${title}`, title);
}

async function openFile(page: Page, name: string): Promise<void> {
  await page.keyboard.press("F1");
  await quickInput(page).waitFor({ state: "visible", timeout: WAIT_MS });
  await pick(page, name, name);
  await page.locator(".tab.active", { hasText: name }).first().waitFor({ timeout: WAIT_MS });
  // Commands like "Register tools in this file" show only while a Python editor has the focus.
  await page.locator(".editor-group-container.active .monaco-editor .view-lines").first().click();
  await page.locator(".editor-group-container.active .monaco-editor.focused").first().waitFor({ timeout: WAIT_MS });
}

/** Ask (or start a New Conversation with) `task` in the input box; returns the box's title. */
async function ask(page: Page, task: string, how = "Mini Agent: Ask…"): Promise<string> {
  await command(page, how);
  const title = quickInput(page).locator(".quick-input-title", { hasText: "Mini Agent: Ask" });
  await title.waitFor({ timeout: WAIT_MS });
  const text = (await title.textContent()) ?? "";
  await quickInput(page).locator("input.input").fill(task);
  await page.keyboard.press("Enter");
  return text;
}

/** The rows of the Mini Agent Sessions view in the explorer (label and description), newest first. */
async function sessionRows(page: Page): Promise<string[]> {
  await command(page, "Focus on Mini Agent Sessions View");
  const pane = page.locator(".pane", { has: page.locator(".pane-header", { hasText: "Mini Agent Sessions" }) });
  await pane.locator(".monaco-list-row").first().waitFor({ timeout: WAIT_MS });
  return pane.locator(".monaco-list-row").evaluateAll((rows) =>
    rows.map((row) => [...row.querySelectorAll(".label-name, .label-description")].map((e) => e.textContent).join(" · ")),
  );
}

interface Toast {
  text: string;
  buttons: string[];
}

async function toasts(page: Page): Promise<Toast[]> {
  return page.locator(".notification-toast").evaluateAll((nodes) =>
    nodes.map((node) => ({
      text: node.querySelector(".notification-list-item-message")?.textContent ?? "",
      buttons: [...node.querySelectorAll(".notification-list-item-buttons-container .monaco-button")].map((b) => b.textContent ?? ""),
    })),
  );
}

async function clearToasts(page: Page): Promise<void> {
  await command(page, "Notifications: Clear All Notifications");
  await until("no notifications", async () => (await toasts(page)).length === 0);
}

/** The status bar items that speak of the agent (ours, and any progress item repeating it). */
async function agentStatus(page: Page): Promise<string[]> {
  const texts = await page.locator(".part.statusbar .statusbar-item").allTextContents();
  return texts.map((t) => t.trim()).filter((t) => /mini-agent|step \d/.test(t));
}

/** The frame inside the trace webview that holds the rendered trace. */
async function traceFrame(page: Page): Promise<Frame> {
  return until("the trace webview", async () => {
    for (const frame of page.frames()) {
      if ((await frame.locator("#trace").count().catch(() => 0)) > 0) return frame;
    }
    return undefined;
  });
}

interface TraceDom {
  sessionId: string;
  state: string;
  answer: string | null;
  /** The answer's font size over the page's. */
  answerScale: number;
  rawFolded: boolean[];
  steps: string[];
  badges: string[];
  labels: string[];
  /** The answers of turns before the latest and the follow-ups the user sent, in order: "Label: text". */
  turns: string[];
  /** What running calls printed so far, one per call. */
  printing: string[];
  /** What ended calls printed: whether the fold is closed, its summary and the text in it. */
  printed: { folded: boolean; summary: string; text: string }[];
  text: string;
}

async function readTrace(frame: Frame): Promise<TraceDom> {
  return frame.locator("#trace").evaluate((root) => ({
    sessionId: root.querySelector(".meta code")?.textContent ?? "",
    state: root.querySelector(".meta .state")?.textContent ?? "",
    answer: root.querySelector("section.answer .answer-text")?.textContent ?? null,
    answerScale: ((style) => {
      const answer = root.querySelector("section.answer .answer-text");
      return answer ? parseFloat(style(answer).fontSize) / parseFloat(style(root.ownerDocument.body).fontSize) : 0;
    })((globalThis as unknown as { getComputedStyle(e: unknown): { fontSize: string } }).getComputedStyle),
    rawFolded: [...root.querySelectorAll("details.raw")].map((d) => !(d as unknown as { open: boolean }).open),
    steps: [...root.querySelectorAll("h2.step")].map((h) => h.textContent ?? ""),
    badges: [...root.querySelectorAll(".tool .badge")].map((b) => b.textContent ?? ""),
    labels: [...root.querySelectorAll(".observation .label, .observation summary")].map((l) => l.textContent ?? ""),
    turns: [...root.querySelectorAll(".turn")].map((t) => `${t.querySelector(".label")?.textContent}: ${t.querySelector("pre")?.textContent}`),
    printing: [...root.querySelectorAll(".live-output.running pre")].map((p) => p.textContent ?? ""),
    printed: [...root.querySelectorAll("details.live-output")].map((d) => ({
      folded: !(d as unknown as { open: boolean }).open,
      summary: d.querySelector("summary")?.textContent ?? "",
      text: d.querySelector("pre")?.textContent ?? "",
    })),
    text: (root as unknown as { innerText: string }).innerText,
  }));
}

/** A file on the clipboard: its name, media type and bytes (base64). */
interface ClipboardFile {
  name: string;
  type: string;
  base64: string;
}

/** A 1×1 PNG, as a screenshot tool puts one on the clipboard. */
const PNG_1X1 = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==";

/**
 * Paste into the trace webview as Chromium does on Ctrl+V: a `paste` ClipboardEvent on the webview's
 * document whose clipboardData holds `files` (and `text`). The function runs in the webview's frame.
 */
async function pasteInto(frame: Frame, files: ClipboardFile[], text?: string): Promise<void> {
  await frame.evaluate(
    ({ files, text }) => {
      // The webview's own globals (this Node project compiles without the DOM's types).
      const web = globalThis as unknown as {
        DataTransfer: new () => { items: { add(file: unknown): void }; setData(type: string, data: string): void };
        File: new (parts: Uint8Array[], name: string, options: { type: string }) => unknown;
        ClipboardEvent: new (type: string, init: { clipboardData: unknown; bubbles: boolean; cancelable: boolean }) => unknown;
        document: { dispatchEvent(event: unknown): boolean };
        atob(data: string): string;
      };
      const clipboard = new web.DataTransfer();
      if (text !== undefined) clipboard.setData("text/plain", text);
      for (const file of files) {
        const bytes = Uint8Array.from(web.atob(file.base64), (char) => char.charCodeAt(0));
        clipboard.items.add(new web.File([bytes], file.name, { type: file.type }));
      }
      web.document.dispatchEvent(new web.ClipboardEvent("paste", { clipboardData: clipboard, bubbles: true, cancelable: true }));
    },
    { files, text },
  );
}

/**
 * Change a setting as the user does, in settings.json (user and machine: code-server reads both);
 * returns its value before.
 */
function setSetting(key: string, value: unknown): unknown {
  let before: unknown;
  for (const scope of ["User", "Machine"]) {
    const file = path.join(process.env.E2E_USER_DATA ?? "", scope, "settings.json");
    const current = JSON.parse(fs.readFileSync(file, "utf-8")) as Record<string, unknown>;
    before = current[key];
    fs.writeFileSync(file, JSON.stringify({ ...current, [key]: value }, null, 2));
  }
  return before;
}

/** The lines of the Mini Agent output channel's files ("Show daemon log"), each led by its level, e.g. `[info]`. */
function channelLines(): string[] {
  const logs = path.join(process.env.E2E_USER_DATA ?? "", "logs");
  const files = fs.readdirSync(logs, { recursive: true, encoding: "utf-8" }).filter((f) => f.endsWith("Mini Agent.log"));
  return files.flatMap((f) => fs.readFileSync(path.join(logs, f), "utf-8").split("\n"));
}

/** The daemon's starts so far, from the Mini Agent output channel. */
function daemonStarts(): number {
  return channelLines().filter((line) => /\] starting /.test(line)).length;
}

/** The text of the editor whose active tab is titled `title` (Monaco draws spaces as no-break spaces). */
async function editorText(page: Page, title: string): Promise<string> {
  const group = page.locator(".editor-group-container", { has: page.locator(".tab.active", { hasText: title }) });
  const lines = await group.locator(".monaco-editor .view-line").allTextContents();
  return lines.join("\n").replace(/\u00a0/g, " ");
}

/** Change a model setting and wait until the idle daemon has restarted with it; returns the old value. */
async function changeModelSetting(key: string, value: unknown): Promise<unknown> {
  const before = daemonStarts();
  const old = setSetting(key, value);
  await until("the daemon to restart", async () => daemonStarts() > before);
  return old;
}

async function main(): Promise<void> {
  const expected = fs.readFileSync(path.join(workspace, "schema.py"), "utf-8").split("\n").filter((l) => l.trim()).length;
  const browser = await chromium.launch({
    executablePath: BROWSER,
    args: ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"],
  });
  const page = await browser.newPage({ viewport: { width: 1600, height: 1000 } });
  const failures: string[] = [];
  /** The sessions the journey has seen, oldest first: each new conversation must add one. */
  const sessions: string[] = [];
  /** A fresh session in the trace and one more row in the Sessions view than sessions seen before. */
  const checkNewSession = async (dom: TraceDom): Promise<void> => {
    assert.ok(dom.sessionId && !sessions.includes(dom.sessionId), `a new session, not one of ${sessions.join(", ")}: ${dom.sessionId}`);
    sessions.push(dom.sessionId);
    assert.equal((await sessionRows(page)).length, sessions.length, "one row per session in the Sessions view");
  };
  /** One part of the journey; a failure is reported with what the page showed, and the next part still runs. */
  const phase = async (name: string, run: () => Promise<void>): Promise<void> => {
    try {
      await run();
    } catch (error) {
      failures.push(name);
      console.error(`FAIL ${name}: ${error instanceof Error ? error.message : String(error)}`);
      console.error(`  notifications: ${JSON.stringify(await toasts(page).catch(() => []))}`);
      console.error(`  status bar: ${JSON.stringify(await agentStatus(page).catch(() => []))}`);
      for (const frame of page.frames()) {
        const text = await frame.locator("#trace").innerText({ timeout: 1000 }).catch(() => undefined);
        if (text !== undefined) console.error(`  trace view: ${JSON.stringify(text)}`);
      }
      await page.keyboard.press("Escape");
      await page.keyboard.press("Escape");
    }
  };
  try {
    await page.goto(url);
    await page.locator(".monaco-workbench").waitFor({ timeout: WAIT_MS });
    await until("the Mini Agent status bar item", async () => (await agentStatus(page)).length > 0);

    await phase("ask", async () => {
      await openFile(page, "tools.py");
      await command(page, "Mini Agent: Register tools in this file");
      const registered = page.locator(".part.statusbar .statusbar-item", { hasText: "registered" }).first();
      await registered.waitFor({ timeout: WAIT_MS });
      assert.match((await registered.textContent()) ?? "", /Mini Agent: registered (list_python_files, count_file_lines|count_file_lines, list_python_files)/);
      assert.deepEqual(await toasts(page), [], "registering says so in the status bar, not in a notification");

      assert.equal(await ask(page, "How many non-empty lines does schema.py have?"), "Mini Agent: Ask");
      const answered = await until("the answer in the trace", async () => {
        const dom = await readTrace(await traceFrame(page));
        return dom.answer !== null && dom.state === "done" ? dom : undefined;
      });
      assert.equal(answered.answer, `schema.py has ${expected} non-empty lines.`);
      assert.deepEqual(answered.steps, ["Step 1", "Step 2"]);
      assert.deepEqual(answered.rawFolded, [true, true], "the model's raw text starts folded");
      assert.ok(answered.answerScale >= 1.4, `the answer stands out: ${answered.answerScale}× the page's type`);
      assert.deepEqual(answered.badges, ["completed"]);
      assert.equal(answered.text.split(`schema.py has ${expected} non-empty lines.`).length - 1, 1, "the answer shows once");
      assert.deepEqual(await agentStatus(page), ["mini-agent: done"]);
      assert.deepEqual(await toasts(page), [], "the trace is visible: no answer notification over it");
      await checkNewSession(answered);
      console.log(`PASS ask: answer "${answered.answer}", steps ${answered.steps.join(", ")}, raw text folded, answer ${answered.answerScale}× the page's type`);
    });

    await phase("follow-up", async () => {
      const first = `schema.py has ${expected} non-empty lines.`;
      const question = "And how many did it have a minute ago?";
      const title = await ask(page, question);
      assert.equal(title, "Mini Agent: Ask — continuing “How many non-empty lines does schema.py…”");
      const followed = await until("the follow-up's answer", async () => {
        const dom = await readTrace(await traceFrame(page));
        return dom.state === "done" && dom.turns.length > 0 && dom.answer !== null ? dom : undefined;
      });
      assert.equal(followed.sessionId, sessions[0], "the follow-up went to the first session");
      // The scripted model quotes the last tool result it was sent: the first turn's count, so it saw the conversation.
      assert.equal(followed.answer, `You asked “${question}”; schema.py had ${expected} non-empty lines then.`);
      assert.deepEqual(followed.turns, [`Answer: ${first}`, `Follow-up: ${question}`], "the first answer, then the follow-up");
      assert.deepEqual(followed.steps, ["Step 1", "Step 2", "Step 3"]);
      const rows = await sessionRows(page);
      assert.equal(rows.length, 1, `no new session: ${JSON.stringify(rows)}`);
      console.log(`PASS follow-up: "${title}" → "${followed.answer}" in ${followed.sessionId}, steps ${followed.steps.join(", ")}; sessions view ${JSON.stringify(rows)}`);
    });

    await phase("pasted image", async () => {
      // VS Code's clipboard API holds text only: a screenshot is pasted into the trace view, whose script
      // reads it and posts it to the extension; the next Ask (here a follow-up) carries it to the daemon.
      await clearToasts(page);
      const frame = await traceFrame(page);
      const hint = (await frame.locator(".hint").textContent()) ?? "";
      assert.match(hint, /^Paste an image here \(Ctrl\+V, ⌘V on a Mac\) to attach it to the next Ask\.$/);
      await pasteInto(frame, [], "some text"); // a text paste is not an image: nothing happens
      await pasteInto(frame, [{ name: "shot.bmp", type: "image/bmp", base64: "Qk0=" }]);
      const refused = await until("the refused paste's error", async () => {
        const shown = await toasts(page);
        return shown.length > 0 ? shown : undefined;
      });
      assert.equal(refused.length, 1, `the text paste said nothing: ${JSON.stringify(refused)}`);
      assert.equal(refused[0].text, 'Mini Agent: the pasted image was not attached: its type "image/bmp" is not png, jpeg, gif or webp.');
      await clearToasts(page);

      await pasteInto(frame, [{ name: "shot.png", type: "image/png", base64: PNG_1X1 }], "shot.png");
      const taken = await until("the pasted image's notification", async () => {
        const shown = await toasts(page);
        return shown.length > 0 ? shown : undefined;
      });
      assert.deepEqual(taken.map((t) => t.text), ["Mini Agent: a pasted image goes with the next Ask (1 image(s))."]);

      const question = "What does the screenshot show?";
      assert.match(await ask(page, question), /^Mini Agent: Ask — continuing “How many non-empty lines/);
      const answered = await until("the answer to the follow-up with the image", async () => {
        const dom = await readTrace(await traceFrame(page));
        return dom.state === "done" && dom.turns.at(-1) === `Follow-up: ${question}` && dom.answer?.startsWith("I was told") ? dom : undefined;
      });
      assert.equal(answered.sessionId, sessions[0], "the follow-up went to the first session");
      // The scripted model quotes the user message it got: the daemon's note in place of the image (react sends text only).
      assert.match(answered.answer ?? "", /^I was told “What does the screenshot show\?\s+\[1 image attached to this message left out/);
      const left = answered.text.match(/The 1 image attached was not sent to the model: tool mode react[^\n]*/);
      assert.ok(left, `the daemon's status about the image in the trace: ${answered.text}`);
      assert.equal((await sessionRows(page)).length, 1, "no new session");
      await clearToasts(page);
      console.log(`PASS pasted image: ${JSON.stringify(refused[0].text)}; then ${JSON.stringify(taken[0].text)}; follow-up → "${left[0]}"`);
    });

    await phase("live output", async () => {
      await openFile(page, "slow.py");
      await command(page, "Mini Agent: Register tools in this file");
      await page.locator(".part.statusbar", { hasText: "registered slow_print" }).waitFor({ timeout: WAIT_MS });
      assert.equal(await ask(page, "Print some lines", "Mini Agent: New Conversation"), "Mini Agent: Ask");
      // slow_print holds after its third line until the file "go" exists: what shows before is live.
      const running = await until("the printed lines under the running call", async () => {
        const dom = await readTrace(await traceFrame(page));
        return dom.printing.some((text) => text.includes("line 3")) ? dom : undefined;
      });
      assert.deepEqual(running.badges, ["in progress"], "the call still runs");
      assert.deepEqual(running.printing, ["line 1\nline 2\nline 3\n"]);
      assert.equal(running.answer, null);
      fs.writeFileSync(path.join(workspace, "go"), "");
      const ended = await until("the answer after the printing call", async () => {
        const dom = await readTrace(await traceFrame(page));
        return dom.state === "done" && dom.answer !== null ? dom : undefined;
      });
      assert.equal(ended.answer, "the tool said printed 5 lines", "the model got the return value alone");
      assert.deepEqual(ended.printing, [], "nothing runs any more");
      assert.deepEqual(ended.printed, [
        { folded: true, summary: "Printed output · 5 lines", text: "line 1\nline 2\nline 3\nline 4\nline 5\n" },
      ], "the output folds once the call ended");
      await checkNewSession(ended);
      console.log(`PASS live output: ${JSON.stringify(running.printing[0])} while ${running.badges[0]}; then "${ended.printed[0].summary}" folded; answer "${ended.answer}"`);
    });

    await phase("slash command", async () => {
      await clearToasts(page);
      await command(page, "Mini Agent: Ask…");
      await quickInput(page).locator(".quick-input-title", { hasText: "Mini Agent: Ask" }).waitFor({ timeout: WAIT_MS });
      const input = quickInput(page).locator("input.input");
      await input.fill("/t");
      const offered = await until("the commands completing /t", async () => {
        const labels = await quickInput(page).locator(".monaco-list-row .label-name").allTextContents();
        return labels.length >= 2 ? labels.map((l) => l.trim()).sort() : undefined;
      });
      assert.deepEqual(offered, ["/tools", "/trust"]);
      await quickInput(page).locator(".monaco-list-row", { hasText: "/tools" }).first().click();
      await until("the box completed to /tools", async () => (await input.inputValue()) === "/tools");
      await page.keyboard.press("Enter");
      const answered = await until("the /tools answer", async () => {
        const shown = await toasts(page);
        return shown.find((toast) => toast.text.startsWith("Mini Agent /tools"));
      });
      assert.match(answered.text, /slow_print/, "the tools the model can call");
      assert.equal((await sessionRows(page)).length, sessions.length, "a command starts no session");
      await clearToasts(page);
      console.log(`PASS slash command: /t offers ${offered.join(", ")}; /tools → ${JSON.stringify(answered.text.slice(0, 80))}`);
    });

    await phase("approval", async () => {
      await openFile(page, "danger.py");
      await command(page, "Mini Agent: Register tools in this file");
      await page.locator(".part.statusbar", { hasText: "registered delete_file" }).waitFor({ timeout: WAIT_MS });
      assert.equal(await ask(page, "Delete notes.txt", "Mini Agent: New Conversation"), "Mini Agent: Ask");
      const review = page.locator(".notification-toast", { hasText: "Mini Agent wants to run delete_file" });
      await review.waitFor({ timeout: WAIT_MS });
      const waiting = await until("the trace waiting for approval", async () => {
        const dom = await readTrace(await traceFrame(page));
        return dom.state.includes("awaiting approval") ? dom : undefined;
      });
      const status = await agentStatus(page);
      assert.equal(waiting.state, "step 1 · awaiting approval");
      assert.deepEqual(status, ["mini-agent: step 1 · awaiting approval"], "one status item, the trace's step");
      assert.deepEqual(waiting.steps, ["Step 1"]);
      await review.locator(".monaco-button", { hasText: "Review…" }).click();
      await quickInput(page).locator(".quick-input-title", { hasText: "Allow Mini Agent to run “delete_file”?" }).waitFor({ timeout: WAIT_MS });
      const rows = await quickInput(page).locator(".monaco-list-row").evaluateAll((nodes) =>
      nodes.map((n) => `${n.classList.contains("focused") ? "*" : ""}${n.querySelector(".label-name")?.textContent ?? ""}`),
      );
      assert.deepEqual(rows, ["Allow once", "Always allow", "*Reject", "Always reject"], "reading order, Reject focused");
      // The call's arguments are beside the picker while the user decides, and go when the decision is made.
      const shown = await until("the call's arguments beside the picker", async () => {
        const text = await editorText(page, "delete_file arguments");
        return text.includes('"file_path": "notes.txt"') ? text : undefined;
      });
      await page.keyboard.press("Enter");
      await until("the arguments closed", async () => (await page.locator(".tab", { hasText: "delete_file arguments" }).count()) === 0);
      const rejected = await until("the rejected call", async () => {
      const dom = await readTrace(await traceFrame(page));
      return dom.state === "done" ? dom : undefined;
      });
      assert.deepEqual(rejected.badges, ["rejected"]);
      assert.ok(rejected.labels.some((l) => l.startsWith("Rejected")), rejected.labels.join(" | "));
      assert.ok(!/\bError\b|failed/.test(rejected.text), rejected.text);
      assert.ok(fs.existsSync(path.join(workspace, "notes.txt")), "the rejected call did not run");
      assert.match(rejected.answer ?? "", /^I did not delete notes\.txt/);
      assert.deepEqual(rejected.turns, [], "a new conversation: no earlier turn");
      await checkNewSession(rejected);
      console.log(`PASS approval: ${rows.join(", ")}; arguments ${JSON.stringify(shown)}; Enter → ${rejected.badges.join(", ")}; status "${status[0]}"`);
    });

    await phase("inert text", async () => {
      // The model asks to run a tool with a command link in its arguments, then answers with one and with
      // escape sequences (OSC 52, hidden text). A notification renders [label](command:…) as a link that runs
      // the command: the approval notice and the answer's must show the text as written, with no link.
      // A follow-up in the approval's conversation: the Sessions view keeps the rows it can show at once.
      await clearToasts(page);
      assert.match(await ask(page, "Delete the odd file"), /^Mini Agent: Ask — continuing “Delete notes\.txt”$/);
      const review = page.locator(".notification-toast", { hasText: "Mini Agent wants to run delete_file" });
      await review.waitFor({ timeout: WAIT_MS });
      // The trace hidden, the answer comes as a notification too.
      await command(page, "View: Close All Editors");
      const link = "[x](command:workbench.action.terminal.new)";
      const notice = await until("the approval notice", async () => (await toasts(page)).find((t) => t.text.includes("delete_file")));
      assert.equal(await review.locator(".notification-list-item-message a").count(), 0, `a link in the approval notice: ${notice.text}`);
      assert.ok(notice.text.replace(/\u200b/g, "").includes(link), notice.text);
      await review.locator(".monaco-button", { hasText: "Review…" }).click();
      await quickInput(page).locator(".quick-input-title", { hasText: "Allow Mini Agent to run “delete_file”?" }).waitFor({ timeout: WAIT_MS });
      await page.keyboard.press("Enter");
      const toast = page.locator(".notification-toast", { hasText: "hidden" });
      await toast.waitFor({ timeout: WAIT_MS });
      const answered = (await toasts(page)).find((t) => t.text.includes("hidden")) ?? assert.fail("no answer notification");
      assert.equal(await toast.locator(".notification-list-item-message a").count(), 0, `a link in the answer's notification: ${answered.text}`);
      assert.ok(!/[\u0000-\u0008\u000b-\u001f]/.test(answered.text), `a control character: ${JSON.stringify(answered.text)}`);
      assert.ok(answered.text.replace(/\u200b/g, "").includes(`Mini Agent: ${link} ␛]52;c;cHduZWQ=␇ ␛[8mhidden␛[0m done`), answered.text);
      assert.equal(await page.locator(".notification-list-item-message a").count(), 0, "no link in any notification");
      await toast.locator(".monaco-button", { hasText: "Show trace" }).click();
      const shown = await until("the answer in the trace", async () => {
        const dom = await readTrace(await traceFrame(page));
        return dom.answer?.includes("hidden") ? dom : undefined;
      });
      assert.equal(shown.answer, `${link} ␛]52;c;cHduZWQ=␇ ␛[8mhidden␛[0m done`);
      assert.ok(fs.existsSync(path.join(workspace, "notes.txt")), "the rejected call did not run");
      assert.equal(shown.sessionId, sessions.at(-1), "the same conversation");
      await clearToasts(page);
      console.log(`PASS inert text: approval ${JSON.stringify(notice.text)}; answer ${JSON.stringify(answered.text)}; no link in either`);
    });

    await phase("daemon log", async () => {
      // miniAgent.logLevel is "info": the daemon logs at INFO where its requests go, once per server and model.
      const said = await until("the daemon's INFO line in the output channel", async () => {
        const lines = channelLines().filter((line) => line.includes("model requests go to"));
        return lines.length > 0 ? lines : undefined;
      });
      assert.ok(said.every((line) => line.includes("[info] mini_agent.llm.client: model requests go to")), said.join("\n"));
      const misfiled = channelLines().filter((line) => /\[error\].* (INFO|WARNING|DEBUG) /.test(line));
      assert.deepEqual(misfiled, [], "no daemon record of a lower level shown as [error]");
      console.log(`PASS daemon log: ${JSON.stringify(said[0])}`);
    });

    await phase("model error", async () => {
      await clearToasts(page);
      const replayUrl = await changeModelSetting("miniAgent.baseUrl", "http://127.0.0.1:9/v1");
      assert.equal(await ask(page, "One more question", "Mini Agent: New Conversation"), "Mini Agent: Ask");
      const failedToast = await until("the model error notification", async () => {
        const shown = await toasts(page);
        return shown.length > 0 ? shown : undefined;
      });
      assert.equal(failedToast.length, 1, JSON.stringify(failedToast));
      assert.match(failedToast[0].text, /127\.0\.0\.1:9/, "the daemon's own message, naming the URL");
      assert.deepEqual(failedToast[0].buttons, ["Retry", "Open Settings"]);
      const failed = await until("the failed trace", async () => {
        const dom = await readTrace(await traceFrame(page));
        return dom.state === "model error" ? dom : undefined;
      });
      assert.ok(!failed.text.includes("ready"), failed.text);
      await checkNewSession(failed);
      // The user fixes the URL (the idle daemon restarts with it), then presses Retry on the same notification.
      await changeModelSetting("miniAgent.baseUrl", replayUrl);
      await page.locator(".notification-toast .monaco-button", { hasText: "Retry" }).click();
      const resumed = await until("the answer after Retry", async () => {
        const dom = await readTrace(await traceFrame(page));
        return dom.state === "done" ? dom : undefined;
      });
      assert.equal(resumed.answer, "back again");
      console.log(`PASS model error: "${failedToast[0].text}" [${failedToast[0].buttons.join(", ")}]; trace "${failed.state}"; Retry → "${resumed.answer}"`);
    });

    await phase("model picker", async () => {
      // The model server lists "replay-large"; the setting says "replay". The status bar shows the model.
      const item = await until("the model status item", async () => {
        const found = page.locator(".part.statusbar .statusbar-item", { hasText: /^\s*replay\s*$/ }).first();
        return (await found.count()) > 0 ? found : undefined;
      });
      await item.click();
      await quickInput(page).locator(".quick-input-title", { hasText: "Mini Agent: Model" }).waitFor({ timeout: WAIT_MS });
      const rows = await until("the model choices", async () => {
        const labels = await quickInput(page).locator(".monaco-list-row .label-name").allTextContents();
        return labels.length >= 3 ? labels.map((l) => l.trim()) : undefined;
      });
      assert.deepEqual(rows, ["replay", "replay-large", "Refresh list"], "the current model, the server's, then Refresh list");
      const placeholder = (await quickInput(page).locator("input.input").getAttribute("placeholder")) ?? "";
      assert.match(placeholder, /^The models http:\/\/127\.0\.0\.1:\d+\/v1 lists/);
      await quickInput(page).locator(".monaco-list-row", { hasText: "replay-large" }).first().click();
      await page.locator(".part.statusbar .statusbar-item", { hasText: "replay-large" }).first().waitFor({ timeout: WAIT_MS });
      assert.equal(await ask(page, "Which model answers?", "Mini Agent: New Conversation"), "Mini Agent: Ask");
      const answered = await until("the answer", async () => {
        const dom = await readTrace(await traceFrame(page));
        return dom.state === "done" && dom.answer === "the picked model answered" ? dom : undefined;
      });
      await checkNewSession(answered);
      // The daemon logs where each model request goes, with the model it names.
      const said = await until("a model request naming replay-large", async () => {
        const lines = channelLines().filter((line) => /model requests go to \S+ \(model replay-large,/.test(line));
        return lines.length > 0 ? lines : undefined;
      });
      console.log(`PASS model picker: ${JSON.stringify(rows)} under "${placeholder}"; ${JSON.stringify(said[0].trim())}`);
    });

    await phase("permission mode", async () => {
      await page.locator(".part.statusbar .statusbar-item", { hasText: "Ask when needed" }).first().click();
      await quickInput(page).locator(".quick-input-title", { hasText: "Mini Agent: Permission mode" }).waitFor({ timeout: WAIT_MS });
      const rows = await quickInput(page).locator(".monaco-list-row .label-name").allTextContents();
      assert.deepEqual(rows, ["Ask before every tool call", "Ask when a tool needs approval", "Never ask (I'm watching)"]);
      await quickInput(page).locator(".monaco-list-row", { hasText: "Ask before every tool call" }).first().click();
      await page.locator(".part.statusbar .statusbar-item", { hasText: "Ask always" }).first().waitFor({ timeout: WAIT_MS });
      // count_file_lines needs no approval of its own: in this mode it asks all the same.
      assert.equal(await ask(page, "Count schema.py again", "Mini Agent: New Conversation"), "Mini Agent: Ask");
      const review = page.locator(".notification-toast", { hasText: "Mini Agent wants to run count_file_lines" });
      await review.waitFor({ timeout: WAIT_MS });
      await review.locator(".monaco-button", { hasText: "Review…" }).click();
      await quickInput(page).locator(".quick-input-title", { hasText: "Allow Mini Agent to run “count_file_lines”?" }).waitFor({ timeout: WAIT_MS });
      await quickInput(page).locator(".monaco-list-row", { hasText: "Allow once" }).first().click();
      const counted = await until("the allowed call's answer", async () => {
        const dom = await readTrace(await traceFrame(page));
        return dom.state === "done" ? dom : undefined;
      });
      assert.equal(counted.answer, `schema.py has ${expected} non-empty lines.`);
      assert.deepEqual(counted.badges, ["completed"]);
      await checkNewSession(counted);
      console.log(`PASS permission mode: ${rows.join(", ")}; Ask before every tool call → count_file_lines asked, allowed → "${counted.answer}"`);
    });

    await phase("elicitation", async () => {
      // The workspace now names an MCP server that asks for a name; the restarted daemon starts it.
      fs.copyFileSync(process.env.E2E_ELICIT_CONFIG ?? assert.fail("E2E_ELICIT_CONFIG is not set"), path.join(workspace, "pyproject.toml"));
      await command(page, "Mini Agent: Restart daemon");
      await page.locator(".part.statusbar .statusbar-item", { hasText: "Ask always" }).first().click();
      await quickInput(page).locator(".monaco-list-row", { hasText: "Ask when a tool needs approval" }).first().click();
      await page.locator(".part.statusbar .statusbar-item", { hasText: "Ask when needed" }).first().waitFor({ timeout: WAIT_MS });
      assert.equal(await ask(page, "Greet me", "Mini Agent: New Conversation"), "Mini Agent: Ask");
      const title = quickInput(page).locator(".quick-input-title", { hasText: "greeter asks: What is your name?" });
      await title.waitFor({ timeout: WAIT_MS });
      await quickInput(page).locator(".quick-input-message", { hasText: "Name" }).waitFor({ timeout: WAIT_MS });
      await quickInput(page).locator("input.input").fill("Ada");
      await page.keyboard.press("Enter");
      const greeting = quickInput(page).locator(".quick-input-message", { hasText: "Greeting" });
      await greeting.waitFor({ timeout: WAIT_MS });
      const prefilled = await quickInput(page).locator("input.input").inputValue();
      assert.equal(prefilled, "hello", "the greeting's default is filled in");
      await page.keyboard.press("Enter");
      await quickInput(page).locator(".monaco-list-row", { hasText: "Send" }).first().click();
      const greeted = await until("the greeting in the trace", async () => {
        const dom = await readTrace(await traceFrame(page));
        return dom.state === "done" ? dom : undefined;
      });
      assert.equal(greeted.answer?.split("\n")[0], "hello Ada");
      // The restarted daemon's Sessions view is its own: only the session is checked to be a new one.
      assert.ok(greeted.sessionId && !sessions.includes(greeted.sessionId), `a new session: ${greeted.sessionId}`);
      const answers = fs.readFileSync(process.env.E2E_ANSWERS ?? assert.fail("E2E_ANSWERS is not set"), "utf-8");
      assert.deepEqual(answers.trim().split("\n"), ["hello Ada"], "what the MCP server got");
      console.log(`PASS elicitation: typed "Ada", kept "${prefilled}", Send → the server got ${JSON.stringify(answers.trim())}`);
    });

    await phase("oauth sign-in", async () => {
      // The workspace now names an MCP server behind OAuth. Its first call makes the daemon ask the client to
      // open the sign-in page (window/showDocument, external): the language client's own handler calls
      // env.openExternal, and code-server opens a new browser tab (after "Open" when it asks first). The
      // authorization server approves at once and redirects to the daemon's loopback listener.
      const signIn = (process.env.E2E_OAUTH_URL ?? assert.fail("E2E_OAUTH_URL is not set")).replace(/\/mcp$/, "/authorize?");
      fs.copyFileSync(process.env.E2E_OAUTH_CONFIG ?? assert.fail("E2E_OAUTH_CONFIG is not set"), path.join(workspace, "pyproject.toml"));
      await command(page, "Mini Agent: Restart daemon");
      const visited: string[] = [];
      const tabs: Page[] = [];
      page.context().on("request", (request) => {
        if (request.isNavigationRequest()) visited.push(request.url());
      });
      page.context().on("page", (tab) => tabs.push(tab));
      const before = (await readTrace(await traceFrame(page))).sessionId;
      assert.equal(await ask(page, "Who am I?", "Mini Agent: New Conversation"), "Mini Agent: Ask");
      const tab = await until("the sign-in page in a new tab", async () => {
        const open = page.locator(".monaco-dialog-box .monaco-button", { hasText: /^\s*Open\s*$/ });
        if ((await open.count()) > 0) await open.first().click();
        return tabs[0];
      });
      const shown = await until("the page after the sign-in", async () => {
        const text = await tab.locator("body").innerText({ timeout: 1000 });
        return text.includes("Signed in") ? text : undefined;
      }).catch((error: unknown) => {
        throw new Error(`${error instanceof Error ? error.message : String(error)}; the browser went to ${JSON.stringify(visited)}`);
      });
      assert.ok(visited.some((url) => url.startsWith(signIn)), `the authorization URL ${signIn}… opened: ${JSON.stringify(visited)}`);
      const signedIn = await until("the tool's answer in the trace", async () => {
        const dom = await readTrace(await traceFrame(page));
        return dom.state === "done" && dom.answer !== null && dom.sessionId !== before ? dom : undefined;
      });
      assert.match(signedIn.answer ?? "", /^signed in/);
      const stored = fs.readdirSync(path.join(process.env.E2E_STATE ?? assert.fail("E2E_STATE is not set"), "mcp-oauth"));
      assert.equal(stored.length, 1, `one token file in the user's state folder: ${JSON.stringify(stored)}`);
      await tab.close();
      console.log(`PASS oauth sign-in: a tab opened ${signIn}…, showed ${JSON.stringify(shown.trim())}; answer "${signedIn.answer?.split("\n")[0]}"`);
    });

    await phase("wrong path", async () => {
      await clearToasts(page);
      setSetting("miniAgent.command", "/nowhere/mini-agent");
      const wrong = await until("the start-up error", async () => {
        const shown = await toasts(page);
        return shown.length > 0 ? shown : undefined;
      });
      await new Promise((resolve) => setTimeout(resolve, 1500)); // a second notification would come right after
      const all = await toasts(page);
      assert.equal(all.length, 1, JSON.stringify(all));
      assert.match(wrong[0].text, /miniAgent\.command is set to “\/nowhere\/mini-agent”/);
      assert.ok(!/ENOENT|spawn/.test(wrong[0].text), wrong[0].text);
      assert.deepEqual(wrong[0].buttons, ["Open Settings", "Show log"]);
      console.log(`PASS wrong path: "${wrong[0].text}" [${wrong[0].buttons.join(", ")}]`);
    });
    if (failures.length > 0) process.exitCode = 1;
  } finally {
    await browser.close();
  }
}

void main();

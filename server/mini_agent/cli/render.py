"""How the command line shows a session: a live terminal view (rich) or one JSON object per line.

Both take the same `Event`s, so `ask`, `sessions resume` and `sessions show` differ only in where the
events come from. Everything the terminal view shows that came from elsewhere (the model, a tool, the
daemon, the store) goes through `terminal.safe` and reaches rich as `Text`, never as markup.
"""

from __future__ import annotations

import json
import re
import sys
from typing import Any, Protocol, TextIO

from mini_agent_client.client import MESSAGE, RESULT, STATUS, THOUGHT, TOOL_CALL, TOOL_CALL_UPDATE, Event
from rich.console import Console, Group
from rich.live import Live
from rich.markdown import Markdown
from rich.panel import Panel
from rich.spinner import Spinner
from rich.syntax import Syntax
from rich.table import Table
from rich.text import Text

from mini_agent.cli.terminal import safe, text

OBSERVATION_LINES = 12
NOT_REPORTED = "tokens: not reported by the server"
_ACTION = re.compile(r"^\s*(Action\s*:|Final Answer\s*:)", re.MULTILINE)
_THOUGHT_LABEL = re.compile(r"^\s*Thought\s*:\s*")


class View(Protocol):
    def show(self, event: Event) -> None: ...

    def note(self, kind: str, **fields: Any) -> None:
        """Something the client itself did (a permission decision), in the same stream as the events."""

    def close(self) -> None: ...


class JsonView:
    """NDJSON for scripts: every event as one line, flushed at once so a pipe sees it live."""

    def __init__(self, out: TextIO = sys.stdout) -> None:
        self._out = out

    def show(self, event: Event) -> None:
        self._write(event.to_json())

    def note(self, kind: str, **fields: Any) -> None:
        self._write({"kind": kind, **fields})

    def _write(self, obj: dict[str, Any]) -> None:
        self._out.write(json.dumps(obj, ensure_ascii=False) + "\n")
        self._out.flush()

    def close(self) -> None:
        self._out.flush()


class LiveView:
    """The terminal view: a spinner with the thought as it streams, then each call, result and the answer.

    Without a terminal (output piped) there is no spinner and the same lines are printed plainly.
    """

    def __init__(self, console: Console, *, spinner: bool = True) -> None:
        self.console = console
        self._thought = ""
        self._step = 0
        self._activity = "waiting for the model"
        self._live: Live | None = None
        if console.is_terminal and spinner:
            self._live = Live(self._spinner(), console=console, transient=True, refresh_per_second=12)
            self._live.start()

    def show(self, event: Event) -> None:
        self._step = event.step
        if event.kind == THOUGHT:
            self._thought += event.text
            self._activity = "thinking"
        elif event.kind == TOOL_CALL:
            self._flush_thought()
            args = safe(json.dumps(event.arguments, ensure_ascii=False))
            name = safe(event.tool_name or "?")
            self.console.print(Text.assemble(("→ ", "cyan"), (name, "bold cyan"), " ", args))
        elif event.kind == TOOL_CALL_UPDATE and event.observation is not None:
            self._observation(event.observation)
            self._activity = "waiting for the model"
        elif event.kind == TOOL_CALL_UPDATE:
            self._activity = "running the tool"
        elif event.kind == MESSAGE:
            self._flush_thought()
            # No hyperlinks: a link's target is shown beside its words, not hidden behind them.
            answer = Markdown(safe(event.text, lines=True), hyperlinks=False)
            self.console.print(Panel(answer, title="answer", border_style="green"))
        elif event.kind == STATUS and event.error and not event.stop_reason:
            # An error that ends the run is the command's to report, once (on stderr, with the exit code).
            self._flush_thought()
            self.console.print(text(f"step {event.step + 1}: {event.error}", "yellow", lines=True))
        elif event.kind == RESULT:
            self._flush_thought()
            self.close()
            self._summary(event.data)
        self._refresh()

    def note(self, kind: str, **fields: Any) -> None:
        if kind == "permission":
            self.console.print(text(f"  {fields.get('tool')}: {fields.get('decision')}", "magenta"))

    def pause(self) -> None:
        """Stop the spinner while the user is asked something."""
        if self._live is not None:
            self._live.stop()

    def resume(self) -> None:
        if self._live is not None:
            self._live.start()

    def close(self) -> None:
        if self._live is not None:
            self._live.stop()
            self._live = None

    def _flush_thought(self) -> None:
        thought = thought_of(self._thought)
        self._thought = ""
        self._refresh()
        if thought:
            self.console.print(text(thought, "italic dim", lines=True))

    def _observation(self, obs: dict[str, Any]) -> None:
        lines = safe(obs.get("output", ""), lines=True).splitlines() or [""]
        shown = "\n".join(lines[:OBSERVATION_LINES])
        if len(lines) > OBSERVATION_LINES:
            shown += f"\n… {len(lines) - OBSERVATION_LINES} more lines"
        style = "red" if obs.get("isError") else "green"
        label = "error" if obs.get("isError") else "result"
        self.console.print(Text.assemble((f"  {label} ", f"bold {style}"), (shown, style)))

    def _summary(self, result: dict[str, Any]) -> None:
        self.console.print(text(
            f"{result.get('status')} ({result.get('stopReason')}) · {result.get('steps')} steps · "
            f"{tokens_said(result.get('usage') or {})} · session {result.get('sessionId')}",
            "dim",
        ))

    def _spinner(self) -> Spinner:
        tail = "\n".join(safe(self._thought, lines=True).splitlines()[-6:]) or self._activity
        return Spinner("dots", text=Text.assemble((f"step {self._step + 1} ", "bold"), (tail, "italic dim")))

    def _refresh(self) -> None:
        if self._live is not None:
            self._live.update(self._spinner())


def tokens_said(usage: dict[str, Any]) -> str:
    """The token counts of a `usage`, or that the model server sent none (`reported` false: its zeros
    count nothing). A daemon that does not send `reported` is taken to have counted."""
    if usage.get("reported") is False:
        return NOT_REPORTED
    return (
        f"tokens {usage.get('promptTokens', 0)} in / {usage.get('completionTokens', 0)} out "
        f"({usage.get('cachedTokens', 0)} cached)"
    )


def thought_of(text: str) -> str:
    """The reasoning part of a streamed ReAct completion: before its Action / Final Answer line."""
    match = _ACTION.search(text)
    head = text[: match.start()] if match else text
    return _THOUGHT_LABEL.sub("", head.strip(), count=1).strip()


def permission_panel(params: dict[str, Any]) -> Panel:
    """The question before a tool call runs: the tool's description (its author's words) and the
    arguments the model chose, both escaped, and the keys to answer with."""
    call = params.get("toolCall") or {}
    arguments = safe(json.dumps(call.get("arguments"), indent=2, ensure_ascii=False), lines=True)
    body = Group(
        text((params.get("tool") or {}).get("description", ""), "dim", lines=True),
        Syntax(arguments, "json", word_wrap=True),
        Text("[o] allow once   [a] allow always   [r] reject   [n] always reject", style="bold"),
    )
    return Panel(body, title=text(f"approve tool call: {call.get('name')}"), border_style="magenta")


def sessions_table(sessions: list[dict[str, Any]]) -> Table:
    """One row per stored session; every cell is `Text` (a task is the user's words, never markup)."""
    table = Table("session", "status", "stop", "steps", "task", box=None, header_style="bold")
    for session in sessions:
        cells = (session["sessionId"], session["status"], session.get("stopReason") or "",
                 session.get("stepCount", ""), _one_line(session.get("task", ""), 60))
        table.add_row(*(text(cell) for cell in cells))
    return table


def replay_session(session: dict[str, Any]) -> list[Event]:
    """A stored session's steps as the events a live run would have streamed, for `sessions show`."""
    sid = session["sessionId"]
    events: list[Event] = []
    for step in session.get("steps", []):
        index = step.get("index", 0)
        events.append(Event(THOUGHT, sid, index, {"text": step.get("thought") or ""}))
        for call in step.get("toolCalls", []):
            events.append(Event(TOOL_CALL, sid, index, {"toolCallId": call["id"], **call}))
        for obs in step.get("observations", []):
            update = {"toolCallId": obs["toolCallId"], "observation": obs}
            events.append(Event(TOOL_CALL_UPDATE, sid, index, update))
        if step.get("finalAnswer") is not None:
            events.append(Event(MESSAGE, sid, index, {"text": step["finalAnswer"]}))
        if step.get("error"):
            events.append(Event(STATUS, sid, index, {"status": step.get("status"), "message": step["error"]}))
    summary = {**session, "steps": len(session.get("steps", []))}
    events.append(Event(RESULT, sid, summary["steps"], summary))
    return events


def _one_line(words: str, width: int) -> str:
    flat = safe(" ".join(words.split()))
    return flat if len(flat) <= width else flat[: width - 1] + "…"

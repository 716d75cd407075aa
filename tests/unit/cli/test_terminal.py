"""`terminal.safe`, the one function between what others wrote and the terminal, and the views built on
it: every character a terminal would act on is shown as an escape, and rich never reads data as markup."""

from __future__ import annotations

import io

import pytest
from mini_agent.cli.render import LiveView, permission_panel, replay_session, sessions_table
from mini_agent.cli.terminal import safe, say, text
from mini_agent_client.client import MESSAGE, RESULT, THOUGHT, TOOL_CALL, TOOL_CALL_UPDATE, Event
from rich.console import Console

ACTED_ON = [chr(code) for code in (*range(0x20), 0x7F, *range(0x80, 0xA0))] + [
    "\u061c", "\u200e", "\u200f", *map(chr, range(0x202A, 0x202F)), *map(chr, range(0x2066, 0x206A)),
    "\u2028", "\u2029", "\ud800", "\udfff",
]


def rendered(*items: object) -> str:
    """What a colour terminal 100 columns wide receives for `items`."""
    out = io.StringIO()
    console = Console(file=out, force_terminal=True, color_system="truecolor", width=100)
    for item in items:
        console.print(item)
    return out.getvalue()


@pytest.mark.parametrize("char", ACTED_ON, ids=lambda char: f"U+{ord(char):04X}")
def test_every_character_a_terminal_acts_on_is_shown_as_an_escape(char: str) -> None:
    shown = safe(f"a{char}b")
    assert shown.startswith("a\\") and shown.endswith("b") and len(shown) > 3
    assert all(" " <= c < "\x7f" for c in shown)


def test_escapes_read_like_python_below_u0080_and_like_json_above() -> None:
    assert safe("\x1b[8m\x07\x00") == r"\x1b[8m\x07\x00"
    assert safe("\x7f\x9b\u202e") == r"\u007f\u009b\u202e"
    assert safe("\n\r\t") == r"\n\r\t"


def test_newlines_and_tabs_stay_only_where_the_layout_has_lines() -> None:
    assert safe("one\ttwo\r\nthree\rfour\n", lines=True) == "one\ttwo\nthree\\rfour\n"
    assert safe("one\ttwo\nthree") == r"one\ttwo\nthree"


def test_printable_text_in_any_script_is_left_alone() -> None:
    words = "naïve café — 日本語 עברית 👍🏽 \\x1b [bold] `code` C:\\path"
    assert safe(words) == words and safe(words, lines=True) == words


def test_values_that_are_not_strings_are_shown_as_their_text() -> None:
    assert safe(None) == "None" and safe(12) == "12"


def test_text_is_never_read_as_markup() -> None:
    shown = rendered(text("[/bold] [red]x[/red] :smile:"))
    assert "[/bold] [red]x[/red] :smile:" in shown


def test_a_task_with_markup_and_escapes_is_listed_as_written() -> None:
    table = sessions_table([{"sessionId": "s1", "status": "finished", "stopReason": "end_turn",
                             "stepCount": 1, "task": "[/bold] go\n\x1b]0;owned\x07 now"}])
    shown = rendered(table)
    assert r"[/bold] go \x1b]0;owned\x07 now" in shown and "\x1b]0;" not in shown


def test_the_live_view_shows_a_sessions_data_escaped() -> None:
    out = io.StringIO()
    view = LiveView(Console(file=out, force_terminal=True, width=200), spinner=False)
    events = [
        Event(THOUGHT, "s1", 0, {"text": "Thought: hm \x1b]52;c;eA==\x07"}),
        Event(TOOL_CALL, "s1", 0, {"toolCallId": "c1", "name": "rd\x1b[8m", "arguments": {"p": "\u202e"}}),
        Event(TOOL_CALL_UPDATE, "s1", 0, {"toolCallId": "c1",
                                          "observation": {"output": "a\r\nb\x1b[2Kc", "isError": False}}),
        Event(MESSAGE, "s1", 1, {"text": "see [here](http://evil.example/) \x1b]8;;http://x/\x1b\\y"}),
        Event(RESULT, "s1", 1, {"status": "finished", "stopReason": "end_turn", "steps": 2,
                                "sessionId": "s1\x1b]0;t\x07"}),
    ]
    for event in events:
        view.show(event)
    shown = out.getvalue()
    for raw in ("\x1b]52", "\x1b[8m", "\u202e", "\x1b[2K", "\x1b]8;", "\x1b]0;"):
        assert raw not in shown
    for seen in (r"hm \x1b]52;c;eA==\x07", r"rd\x1b[8m", r"\u202e", r"b\x1b[2Kc", "http://evil.example/",
                 r"\x1b]8;;http://x/\x1b\y", r"s1\x1b]0;t\x07"):
        assert seen in shown, seen


def test_the_permission_panel_shows_the_description_title_and_arguments_escaped() -> None:
    params = {"toolCall": {"id": "c1", "name": "[bold]x\x1b]0;t\x07", "arguments": {"n": "\x9b\u2066"}},
              "tool": {"description": "Does [red]things\x1b[8m hidden"}}
    shown = rendered(permission_panel(params))
    assert r"[bold]x\x1b]0;t\x07" in shown and r"Does [red]things\x1b[8m hidden" in shown
    assert r"\u009b\u2066" in shown
    for raw in ("\x1b]0;", "\x1b[8m", "\x9b", "\u2066"):
        assert raw not in shown


def test_a_stored_session_replays_with_its_task_and_steps_escaped() -> None:
    session = {"sessionId": "s1", "task": "t", "status": "finished", "stopReason": "end_turn",
               "steps": [{"index": 0, "thought": "x\x1b[8m", "finalAnswer": "[/bold]\x07"}]}
    out = io.StringIO()
    view = LiveView(Console(file=out, force_terminal=True, width=100), spinner=False)
    for event in replay_session(session):
        view.show(event)
    shown = out.getvalue()
    assert r"x\x1b[8m" in shown and r"[/bold]\x07" in shown and "\x07" not in shown


def test_a_note_said_on_stderr_is_escaped_and_cannot_pass_for_a_line_of_ours(
        capsys: pytest.CaptureFixture[str]) -> None:
    say("mini-agent: held back: tools file \x1b[8mx.py\r\nmini-agent: all is well\x07")
    assert capsys.readouterr().err.splitlines() == [
        r"mini-agent: held back: tools file \x1b[8mx.py", r"  mini-agent: all is well\x07"]

"""The stepper and replay learn what they need of a reply's tool mode from the formats they are handed
(the model adapter's `llm.formats.reply_format`), by value, never by the mode's name."""

from __future__ import annotations

import pytest
from mini_agent.core.contracts import TOOL_MODES, TokenUsage, plain_replies
from mini_agent.core.events import ThoughtChunk
from mini_agent.core.session import StepRecord
from mini_agent.core.trajectory import step_events
from mini_agent.llm.formats import reply_format


@pytest.mark.parametrize("mode", ["", "auto", "something new"])
def test_a_mode_not_recorded_or_not_known_reads_as_react(mode: str) -> None:
    assert reply_format(mode) == reply_format("react")


def test_every_mode_a_reply_can_come_in_says_how_the_model_finishes() -> None:
    finishes = {mode: reply_format(mode).finish for mode in TOOL_MODES if mode != "auto"}
    assert len(set(finishes.values())) == len(finishes)  # each in its own words


SHOWN = [
    ("json", "the thought"),
    ("react", "the completion"),
    ("native", "the completion"),
    ("", "the completion"),
]


@pytest.mark.parametrize(("mode", "shown"), SHOWN)
def test_replay_streams_what_the_reply_s_format_streamed_live(mode: str, shown: str) -> None:
    record = StepRecord(0, thought="the thought", completion="the completion", tool_mode=mode)
    chunks = [e for e in step_events("s", record, TokenUsage(), reply_format) if isinstance(e, ThoughtChunk)]
    assert [chunk.text for chunk in chunks] == [shown]


def test_a_runtime_given_no_formats_takes_every_reply_for_prose() -> None:
    record = StepRecord(0, thought="the thought", completion="the completion", tool_mode="json")
    chunks = [e for e in step_events("s", record, TokenUsage()) if isinstance(e, ThoughtChunk)]
    assert [chunk.text for chunk in chunks] == ["the completion"]
    assert plain_replies("json") == reply_format("react")

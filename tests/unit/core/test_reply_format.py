"""The stepper and replay learn what they need of a reply's tool mode from `reply_format`, by value."""

from __future__ import annotations

import pytest
from mini_agent.core.contracts import TOOL_MODES, TokenUsage, reply_format
from mini_agent.core.events import ThoughtChunk
from mini_agent.core.session import StepRecord
from mini_agent.core.trajectory import step_events


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
    chunks = [e for e in step_events("s", record, TokenUsage()) if isinstance(e, ThoughtChunk)]
    assert [chunk.text for chunk in chunks] == [shown]

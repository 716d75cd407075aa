"""A model id holding a control or bidi character is not a name: `llm.models.unsafe` says why, and
`model_ids` leaves it out of the list the pickers see."""

from __future__ import annotations

import pytest
from mini_agent.llm.models import model_ids, unsafe


@pytest.mark.parametrize(
    "name",
    ["a\x1b[8mb", "a\x00", "a\nb", "a\rb", "a\tb", "a\x7f", "a\x85", "a\x9b", "a\u202eb", "a\u202ab",
     "a\u2066b", "a\u2069b", "a\u200eb", "a\u200fb", "a\u061cb"],
)
def test_a_name_with_a_control_or_bidi_character_is_unsafe(name: str) -> None:
    why = unsafe(name)
    assert why is not None and "U+" in why and "position 1" in why


@pytest.mark.parametrize("name", ["qwen2.5-coder:7b", "meta-llama/Llama-3.1-8B", "模型-中文", "ünïcødé"])
def test_ordinary_names_are_safe(name: str) -> None:
    assert unsafe(name) is None


def test_unsafe_ids_are_left_out_of_the_list() -> None:
    data = {"data": [{"id": "good"}, {"id": "bad\x1b]0;title\x07"}, {"id": "rtl\u202e"}, {"id": "also-good"}]}
    assert model_ids(data) == ("good", "also-good")

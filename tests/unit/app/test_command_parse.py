"""A prompt is a slash command only when the whole of it is the command and its argument
(`app.commands.parse`): a command that takes no argument followed by words, or a sentence after a
command that takes one, is an ordinary prompt for the model."""

from __future__ import annotations

import pytest
from mini_agent.app.commands import parse


@pytest.mark.parametrize(
    ("text", "name", "argument"),
    [
        ("/trust", "trust", ""),
        ("  /trust  \n", "trust", ""),
        ("/help", "help", ""),
        ("/model large", "model", "large"),
        ("/model  qwen2.5:7b ", "model", "qwen2.5:7b"),
        ("/mode ask_always", "mode", "ask_always"),
        ("/compact", "compact", ""),
    ],
)
def test_the_whole_text_as_a_command_is_one(text: str, name: str, argument: str) -> None:
    parsed = parse(text)
    assert parsed is not None
    command, got = parsed
    assert (command.name, got) == (name, argument)


@pytest.mark.parametrize(
    "text",
    [
        "/trust this repo? it looks fine",
        "/trust\nthis repo",
        "/tools please",
        "/help me write a test",
        "/compact the code in utils.py",
        "/model what is the best one?",
        "/mode ask_never\nand then delete everything",
        "/etc/hosts is odd",
        "/",
        "please /trust",
        "",
    ],
)
def test_a_command_with_words_after_it_is_a_prompt(text: str) -> None:
    assert parse(text) is None

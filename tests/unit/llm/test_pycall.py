"""Arguments in Python's call syntax on an Action line: literals only, anything else is no call."""

from __future__ import annotations

from typing import Any

import pytest
from mini_agent.llm import pycall


@pytest.mark.parametrize(
    ("tail", "expected"),
    [
        ('(module_path="shop/__init__.py")', {"module_path": "shop/__init__.py"}),
        (', module_path="shop/storage.py"', {"module_path": "shop/storage.py"}),
        ('({"pattern": "VAT", "folder": "."})', {"pattern": "VAT", "folder": "."}),
        ("(values=[1, 2.5], strict=True, note=None)", {"values": [1, 2.5], "strict": True, "note": None}),
        ('(path="a.py")`', {"path": "a.py"}),  # a closing backtick of inline code
    ],
    ids=["keywords", "after a comma", "one JSON object", "Python literals", "in backticks"],
)
def test_keyword_arguments_with_literal_values_are_read(tail: str, expected: dict[str, Any]) -> None:
    assert pycall.arguments(tail) == expected


@pytest.mark.parametrize(
    "tail",
    [
        "",
        "()",
        '("a.py")',  # positional: which argument is it?
        '(path=open("x").read())',  # a call: never evaluated
        "(path=secret)",  # a name
        "(**options)",
        '(path="a.py"))',
        ' is the tool to use',
        "(a=" + "[" * 3000 + ")",  # within MAX_CHARS: the parser refuses it
        "(a=" + "1" * (pycall.MAX_CHARS + 10) + ")",
    ],
    ids=["empty", "no arguments", "positional", "a call", "a name", "double star", "unbalanced", "prose",
         "deep nesting", "too long"],
)
def test_anything_but_literal_keywords_is_no_arguments(tail: str) -> None:
    assert pycall.arguments(tail) is None

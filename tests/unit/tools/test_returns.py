"""Return annotations → output schemas and structured values, by the MCP SDK server's convention:
object-like returns are the structured value, others are wrapped under `result`, and no annotation
(or `Any`) means text only. A value that breaks its annotation is refused, naming where."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, TypedDict

import pytest
from mini_agent.tools.reflect import reflect
from mini_agent.tools.returns import StructureError, output_of
from pydantic import BaseModel


class Point(TypedDict):
    x: int
    y: int


@dataclass
class Size:
    width: int
    height: int = 1


class Person(BaseModel):
    name: str


def _schema(fn: Any) -> dict[str, Any] | None:
    tool = reflect(fn)
    return None if tool.output is None else tool.output.schema


def test_a_plain_value_is_wrapped_under_result() -> None:
    def halve(n: int) -> int:
        return n // 2

    def names() -> list[str]:
        return ["a"]

    assert _schema(halve) == {
        "type": "object", "title": "halveOutput",
        "properties": {"result": {"type": "integer"}}, "required": ["result"],
    }  # fmt: skip
    assert reflect(halve).structured(21) == {"result": 21}
    assert reflect(names).structured(["a", "b"]) == {"result": ["a", "b"]}


@pytest.mark.parametrize(
    ("annotation", "value", "structured"),
    [
        (Point, {"x": 1, "y": 2}, {"x": 1, "y": 2}),
        (Size, Size(3), {"width": 3, "height": 1}),
        (Person, Person(name="ada"), {"name": "ada"}),
        (dict[str, int], {"a": 1}, {"a": 1}),
    ],
)
def test_an_object_like_value_is_its_own_structure(annotation: Any, value: Any, structured: Any) -> None:
    output = output_of("f", {"return": annotation})
    assert output is not None and not output.wrapped
    assert output.schema["type"] == "object"
    assert output.structured(value) == structured


def test_no_annotation_or_any_means_text_only() -> None:
    def bare(n: int):  # type: ignore[no-untyped-def]
        return n

    assert _schema(bare) is None and reflect(bare).structured(3) is None
    assert output_of("f", {"return": Any}) is None


def test_a_value_that_breaks_its_annotation_is_refused() -> None:
    output = output_of("f", {"return": Point})
    assert output is not None
    with pytest.raises(StructureError, match=r"does not match its return annotation \(y: Field required\)"):
        output.structured({"x": 1})

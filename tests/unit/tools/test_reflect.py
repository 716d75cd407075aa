"""Reflection: workspace function → JSON Schema, lax validation, result text.

Each workspace is a real file in tmp_path, loaded by the tool host's own loader; reflection is
exercised in this process (it is the host's code, not the daemon's). The registry tests run the
same path through a real host subprocess.
"""

from __future__ import annotations

import json
import textwrap
import types
from enum import Enum
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft202012Validator
from mini_agent.tools.host_main import Workspace
from mini_agent.tools.reflect import (
    ArgumentsError,
    ReflectedTool,
    ResultError,
    public_functions,
    reflect,
    render_result,
)
from mini_agent.tools.signature import ReflectionError
from pydantic import BaseModel


def load(tmp_path: Path, source: str, stem: str = "workspace_tools") -> types.ModuleType:
    path = tmp_path / f"{stem}.py"
    path.write_text(textwrap.dedent(source), encoding="utf-8")
    return Workspace().load(str(path))


def tool_of(tmp_path: Path, source: str, function: str = "f") -> ReflectedTool:
    return reflect(getattr(load(tmp_path, source), function))


def no_refs(node: Any) -> bool:
    if isinstance(node, dict):
        return "$ref" not in node and "$defs" not in node and all(no_refs(v) for v in node.values())
    if isinstance(node, list):
        return all(no_refs(v) for v in node)
    return True


def schema_of(tmp_path: Path, source: str, function: str = "f") -> dict[str, Any]:
    schema = tool_of(tmp_path, source, function).input_schema
    Draft202012Validator.check_schema(schema)
    assert no_refs(schema)
    return schema


def obj(properties: dict[str, Any], required: list[str], additional: Any = False) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": properties,
        "required": required,
        "additionalProperties": additional,
    }


def refused(tool: ReflectedTool, arguments: Any) -> str:
    with pytest.raises(ArgumentsError) as caught:
        tool.bind(arguments)
    message = str(caught.value)
    assert "pydantic.dev" not in message and "https://" not in message
    return message


# --- schemas, one type at a time --------------------------------------------------------------

COUNT_FILE_LINES = '''
def count_file_lines(file_path: str, ignore_empty: bool = True) -> int:
    """Count lines."""
    return 0
'''


def test_scalars_defaults_and_required(tmp_path: Path) -> None:
    schema = schema_of(tmp_path, COUNT_FILE_LINES, "count_file_lines")
    assert schema == obj(
        {"file_path": {"type": "string"}, "ignore_empty": {"type": "boolean", "default": True}}, ["file_path"]
    )


def test_int_float_and_no_parameters(tmp_path: Path) -> None:
    source = "def f(n: int, x: float = 0.5): ...\ndef g(): ...\n"
    assert schema_of(tmp_path, source) == obj(
        {"n": {"type": "integer"}, "x": {"type": "number", "default": 0.5}}, ["n"]
    )
    assert schema_of(tmp_path, source, "g") == obj({}, [])


def test_optional_and_union(tmp_path: Path) -> None:
    source = """
        from typing import Optional, Union
        def f(a: Optional[int] = None, b: Union[int, str] = 1, c: str | None = None): ...
    """
    assert schema_of(tmp_path, source)["properties"] == {
        "a": {"anyOf": [{"type": "integer"}, {"type": "null"}], "default": None},
        "b": {"anyOf": [{"type": "integer"}, {"type": "string"}], "default": 1},
        "c": {"anyOf": [{"type": "string"}, {"type": "null"}], "default": None},
    }


def test_literal(tmp_path: Path) -> None:
    source = """
        from typing import Literal
        def f(mode: Literal["fast", "slow"] = "fast", n: Literal[1, 2] = 1): ...
    """
    assert schema_of(tmp_path, source)["properties"] == {
        "mode": {"enum": ["fast", "slow"], "type": "string", "default": "fast"},
        "n": {"enum": [1, 2], "type": "integer", "default": 1},
    }


def test_enum_is_inlined(tmp_path: Path) -> None:
    source = """
        from enum import Enum
        class Color(Enum):
            RED = "red"
            GREEN = "green"
        def f(color: Color, other: Color = Color.GREEN): ...
    """
    assert schema_of(tmp_path, source)["properties"] == {
        "color": {"enum": ["red", "green"], "title": "Color", "type": "string"},
        "other": {"enum": ["red", "green"], "title": "Color", "type": "string", "default": "green"},
    }


def test_containers(tmp_path: Path) -> None:
    source = """
        def f(a: list[str], b: dict[str, list[int]], c: tuple[int, str], d: tuple[float, ...],
              e: set[int]): ...
    """
    assert schema_of(tmp_path, source)["properties"] == {
        "a": {"type": "array", "items": {"type": "string"}},
        "b": {"type": "object", "additionalProperties": {"type": "array", "items": {"type": "integer"}}},
        "c": {
            "type": "array",
            "maxItems": 2,
            "minItems": 2,
            "prefixItems": [{"type": "integer"}, {"type": "string"}],
        },
        "d": {"type": "array", "items": {"type": "number"}},
        "e": {"type": "array", "items": {"type": "integer"}, "uniqueItems": True},
    }


NESTED_DATACLASSES = '''
from dataclasses import dataclass, field

@dataclass
class Point:
    """A position on the grid."""
    x: int
    y: int = 0

@dataclass
class Segment:
    """Two points."""
    start: Point
    end: Point
    labels: list[str] = field(default_factory=list)

def f(segment: Segment): ...
'''


def test_nested_dataclasses_are_inlined(tmp_path: Path) -> None:
    point = {
        "type": "object",
        "title": "Point",
        "description": "A position on the grid.",
        "properties": {"x": {"type": "integer"}, "y": {"type": "integer", "default": 0}},
        "required": ["x"],
        "additionalProperties": False,
    }
    assert schema_of(tmp_path, NESTED_DATACLASSES)["properties"]["segment"] == {
        "type": "object",
        "title": "Segment",
        "description": "Two points.",
        "properties": {
            "start": point,
            "end": point,
            "labels": {"type": "array", "items": {"type": "string"}},
        },
        "required": ["start", "end"],
        "additionalProperties": False,
    }


TYPED_DICT = """
import typing

class Range(typing.TypedDict):
    low: int
    high: int

class Query(typing.TypedDict, total=False):
    text: typing.Required[str]
    range: Range
    limit: int

def f(query: Query, extra: list[Range] | None = None): ...
"""


def test_typing_typeddict_is_converted(tmp_path: Path) -> None:
    range_ = {
        "type": "object",
        "title": "Range",
        "properties": {"low": {"type": "integer"}, "high": {"type": "integer"}},
        "required": ["low", "high"],
        "additionalProperties": False,
    }
    properties = schema_of(tmp_path, TYPED_DICT)["properties"]
    assert properties["query"] == {
        "type": "object",
        "title": "Query",
        "properties": {"text": {"type": "string"}, "range": range_, "limit": {"type": "integer"}},
        "required": ["text"],
        "additionalProperties": False,
    }
    assert properties["extra"] == {
        "anyOf": [{"type": "array", "items": range_}, {"type": "null"}],
        "default": None,
    }


def test_typeddict_under_postponed_annotations(tmp_path: Path) -> None:
    source = "from __future__ import annotations\n" + TYPED_DICT
    assert schema_of(tmp_path, source)["properties"]["query"]["required"] == ["text"]


def test_pydantic_model(tmp_path: Path) -> None:
    source = '''
        from pydantic import BaseModel, Field
        class Options(BaseModel):
            """Search options."""
            depth: int = Field(2, description="How deep to go.")
            follow: bool = False
        def f(options: Options): ...
    '''
    assert schema_of(tmp_path, source)["properties"]["options"] == {
        "type": "object",
        "title": "Options",
        "description": "Search options.",
        "properties": {
            "depth": {"type": "integer", "default": 2, "description": "How deep to go."},
            "follow": {"type": "boolean", "default": False},
        },
    }


def test_annotated_field_and_text(tmp_path: Path) -> None:
    source = '''
        from typing import Annotated
        from pydantic import Field
        def f(n: Annotated[int, Field(description="How many.", ge=1)] = 1,
              name: Annotated[str, "Who to greet."] = "you",
              k: int = Field(3, description="Neighbours.")):
            """Greet.

            Args:
                n: Docstring loses to Field.
            """
    '''
    assert schema_of(tmp_path, source)["properties"] == {
        "n": {"type": "integer", "default": 1, "minimum": 1, "description": "How many."},
        "name": {"type": "string", "default": "you", "description": "Who to greet."},
        "k": {"type": "integer", "default": 3, "description": "Neighbours."},
    }


def test_keyword_only_positional_only_and_variadics(tmp_path: Path) -> None:
    source = "def f(a: int, /, b: str, *parts: int, c: bool = False, **labels: str): ...\n"
    assert schema_of(tmp_path, source) == obj(
        {
            "a": {"type": "integer"},
            "b": {"type": "string"},
            "parts": {"type": "array", "items": {"type": "integer"}},
            "c": {"type": "boolean", "default": False},
        },
        ["a", "b"],
        additional={"type": "string"},
    )


def test_untyped_kwargs_allow_anything(tmp_path: Path) -> None:
    assert schema_of(tmp_path, "def f(**rest): ...\n") == obj({}, [], additional=True)


def test_postponed_annotations_and_forward_references(tmp_path: Path) -> None:
    source = """
        from __future__ import annotations
        from dataclasses import dataclass
        def f(node: Node, count: int = 1) -> Node: ...
        @dataclass
        class Node:
            name: str
    """
    node = {
        "type": "object",
        "title": "Node",
        "properties": {"name": {"type": "string"}},
        "required": ["name"],
        "additionalProperties": False,
    }
    assert schema_of(tmp_path, source) == obj(
        {"node": node, "count": {"type": "integer", "default": 1}}, ["node"]
    )


def test_names_shadowing_basemodel_attributes(tmp_path: Path) -> None:
    source = """
        def f(schema: str, json: int, copy: bool = False, model_config: dict | None = None,
              fields: str = ""): ...
    """
    schema = schema_of(tmp_path, source)
    assert list(schema["properties"]) == ["schema", "json", "copy", "model_config", "fields"]
    assert schema["required"] == ["schema", "json"]


def test_unannotated_parameter_is_anything(tmp_path: Path) -> None:
    assert schema_of(tmp_path, "def f(value, other=3): ...\n") == obj(
        {"value": {}, "other": {"default": 3}}, ["value"]
    )


def test_recursive_type_has_no_ref(tmp_path: Path) -> None:
    source = """
        from __future__ import annotations
        from dataclasses import dataclass, field
        @dataclass
        class Tree:
            name: str
            children: list[Tree] = field(default_factory=list)
        def f(tree: Tree): ...
    """
    children = schema_of(tmp_path, source)["properties"]["tree"]["properties"]["children"]
    assert children["items"]["type"] == "object"


def test_type_without_schema_names_the_parameter(tmp_path: Path) -> None:
    source = "import threading\ndef f(ok: int, lock: threading.Lock): ...\n"
    with pytest.raises(ReflectionError, match="parameter 'lock'"):
        tool_of(tmp_path, source)


def test_unresolvable_annotation_is_reported(tmp_path: Path) -> None:
    with pytest.raises(ReflectionError, match="Missing"):
        tool_of(tmp_path, "def f(x: 'Missing'): ...\n")


# --- docstrings --------------------------------------------------------------------------------

DOCSTRINGS = {
    "google": '''
        def f(path: str, *parts: str, **labels: str):
            """Join a path.

            Longer explanation.

            Args:
                path: The base path.
                *parts: Pieces to append.
                **labels: Tags to attach.

            Returns:
                The joined path.
            """
    ''',
    "google_no_blank_line": '''
        def f(path: str, *parts: str, **labels: str):
            """Join a path.

            Longer explanation.
            Args:
                path: The base path.
                *parts: Pieces to append.
                **labels: Tags to attach.
            """
    ''',
    "numpy": '''
        def f(path: str, *parts: str, **labels: str):
            """Join a path.

            Longer explanation.

            Parameters
            ----------
            path : str
                The base path.
            *parts : str
                Pieces to append.
            **labels : str
                Tags to attach.
            """
    ''',
    "sphinx": '''
        def f(path: str, *parts: str, **labels: str):
            """Join a path.

            Longer explanation.

            :param path: The base path.
            :param parts: Pieces to append.
            :param labels: Tags to attach.
            :returns: The joined path.
            """
    ''',
}


@pytest.mark.parametrize("style", sorted(DOCSTRINGS))
def test_docstring_descriptions(tmp_path: Path, style: str) -> None:
    tool = tool_of(tmp_path, DOCSTRINGS[style])
    assert tool.description == "Join a path.\n\nLonger explanation."
    assert tool.input_schema == obj(
        {
            "path": {"type": "string", "description": "The base path."},
            "parts": {"type": "array", "items": {"type": "string"}, "description": "Pieces to append."},
        },
        ["path"],
        additional={"type": "string", "description": "Tags to attach."},
    )


def test_no_docstring_gives_empty_description(tmp_path: Path) -> None:
    assert tool_of(tmp_path, "def f(x: int): return x\n").description == ""


# --- which functions, and the decorator --------------------------------------------------------


def test_public_functions_are_defined_here_and_not_private(tmp_path: Path) -> None:
    source = """
        from os.path import join
        import json
        def a(): ...
        def _b(): ...
        async def c(): ...
        class D: ...
    """
    assert list(public_functions(load(tmp_path, source))) == ["a", "c"]


def test_dunder_all_is_honoured(tmp_path: Path) -> None:
    source = "from os.path import join\n__all__ = ['b', 'join']\ndef a(): ...\ndef b(): ...\n"
    assert list(public_functions(load(tmp_path, source))) == ["b", "join"]


def test_decorator_options(tmp_path: Path) -> None:
    source = '''
        from mini_agent import tool
        @tool
        def plain(x: int) -> int:
            """Plain."""
            return x
        @tool(name="renamed", description="Custom.", requires_approval=True, idempotent=True, timeout_sec=5)
        def configured() -> None:
            """Ignored summary."""
    '''
    module = load(tmp_path, source)
    plain = reflect(module.plain)
    assert (plain.name, plain.description, plain.options.requires_approval) == ("plain", "Plain.", False)
    configured = reflect(module.configured).describe("t.py").wire()
    assert configured["name"] == "renamed" and configured["description"] == "Custom."
    assert (configured["requiresApproval"], configured["idempotent"], configured["timeoutSec"]) == (
        True,
        True,
        5,
    )
    assert configured["source"] == {"path": "t.py", "function": "configured", "line": 7}
    assert reflect(module.configured, name="over", description="Over.").name == "over"


# --- validation and coercion -------------------------------------------------------------------

COERCE = """
from dataclasses import dataclass
from enum import Enum
from typing import Literal

class Color(Enum):
    RED = "red"
    GREEN = "green"

@dataclass
class Point:
    x: int
    y: int = 0

def f(n: int = 0, flag: bool = False, pair: tuple[int, int] = (0, 0), color: Color = Color.RED,
      point: Point | None = None, mode: Literal["a", "b"] = "a", items: list[int] = [],
      text: str | None = None, ratio: float = 1.0):
    return dict(n=n, flag=flag, pair=pair, color=color, point=point, mode=mode, items=items, text=text,
                ratio=ratio)
"""


@pytest.mark.parametrize(
    ("arguments", "name", "expected"),
    [
        ({"n": "20"}, "n", 20),
        ({"n": 20.0}, "n", 20),
        ({"flag": "true"}, "flag", True),
        ({"flag": "false"}, "flag", False),
        ({"pair": [1, "2"]}, "pair", (1, 2)),
        ({"ratio": "2.5"}, "ratio", 2.5),
        ({"ratio": 3}, "ratio", 3.0),
        ({"text": "null"}, "text", "null"),
        ({"text": '{"a": 1}'}, "text", '{"a": 1}'),
        ({"text": None}, "text", None),
    ],
)
def test_lax_coercion(tmp_path: Path, arguments: dict[str, Any], name: str, expected: Any) -> None:
    value = tool_of(tmp_path, COERCE).invoke(arguments)[name]
    assert value == expected and type(value) is type(expected)


def test_values_arrive_as_their_annotated_types(tmp_path: Path) -> None:
    module = load(tmp_path, COERCE)
    result = reflect(module.f).invoke({"color": "green", "point": {"x": "3"}, "pair": [1, 2]})
    assert result["color"] is module.Color.GREEN
    assert result["point"] == module.Point(3, 0) and isinstance(result["point"], module.Point)
    assert result["pair"] == (1, 2)


@pytest.mark.parametrize(
    ("arguments", "expected"),
    [
        ({"n": 2.5}, "- n: Input should be a valid integer, got a number with a fractional part (got 2.5)"),
        ({"n": "abc"}, "- n: Input should be a valid integer"),
        ({"text": 5}, "- text: Input should be a valid string (got 5)"),
        ({"items": "[1, 2]"}, '- items: Input should be a valid list (got "[1, 2]")'),
        ({"mode": "c"}, "- mode: Input should be 'a' or 'b' (got \"c\")"),
        ({"color": "blue"}, "- color: Input should be 'red' or 'green' (got \"blue\")"),
        ({"point": {"y": 1}}, "- point.x: missing required field"),
        ({"point": {"x": 1, "z": 2}}, "- point.z: unknown field"),
        ({"items": [1, "x"]}, "- items[1]: Input should be a valid integer"),
    ],
)
def test_refusals_name_parameter_and_expectation(
    tmp_path: Path, arguments: dict[str, Any], expected: str
) -> None:
    message = refused(tool_of(tmp_path, COERCE), arguments)
    assert expected in message
    assert len(message.splitlines()) == 1


def test_union_problem_is_one_line(tmp_path: Path) -> None:
    source = "def f(value: int | list[int]): ...\n"
    message = refused(tool_of(tmp_path, source), {"value": "x"})
    assert message.count("\n") == 0 and message.startswith("- value: ")
    assert "valid integer" in message and "valid list" in message


def test_unknown_and_missing_arguments(tmp_path: Path) -> None:
    tool = tool_of(tmp_path, COUNT_FILE_LINES, "count_file_lines")
    message = refused(tool, {"path": "schema.py", "ignore_empty": True})
    lines = message.splitlines()
    assert lines[0] == "- unknown argument 'path' (valid arguments: file_path, ignore_empty)"
    assert lines[1] == "- missing required argument 'file_path'"
    assert lines[2].startswith("Expected schema: {") and '"required": ["file_path"]' in lines[2]


def test_several_problems_one_line_each(tmp_path: Path) -> None:
    source = "def f(a: int, b: int, c: bool = False): ...\n"
    message = refused(tool_of(tmp_path, source), {"c": "maybe", "x": 1, "y": 2})
    assert message.splitlines()[:3] == [
        "- unknown arguments 'x', 'y' (valid arguments: a, b, c)",
        "- missing required arguments 'a', 'b'",
        '- c: Input should be a valid boolean, unable to interpret input (got "maybe")',
    ]


def test_arguments_must_be_an_object(tmp_path: Path) -> None:
    assert refused(tool_of(tmp_path, COUNT_FILE_LINES, "count_file_lines"), [1]) == (
        "- arguments must be a JSON object, got an array"
    )


def test_kwargs_accept_extra_names_and_validate_them(tmp_path: Path) -> None:
    tool = tool_of(tmp_path, "def f(a: int = 0, **labels: int):\n    return labels\n")
    assert tool.invoke({"a": 1, "x": "2", "y": 3}) == {"x": 2, "y": 3}
    assert "- x: Input should be a valid integer" in refused(tool, {"x": "no"})


def test_positional_only_and_variadics_are_passed_positionally(tmp_path: Path) -> None:
    source = "def f(a, /, b, *parts, c=0, **rest):\n    return [a, b, list(parts), c, rest]\n"
    tool = tool_of(tmp_path, source)
    assert tool.invoke({"a": 1, "b": 2, "parts": [3, 4], "c": 5, "d": 6}) == [1, 2, [3, 4], 5, {"d": 6}]
    assert tool.invoke({"b": 2, "a": 1}) == [1, 2, [], 0, {}]


def test_shadowing_names_reach_the_function(tmp_path: Path) -> None:
    source = """
        def f(schema: str, json: int, model_config: int = 0):
            return [schema, json, model_config]
    """
    assert tool_of(tmp_path, source).invoke({"schema": "s", "json": "2", "model_config": 3}) == ["s", 2, 3]


def test_async_function_is_awaited(tmp_path: Path) -> None:
    source = "import asyncio\nasync def f(n: int):\n    await asyncio.sleep(0)\n    return n * 2\n"
    assert tool_of(tmp_path, source).invoke({"n": "21"}) == 42


# --- results -----------------------------------------------------------------------------------


class Shade(Enum):
    DARK = "dark"


@pytest.mark.parametrize(
    ("value", "text"),
    [
        ("plain text", "plain text"),
        (3, "3"),
        (None, "null"),
        ({"名前": [1, 2.5, True]}, '{"名前":[1,2.5,true]}'),
        ((1, "a"), '[1,"a"]'),
        (Shade.DARK, '"dark"'),
        (Path("a/b"), '"a/b"'),
    ],
)
def test_render_result(value: Any, text: str) -> None:
    assert render_result(value) == text


def test_render_dataclass_and_model(tmp_path: Path) -> None:
    module = load(tmp_path, NESTED_DATACLASSES)
    segment = module.Segment(module.Point(1), module.Point(2, 3))
    assert render_result(segment) == '{"start":{"x":1,"y":0},"end":{"x":2,"y":3},"labels":[]}'


def test_unserialisable_result_is_refused_not_repr() -> None:
    with pytest.raises(ResultError, match="object value, which has no JSON form"):
        render_result(object())


class Node(BaseModel):
    label: str
    children: list[Node]


def test_a_named_type_is_declared_once_in_defs_and_inlined_for_the_model() -> None:
    def tree(root: Node, depth: int = 1) -> int:
        """Walk a tree."""
        return depth

    tool = reflect(tree)
    assert "$defs" not in json.dumps(tool.input_schema) and "$ref" not in json.dumps(tool.input_schema)
    declared = tool.declared_schema
    assert declared is not None
    assert declared["properties"]["root"] == {"$ref": "#/$defs/Node"}
    assert declared["$defs"]["Node"]["properties"]["children"]["items"] == {"$ref": "#/$defs/Node"}
    assert declared["additionalProperties"] is False and declared["required"] == ["root"]
    Draft202012Validator.check_schema(declared)
    good = {"root": {"label": "a", "children": [{"label": "b", "children": []}]}}
    assert Draft202012Validator(declared).is_valid(good)
    assert not Draft202012Validator(declared).is_valid({"root": {"label": "a", "children": [{"label": 1}]}})


def test_a_signature_without_named_types_declares_nothing_more() -> None:
    def add(a: int, b: int) -> int:
        """Add."""
        return a + b

    assert reflect(add).declared_schema is None

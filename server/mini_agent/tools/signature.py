"""A function's signature → a pydantic model and the JSON Schema it advertises.

Runs inside the tool host only, with `reflect.py`, which turns the model into a callable tool (argument
binding, error text, results). Here: one pydantic field per parameter (its description from `Field`,
`Annotated` or the docstring), the model, its schema with every `$ref` inlined, and the rewrite of
`typing.TypedDict` that pydantic refuses before Python 3.12.
"""

from __future__ import annotations

import inspect
import re
import sys
import types
import typing
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import Annotated, Any, Literal, Union, get_args, get_origin

import docstring_parser
import typing_extensions
from pydantic import BaseModel, ConfigDict, Field, PydanticUserError, TypeAdapter, create_model
from pydantic.errors import PydanticSchemaGenerationError
from pydantic.fields import FieldInfo
from pydantic.json_schema import GenerateJsonSchema, PydanticJsonSchemaWarning

JsonSchema = dict[str, Any]
_Kind = inspect._ParameterKind


class ReflectionError(Exception):
    """A function cannot be offered as a tool; the message says which parameter and why."""


class _NoFieldTitles(GenerateJsonSchema):
    """Property titles only repeat the property name; type titles (class names) are kept."""

    def field_title_should_be_set(self, schema: Any) -> bool:
        return False


@dataclass(frozen=True, slots=True)
class Param:
    name: str
    field: str
    kind: _Kind



class ModelBuilder:
    """Collects one pydantic field per parameter, then builds the model and its inlined schema."""

    def __init__(self, label: str, hints: dict[str, Any], doc: Docstring) -> None:
        self.label = label
        self.hints = hints
        self.doc = doc
        self.fields: dict[str, Any] = {}
        self.params: list[Param] = []
        self.union_fields: set[str] = set()
        self.extras_type: Any = None
        self.declared: JsonSchema | None = None  # with `$defs` kept, when the inlined schema has any
        self.extras_adapter: TypeAdapter[dict[str, Any]] | None = None
        self.extras_description: str | None = None

    def add(self, index: int, param: inspect.Parameter) -> None:
        annotation = _portable(self.hints.get(param.name, Any))
        text = self.doc.params.get(param.name)
        if param.kind is inspect.Parameter.VAR_KEYWORD:
            self.extras_type = annotation
            self.extras_description = text
            return
        field = f"p{index}"  # internal name: parameter names may shadow BaseModel attributes
        self.params.append(Param(param.name, field, param.kind))
        if _is_union(annotation):
            self.union_fields.add(param.name)
        if param.kind is inspect.Parameter.VAR_POSITIONAL:
            listed = types.GenericAlias(list, (annotation,))
            self.fields[field] = (listed, Field(default_factory=list, alias=param.name, description=text))
            return
        self.fields[field] = _field(annotation, param, text)

    def build(self) -> tuple[type[BaseModel], JsonSchema]:
        config = ConfigDict(extra="forbid", protected_namespaces=())
        try:
            model = create_model(f"{self.label}_arguments", __config__=config, **self.fields)
            raw = model.model_json_schema(by_alias=True, schema_generator=_NoFieldTitles)
            defs = raw.get("$defs")
            schema = _json_schema(dict(raw))  # it pops `$defs` off the top level only
            extras_schema: Any = False
            if self.extras_type is not None:
                extras_schema = self._extras_schema()
        except (PydanticSchemaGenerationError, PydanticUserError, TypeError, NameError) as exc:
            raise ReflectionError(self._blame(exc)) from exc
        root: JsonSchema = {
            "type": "object",
            "properties": schema.get("properties", {}),
            "required": schema.get("required", []),
            "additionalProperties": extras_schema,
        }
        if defs:  # the schema as declared: its named types once, in `$defs`, and referred to
            self.declared = {**root, "properties": raw.get("properties", {}), "$defs": defs}
        return model, root

    def _extras_schema(self) -> Any:
        mapping: Any = types.GenericAlias(dict, (str, self.extras_type))
        self.extras_adapter = TypeAdapter(mapping)
        item = TypeAdapter(self.extras_type).json_schema(schema_generator=_NoFieldTitles)
        schema = _json_schema(item)
        if self.extras_description:
            schema = {**schema, "description": self.extras_description}
        return schema or True

    def _blame(self, exc: Exception) -> str:
        """Name the parameter whose type pydantic could not handle."""
        for name, annotation in self.hints.items():
            if name == "return":
                continue
            try:
                TypeAdapter(_portable(annotation)).json_schema()
            except Exception as inner:
                return (
                    f"cannot use {self.label}: parameter '{name}' has type {_type_name(annotation)}, "
                    f"which has no JSON Schema ({_first_line_of(inner)})"
                )
        return f"cannot use {self.label}: {_first_line_of(exc)}"


def _field(annotation: Any, param: inspect.Parameter, text: str | None) -> tuple[Any, FieldInfo]:
    """The (type, FieldInfo) pair for one parameter; explicit Field descriptions win over docstrings."""
    default = param.default
    metadata = list(annotation.__metadata__) if get_origin(annotation) is Annotated else []
    if isinstance(default, FieldInfo):
        metadata.append(default)
        annotation = Annotated[annotation, default]
        default = inspect.Parameter.empty
    texts = [m for m in metadata if isinstance(m, str)]
    described = any(isinstance(m, FieldInfo) and m.description for m in metadata)
    description = None if described else (texts[0] if texts else text)
    extra: dict[str, Any] = {} if description is None else {"description": description}
    if default is not inspect.Parameter.empty:
        extra["default"] = default
    return annotation, Field(alias=param.name, **extra)


def _json_schema(schema: JsonSchema) -> JsonSchema:
    """Inline every `$ref` (several clients and models cannot follow them)."""
    defs: dict[str, Any] = schema.pop("$defs", {})

    def expand(node: Any, seen: frozenset[str]) -> Any:
        if isinstance(node, list):
            return [expand(item, seen) for item in node]
        if not isinstance(node, dict):
            return node
        ref = node.get("$ref")
        rest = {k: expand(v, seen) for k, v in node.items() if k != "$ref"}
        if not isinstance(ref, str) or not ref.startswith("#/$defs/"):
            return rest
        key = ref.removeprefix("#/$defs/")
        if key in seen:  # a recursive type: cut the cycle rather than keep a $ref
            target = {"type": defs[key].get("type", "object"), "description": f"(recursive {key})"}
        else:
            target = expand(defs[key], seen | {key})
        return {**target, **rest}

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PydanticJsonSchemaWarning)
        result: JsonSchema = expand(schema, frozenset())
    return result


def type_hints(fn: Callable[..., Any], label: str) -> dict[str, Any]:
    try:
        return typing.get_type_hints(fn, include_extras=True)
    except Exception as exc:
        raise ReflectionError(f"cannot resolve the type hints of {label}: {_first_line_of(exc)}") from exc


def _portable(tp: Any, memo: dict[Any, Any] | None = None) -> Any:
    """Rewrite `typing.TypedDict` (refused by pydantic before Python 3.12), wherever it is nested."""
    if sys.version_info >= (3, 12):
        return tp
    memo = {} if memo is None else memo
    if _is_typing_typeddict(tp):
        return _convert_typeddict(tp, memo)
    origin, args = get_origin(tp), get_args(tp)
    if not args or origin in (Literal, Callable) or origin is None:
        return tp
    if origin is Annotated:
        inner = _portable(tp.__origin__, memo)
        return tp if inner is tp.__origin__ else Annotated[(inner, *tp.__metadata__)]
    converted = tuple(_portable(a, memo) for a in args)
    if all(a is b for a, b in zip(args, converted, strict=True)):
        return tp
    if origin in (Union, types.UnionType):
        return Union[converted]  # noqa: UP007  (built from a tuple at run time)
    try:
        return origin[converted]
    except TypeError:
        return tp


def _is_typing_typeddict(tp: Any) -> bool:
    return isinstance(tp, type) and typing.is_typeddict(tp) and type(tp).__module__ == "typing"


def _convert_typeddict(td: Any, memo: dict[Any, Any]) -> Any:
    if td in memo:
        return memo[td]
    memo[td] = td  # a recursive TypedDict stays as is (pydantic then says what to change)
    fields: dict[str, Any] = {}
    for key, hint in typing.get_type_hints(td, include_extras=True).items():
        # Read Required/NotRequired from the hint: with postponed annotations Python 3.11's
        # __required_keys__ misses them.
        required = key in td.__required_keys__
        if get_origin(hint) in (typing.Required, typing.NotRequired):
            required = get_origin(hint) is typing.Required
            hint = get_args(hint)[0]
        marker = typing_extensions.Required if required else typing_extensions.NotRequired
        fields[key] = marker[_portable(hint, memo)]
    converted = typing_extensions.TypedDict(td.__name__, fields)  # type: ignore[misc]
    converted.__doc__ = td.__doc__
    converted.__module__ = td.__module__
    memo[td] = converted
    return converted


def _is_union(tp: Any) -> bool:
    if get_origin(tp) is Annotated:
        tp = tp.__origin__
    if get_origin(tp) not in (Union, types.UnionType):
        return False
    return sum(a is not type(None) for a in get_args(tp)) > 1


def _type_name(tp: Any) -> str:
    return tp.__qualname__ if isinstance(tp, type) else str(tp).replace("typing.", "")


def _first_line_of(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0] if text else type(exc).__name__


class Docstring:
    """The summary and per-parameter descriptions of a Google, NumPy or Sphinx docstring."""

    _SECTION = re.compile(r"^(\s*)(Args|Arguments|Parameters|Params|Returns?|Raises|Yields|Examples?):\s*$")

    def __init__(self, summary: str, params: dict[str, str]) -> None:
        self.summary = summary
        self.params = params

    @classmethod
    def parse(cls, text: str | None) -> Docstring:
        if not text:
            return cls("", {})
        try:
            parsed = docstring_parser.parse(cls._separate_sections(text))
        except docstring_parser.ParseError:
            return cls(text.strip(), {})
        summary = "\n\n".join(p for p in (parsed.short_description, parsed.long_description) if p)
        params = {p.arg_name.lstrip("*"): p.description for p in parsed.params if p.description}
        return cls(summary.strip(), params)

    @classmethod
    def _separate_sections(cls, text: str) -> str:
        """Put a blank line above a Google section header that sits right under the summary."""
        lines = text.splitlines()
        out: list[str] = []
        for line in lines:
            if cls._SECTION.match(line) and out and out[-1].strip():
                out.append("")
            out.append(line)
        return "\n".join(out)


# What `returns.py` builds output schemas with, so both schemas are made the same way.
NoFieldTitles = _NoFieldTitles
inline_refs = _json_schema
portable = _portable

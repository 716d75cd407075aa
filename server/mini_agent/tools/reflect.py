"""Workspace function → tool: schema, argument validation and result text.

This module runs inside the tool host only (it imports user code's types). One pydantic model is
built per function from its signature; the same model produces the advertised JSON Schema and
validates the model's arguments in lax mode, so the schema and the checks cannot drift apart.
"""

from __future__ import annotations

import asyncio
import inspect
import json
import re
import sys
import types
import typing
import warnings
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Annotated, Any, Literal, Union, get_args, get_origin

import docstring_parser
import typing_extensions
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PydanticUserError,
    TypeAdapter,
    ValidationError,
    create_model,
)
from pydantic.errors import PydanticSchemaGenerationError
from pydantic.fields import FieldInfo
from pydantic.json_schema import GenerateJsonSchema, PydanticJsonSchemaWarning
from pydantic_core import PydanticSerializationError, to_json

from mini_agent.contracts import ToolOptions, ToolSource
from mini_agent.tools.decorators import OPTIONS_ATTRIBUTE
from mini_agent.tools.protocol import DescribedTool

JsonSchema = dict[str, Any]
_Kind = inspect._ParameterKind
_POSITIONAL = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
_MAX_SHOWN_INPUT = 80


class ReflectionError(Exception):
    """A function cannot be offered as a tool; the message says which parameter and why."""


class ArgumentsError(Exception):
    """The arguments do not fit the signature; the message lists each problem on its own line."""


class ResultError(Exception):
    """The function returned something that has no JSON form."""


class _NoFieldTitles(GenerateJsonSchema):
    """Property titles only repeat the property name; type titles (class names) are kept."""

    def field_title_should_be_set(self, schema: Any) -> bool:
        return False


@dataclass(frozen=True, slots=True)
class _Param:
    name: str
    field: str
    kind: _Kind


@dataclass(frozen=True, slots=True)
class ReflectedTool:
    """A function made callable with JSON arguments, and its description for the model."""

    name: str
    description: str
    input_schema: JsonSchema
    function: Callable[..., Any]
    function_name: str
    line: int
    options: ToolOptions
    _model: type[BaseModel]
    _params: tuple[_Param, ...]
    _extras: TypeAdapter[dict[str, Any]] | None
    _union_fields: frozenset[str]

    def describe(self, path: str) -> DescribedTool:
        """What the tool host tells the daemon of this tool."""
        run = ToolOptions(
            requires_approval=self.options.requires_approval,
            idempotent=self.options.idempotent,
            timeout_sec=self.options.timeout_sec,
        )
        source = ToolSource(path, self.function_name, self.line)
        return DescribedTool(self.name, self.description, self.input_schema, source, run)

    def bind(self, arguments: object) -> tuple[list[Any], dict[str, Any]]:
        """Validate and coerce `arguments`; return what to pass positionally and by name."""
        if not isinstance(arguments, Mapping):
            raise ArgumentsError(f"- arguments must be a JSON object, got {_json_type(arguments)}")
        known = {k: v for k, v in arguments.items() if k in self.input_schema["properties"]}
        extra = {k: v for k, v in arguments.items() if k not in known}
        problems: list[str] = []
        if extra and self._extras is None:
            valid = ", ".join(self.input_schema["properties"]) or "none"
            problems.append(
                f"- unknown {_plural('argument', extra)} {_names(extra)} (valid arguments: {valid})"
            )
        model: BaseModel | None = None
        try:
            model = self._model.model_validate(known)
        except ValidationError as exc:
            problems.extend(self._explain(exc))
        extras = self._validate_extras(extra, problems)
        if problems or model is None:
            raise ArgumentsError("\n".join(problems))
        return self._arrange(model, extras)

    def invoke(self, arguments: object) -> Any:
        args, kwargs = self.bind(arguments)
        result = self.function(*args, **kwargs)
        if inspect.isawaitable(result):
            result = asyncio.run(_awaited(result))
        return result

    def _validate_extras(self, extra: dict[str, Any], problems: list[str]) -> dict[str, Any]:
        if not extra or self._extras is None:
            return {}
        try:
            return self._extras.validate_python(extra)
        except ValidationError as exc:
            problems.extend(self._explain(exc))
            return {}

    def _explain(self, exc: ValidationError) -> list[str]:
        missing: list[str] = []
        by_param: dict[str, list[str]] = {}
        for error in exc.errors(include_url=False):
            loc = error["loc"]
            if error["type"] == "missing" and len(loc) == 1:
                missing.append(str(loc[0]))
                continue
            if loc and loc[0] in self._union_fields and len(loc) > 1:
                loc = (loc[0], *loc[2:])  # drop the union member's tag
            by_param.setdefault(_loc_text(loc), []).append(_problem(error))
        lines = [f"- {where}: {'; or '.join(dict.fromkeys(msgs))}" for where, msgs in by_param.items()]
        if missing:
            schema = json.dumps(self.input_schema, ensure_ascii=False)
            lines.insert(0, f"- missing required {_plural('argument', missing)} {_names(missing)}")
            lines.append(f"Expected schema: {schema}")
        return lines

    def _arrange(self, model: BaseModel, extras: dict[str, Any]) -> tuple[list[Any], dict[str, Any]]:
        values = model.__dict__
        positional: list[Any] = []
        named: dict[str, Any] = {}
        for param in self._params:
            value = values[param.field]
            if param.kind in _POSITIONAL:
                positional.append(value)
            elif param.kind is inspect.Parameter.VAR_POSITIONAL:
                positional.extend(value)
            else:
                named[param.name] = value
        named.update(extras)
        return positional, named


def reflect(
    fn: Callable[..., Any], *, name: str | None = None, description: str | None = None
) -> ReflectedTool:
    """Build the tool for `fn`; `name`/`description` override the decorator and the docstring."""
    options: ToolOptions = getattr(fn, OPTIONS_ATTRIBUTE, None) or ToolOptions()
    label = getattr(fn, "__name__", repr(fn))
    doc = _Docstring.parse(inspect.getdoc(fn))
    hints = _type_hints(fn, label)
    try:
        signature = inspect.signature(fn)
    except (TypeError, ValueError) as exc:
        raise ReflectionError(f"cannot read the signature of {label}: {exc}") from exc
    builder = _ModelBuilder(label, hints, doc)
    for index, param in enumerate(signature.parameters.values()):
        builder.add(index, param)
    model, schema = builder.build()
    return ReflectedTool(
        name=name or options.name or label,
        description=description or options.description or doc.summary,
        input_schema=schema,
        function=fn,
        function_name=label,
        line=_first_line(fn),
        options=options,
        _model=model,
        _params=tuple(builder.params),
        _extras=builder.extras_adapter,
        _union_fields=frozenset(builder.union_fields),
    )


def public_functions(module: types.ModuleType) -> dict[str, Callable[..., Any]]:
    """The functions a module offers: its `__all__`, else the public ones it defines itself."""
    exported = getattr(module, "__all__", None)
    if exported is not None:
        found = {n: getattr(module, n, None) for n in exported}
        return {n: f for n, f in found.items() if inspect.isfunction(f)}
    return {
        n: f
        for n, f in vars(module).items()
        if not n.startswith("_") and inspect.isfunction(f) and f.__module__ == module.__name__
    }


def render_result(value: Any) -> str:
    """Text for the model: a string as is, anything else as compact JSON (never `repr`)."""
    if isinstance(value, str):
        return value
    try:
        return to_json(value).decode()
    except (PydanticSerializationError, TypeError, ValueError) as exc:
        raise ResultError(f"returned a {type(value).__name__} value, which has no JSON form") from exc


class _ModelBuilder:
    """Collects one pydantic field per parameter, then builds the model and its inlined schema."""

    def __init__(self, label: str, hints: dict[str, Any], doc: _Docstring) -> None:
        self.label = label
        self.hints = hints
        self.doc = doc
        self.fields: dict[str, Any] = {}
        self.params: list[_Param] = []
        self.union_fields: set[str] = set()
        self.extras_type: Any = None
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
        self.params.append(_Param(param.name, field, param.kind))
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
            schema = _json_schema(model.model_json_schema(by_alias=True, schema_generator=_NoFieldTitles))
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


def _type_hints(fn: Callable[..., Any], label: str) -> dict[str, Any]:
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


def _first_line(fn: Callable[..., Any]) -> int:
    code = getattr(inspect.unwrap(fn), "__code__", None)
    return int(code.co_firstlineno) if code is not None else 0


def _type_name(tp: Any) -> str:
    return tp.__qualname__ if isinstance(tp, type) else str(tp).replace("typing.", "")


def _first_line_of(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0] if text else type(exc).__name__


class _Docstring:
    """The summary and per-parameter descriptions of a Google, NumPy or Sphinx docstring."""

    _SECTION = re.compile(r"^(\s*)(Args|Arguments|Parameters|Params|Returns?|Raises|Yields|Examples?):\s*$")

    def __init__(self, summary: str, params: dict[str, str]) -> None:
        self.summary = summary
        self.params = params

    @classmethod
    def parse(cls, text: str | None) -> _Docstring:
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


def _problem(error: Any) -> str:
    if error["type"] == "missing":
        return "missing required field"
    if error["type"] in ("extra_forbidden", "unexpected_keyword_argument"):
        return "unknown field"
    shown = _show(error["input"])
    return f"{error['msg']} (got {shown})"


def _loc_text(loc: tuple[int | str, ...]) -> str:
    text = ""
    for part in loc:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text or "arguments"


def _show(value: Any) -> str:
    try:
        text = json.dumps(value, ensure_ascii=False, default=lambda v: f"<{type(v).__name__}>")
    except (TypeError, ValueError):
        text = f"<{type(value).__name__}>"
    return text if len(text) <= _MAX_SHOWN_INPUT else text[: _MAX_SHOWN_INPUT - 1] + "…"


def _json_type(value: object) -> str:
    names = {dict: "an object", list: "an array", str: "a string", bool: "a boolean", type(None): "null"}
    return names.get(type(value), "a number" if isinstance(value, int | float) else type(value).__name__)


def _plural(word: str, items: Mapping[str, Any] | list[str]) -> str:
    return word if len(items) == 1 else word + "s"


def _names(items: Mapping[str, Any] | list[str]) -> str:
    return ", ".join(f"'{n}'" for n in items)


async def _awaited(awaitable: Any) -> Any:
    return await awaitable

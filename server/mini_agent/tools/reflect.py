"""Workspace function → tool: schema, argument validation and result text.

This module runs inside the tool host only (it imports user code's types). One pydantic model is
built per function from its signature; the same model produces the advertised JSON Schema and
validates the model's arguments in lax mode, so the schema and the checks cannot drift apart.
Here: the tool (binding arguments, the error text the model reads, invoking, the result's text) and
which functions a module offers; `signature.py` builds the model and the schema.
"""

from __future__ import annotations

import asyncio
import inspect
import json
import types
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, TypeAdapter, ValidationError
from pydantic_core import PydanticSerializationError, to_json

from mini_agent.core.contracts import ToolOptions, ToolSource
from mini_agent.tools.decorators import OPTIONS_ATTRIBUTE
from mini_agent.tools.protocol import DescribedTool
from mini_agent.tools.returns import Output, StructureError, output_of
from mini_agent.tools.signature import (
    Docstring,
    JsonSchema,
    ModelBuilder,
    Param,
    ReflectionError,
    type_hints,
)

_POSITIONAL = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
_MAX_SHOWN_INPUT = 80


class ArgumentsError(Exception):
    """The arguments do not fit the signature; the message lists each problem on its own line."""


class ResultError(Exception):
    """The function returned something that has no JSON form, or not the form its annotation says."""


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
    _params: tuple[Param, ...]
    _extras: TypeAdapter[dict[str, Any]] | None
    _union_fields: frozenset[str]
    output: Output | None = None
    declared_schema: JsonSchema | None = None  # `input_schema` with its named types kept in `$defs`

    def describe(self, path: str) -> DescribedTool:
        """What the tool host tells the daemon of this tool."""
        run = ToolOptions(
            requires_approval=self.options.requires_approval,
            idempotent=self.options.idempotent,
            timeout_sec=self.options.timeout_sec,
            read_only=self.options.read_only,
            destructive=self.options.destructive,
            open_world=self.options.open_world,
        )
        source = ToolSource(path, self.function_name, self.line)
        schema = None if self.output is None else self.output.schema
        return DescribedTool(
            self.name, self.description, self.input_schema, source, run, schema, self.declared_schema
        )

    def structured(self, value: Any) -> dict[str, Any] | None:
        """The structured content of a returned `value`: None without an output schema."""
        if self.output is None:
            return None
        try:
            return self.output.structured(value)
        except StructureError as exc:
            raise ResultError(str(exc)) from None

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
    doc = Docstring.parse(inspect.getdoc(fn))
    hints = type_hints(fn, label)
    try:
        signature = inspect.signature(fn)
    except (TypeError, ValueError) as exc:
        raise ReflectionError(f"cannot read the signature of {label}: {exc}") from exc
    builder = ModelBuilder(label, hints, doc)
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
        output=output_of(label, hints),
        declared_schema=builder.declared,
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


def _first_line(fn: Callable[..., Any]) -> int:
    code = getattr(inspect.unwrap(fn), "__code__", None)
    return int(code.co_firstlineno) if code is not None else 0


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

"""A function's return annotation → the output schema it advertises and the structured value it returns.

Runs inside the tool host only, next to `signature.py`. The convention is the MCP SDK's own server's:
an object-like return (a pydantic model, a TypedDict, a dataclass, `dict[str, X]`) is the structured
value itself and its schema is the type's; any other annotated return is wrapped as `{"result": value}`
under a schema with that one property; no annotation, `Any`, or a type pydantic cannot describe: no
output schema, the result is text only.
"""

from __future__ import annotations

import dataclasses
import inspect
import logging
from dataclasses import dataclass
from typing import Any, get_args, get_origin, is_typeddict

import typing_extensions
from pydantic import BaseModel, PydanticUserError, TypeAdapter, ValidationError, create_model
from pydantic.errors import PydanticSchemaGenerationError

from mini_agent.tools.signature import JsonSchema, NoFieldTitles, inline_refs, portable

log = logging.getLogger(__name__)

WRAPPER_KEY = "result"  # the property a non-object return is wrapped under (the SDK's choice)


class StructureError(Exception):
    """A returned value does not match its function's return annotation."""


@dataclass(frozen=True, slots=True)
class Output:
    """How one function's return value becomes structured content."""

    schema: JsonSchema
    wrapped: bool
    _adapter: TypeAdapter[Any]

    def structured(self, value: Any) -> dict[str, Any]:
        """`value` as the JSON object its schema describes (wrapped when the return is not an object)."""
        try:
            if self.wrapped:
                validated = self._adapter.validate_python({WRAPPER_KEY: value})
            else:
                validated = self._adapter.validate_python(value, from_attributes=True)
            dumped = self._adapter.dump_python(validated, mode="json", by_alias=True)
        except ValidationError as exc:
            where = "; ".join(f"{_where(e['loc'])}: {e['msg']}" for e in exc.errors(include_url=False))
            problem = f"returned a value that does not match its return annotation ({where})"
            raise StructureError(problem) from None
        result: dict[str, Any] = dumped
        return result


def output_of(label: str, hints: dict[str, Any]) -> Output | None:
    """The output of a function whose type hints are `hints`; None when it has no structured output."""
    if "return" not in hints:
        return None
    annotation = portable(hints["return"])
    bare = get_args(annotation)[0] if get_origin(annotation) is typing_extensions.Annotated else annotation
    if bare is Any:
        return None
    try:
        if _object_like(bare):
            adapter: TypeAdapter[Any] = TypeAdapter(annotation)
            return Output(_schema(adapter), False, adapter)
        fields: dict[str, Any] = {WRAPPER_KEY: (annotation, ...)}
        model = create_model(f"{label}Output", **fields)
        return Output(_schema(TypeAdapter(model)), True, TypeAdapter(model))
    except (PydanticSchemaGenerationError, PydanticUserError, TypeError, NameError, ValueError) as exc:
        log.info("%s: no output schema for its return type (%s)", label, exc)
        return None


def _object_like(tp: Any) -> bool:
    """A type whose values are JSON objects by themselves."""
    if get_origin(tp) is dict:
        args = get_args(tp)
        return len(args) == 2 and args[0] is str
    if not inspect.isclass(tp):
        return False
    return (
        issubclass(tp, BaseModel)
        or is_typeddict(tp)
        or typing_extensions.is_typeddict(tp)
        or (dataclasses.is_dataclass(tp))
    )


def _schema(adapter: TypeAdapter[Any]) -> JsonSchema:
    described = adapter.json_schema(by_alias=True, mode="serialization", schema_generator=NoFieldTitles)
    schema = inline_refs(described)
    schema.setdefault("type", "object")
    return schema


def _where(loc: tuple[int | str, ...]) -> str:
    return ".".join(map(str, loc)) or "value"

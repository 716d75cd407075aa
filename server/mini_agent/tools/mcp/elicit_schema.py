"""What an MCP server may ask in form mode, and what goes back: the requested schema checked against
what MCP allows (a flat object of primitive fields, with bounds on its size), the schema's defaults
filled in, and the person's answer validated against it.

MCP's `requestedSchema` is an object whose properties are each a string (with `format`, `enum` or
titled `oneOf` choices), a number or integer (with `minimum`/`maximum`), a boolean, or an array of
choices (a multi-select: `items` with `enum` or titled `anyOf`). Anything else is refused, and the
question is declined without being shown.
"""

from __future__ import annotations

import json
from typing import Any

MAX_MESSAGE_CHARS = 4_000  # a longer question is declined unseen (logged: "message is N characters")
MAX_FIELDS = 32  # a form with more fields is declined unseen
MAX_SCHEMA_CHARS = 32_000  # the requested schema as JSON; a bigger one is declined unseen
MAX_CHOICES = 256  # enum / oneOf / anyOf entries of one field; more is declined unseen

_PRIMITIVES = {"string", "number", "integer", "boolean", "array"}
_STRUCTURAL = {  # keywords of nested or composed schemas, which a flat form has no use for
    *("$ref", "$defs", "definitions", "properties", "patternProperties", "additionalProperties"),
    *("allOf", "not", "if", "then", "else", "dependentSchemas", "prefixItems", "contains"),
}


class SchemaRefused(ValueError):
    """The server's question is not one MCP allows (or is past a bound); the message says why."""


def check_message(message: str) -> None:
    if len(message) > MAX_MESSAGE_CHARS:
        raise SchemaRefused(
            f"message is {len(message)} characters, over MAX_MESSAGE_CHARS={MAX_MESSAGE_CHARS}"
        )


def check_schema(schema: dict[str, Any]) -> None:
    """Raise `SchemaRefused` unless `schema` is a flat object of primitive fields within the bounds
    and a valid JSON Schema (2020-12)."""
    from jsonschema import Draft202012Validator
    from jsonschema.exceptions import SchemaError

    size = len(json.dumps(schema, ensure_ascii=False))
    if size > MAX_SCHEMA_CHARS:
        raise SchemaRefused(
            f"requestedSchema is {size} characters of JSON, over MAX_SCHEMA_CHARS={MAX_SCHEMA_CHARS}"
        )
    if schema.get("type") != "object":
        raise SchemaRefused("requestedSchema.type must be 'object'")
    properties = schema.get("properties", {})
    if not isinstance(properties, dict):
        raise SchemaRefused("requestedSchema.properties must be an object")
    if len(properties) > MAX_FIELDS:
        raise SchemaRefused(f"requestedSchema has {len(properties)} fields, over MAX_FIELDS={MAX_FIELDS}")
    for name, field in properties.items():
        _check_field(name, field)
    required = schema.get("required", [])
    if not isinstance(required, list) or any(r not in properties for r in required):
        raise SchemaRefused("requestedSchema.required must list names of its properties")
    try:
        Draft202012Validator.check_schema(schema)
    except SchemaError as exc:
        raise SchemaRefused(f"requestedSchema is not a valid JSON Schema: {exc.message}") from exc


def _check_field(name: str, field: Any) -> None:
    where = f"requestedSchema.properties.{name}"
    if not isinstance(field, dict):
        raise SchemaRefused(f"{where} must be an object")
    kind = field.get("type")
    if kind not in _PRIMITIVES:
        raise SchemaRefused(f"{where}.type must be one of {sorted(_PRIMITIVES)}, not {kind!r}")
    nested = _STRUCTURAL & field.keys()
    if nested:
        raise SchemaRefused(f"{where} uses {sorted(nested)}: MCP forms are flat")
    if kind != "array" and "items" in field:
        raise SchemaRefused(f"{where}.items is for arrays only")
    if kind != "string" and "oneOf" in field:
        raise SchemaRefused(f"{where}.oneOf is for strings only")
    if "anyOf" in field:
        raise SchemaRefused(f"{where}.anyOf is for the items of an array only")
    choices = [field.get("enum"), field.get("oneOf")]
    if kind == "array":
        items = field.get("items")
        if not isinstance(items, dict) or not ({"enum", "anyOf"} & items.keys()):
            raise SchemaRefused(f"{where}.items must list the choices (enum or anyOf)")
        if items.get("type", "string") != "string" or _STRUCTURAL & items.keys():
            raise SchemaRefused(f"{where}.items must be string choices")
        choices += [items.get("enum"), items.get("anyOf")]
    for listed in choices:
        if listed is not None and (not isinstance(listed, list) or len(listed) > MAX_CHOICES):
            raise SchemaRefused(
                f"{where} lists its choices as more than MAX_CHOICES={MAX_CHOICES} or not as a list"
            )


def with_defaults(schema: dict[str, Any], content: dict[str, Any]) -> dict[str, Any]:
    """`content` with each field it leaves out that has a `default` set to it; fields the schema
    does not name are left out."""
    properties: dict[str, Any] = schema.get("properties", {})
    filled = {key: value for key, value in content.items() if key in properties}
    for name, field in properties.items():
        if name not in filled and isinstance(field, dict) and "default" in field:
            filled[name] = field["default"]
    return filled


def problems(schema: dict[str, Any], content: dict[str, Any]) -> list[str]:
    """What is wrong with `content` as an answer to `schema` (each with the field it is about)."""
    from jsonschema import Draft202012Validator, FormatChecker

    validator = Draft202012Validator(schema, format_checker=FormatChecker())
    return [
        f"{error.json_path.removeprefix('$.') if error.json_path != '$' else 'content'}: {error.message}"
        for error in validator.iter_errors(content)
    ]

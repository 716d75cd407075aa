"""BFCL function docs → tools the daemon and an OpenAI-compatible server accept, in one place.

BFCL writes its functions in its own dialect of JSON Schema ("dict", "float", "tuple", "any", a missing
type) and with dotted names (`math.factorial`). Here they become JSON Schema 2020-12 with OpenAPI types,
following BFCL's own table for function-calling models (`GORILLA_TO_OPENAPI`: dict → object, float →
number, tuple → array, any → string, unknown or missing → string) and its hint for floats, but applied
at every depth; and names that match the daemon's tool-name rule (`^[A-Za-z0-9_-]{1,64}$`,
server/mini_agent/tools/registry.py), mapped reversibly: `.` → `__`.

No import of bfcl_eval or of mini-agent here: this module only reshapes dictionaries.
"""

from __future__ import annotations

import copy
import re
from dataclasses import dataclass
from typing import Any

TOOL_NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")  # the daemon's rule (tools/registry.py: _TOOL_NAME)
DOT = "__"

# bfcl_eval/constants/type_mappings.py: GORILLA_TO_OPENAPI (the Python types among them)
GORILLA_TO_OPENAPI: dict[str, str] = {
    "integer": "integer", "number": "number", "float": "number", "string": "string",
    "boolean": "boolean", "bool": "boolean", "array": "array", "list": "array", "dict": "object",
    "object": "object", "tuple": "array", "any": "string", "byte": "integer", "short": "integer",
    "long": "integer", "double": "number", "char": "string",
}
# JSON Schema keywords kept as they are (BFCL's extra "optional" and its "format": "float"-style hints go)
KEPT = ("description", "enum", "default", "minimum", "maximum", "minItems", "maxItems", "minLength",
        "maxLength", "pattern")


class NameClash(ValueError):
    """A BFCL name that cannot be mapped reversibly (already holds `__`, or too long)."""


def encode_name(name: str) -> str:
    if DOT in name:
        raise NameClash(f"{name!r} already holds {DOT!r}: the mapping would not be reversible")
    mapped = name.replace(".", DOT)
    if not TOOL_NAME.match(mapped):
        raise NameClash(f"{name!r} → {mapped!r} breaks the daemon's tool-name rule {TOOL_NAME.pattern}")
    return mapped


def decode_name(name: str) -> str:
    return name.replace(DOT, ".")


def to_json_schema(spec: dict[str, Any]) -> dict[str, Any]:
    """One BFCL parameter schema (any depth) as JSON Schema 2020-12."""
    bfcl_type = spec.get("type")
    out: dict[str, Any] = {"type": GORILLA_TO_OPENAPI.get(str(bfcl_type), "string")}
    for key in KEPT:
        if key in spec:
            out[key] = copy.deepcopy(spec[key])
    if bfcl_type == "float":  # what BFCL's convert_to_tool adds for function-calling models
        out["description"] = str(out.get("description", "")) + " This is a float type value."
    if out["type"] == "object" and isinstance(spec.get("properties"), dict):
        out["properties"] = {key: to_json_schema(value) for key, value in spec["properties"].items()}
        required = spec.get("required")
        if isinstance(required, list):
            out["required"] = [str(name) for name in required]
    if out["type"] == "array" and isinstance(spec.get("items"), dict):
        out["items"] = to_json_schema(spec["items"])
    return out


@dataclass(frozen=True)
class Tool:
    original: str  # BFCL's name, as its checker wants it
    name: str  # the name the daemon and the server see
    description: str
    input_schema: dict[str, Any]

    def openai(self) -> dict[str, Any]:
        return {"type": "function", "function": {"name": self.name, "description": self.description,
                                                 "parameters": self.input_schema}}


def tools_for(functions: list[dict[str, Any]]) -> list[Tool]:
    """A BFCL question's `function` list as tools (names mapped, schemas converted)."""
    tools = []
    for function in functions:
        parameters = to_json_schema({**function.get("parameters", {}), "type": "dict"})
        parameters.setdefault("properties", {})
        tools.append(Tool(function["name"], encode_name(function["name"]),
                          str(function.get("description", "")), parameters))
    return tools


def original_name(name: str, tools: list[Tool]) -> str:
    """The BFCL name for a name the model used: a mapped one, an original one, else decoded anyway."""
    for tool in tools:
        if name in (tool.name, tool.original):
            return tool.original
    return decode_name(name)

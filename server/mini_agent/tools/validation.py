"""Checking a call's arguments against a JSON Schema for tools validated in the daemon.

Client tools and MCP tools are checked here before anything is sent, so the model gets the same
kind of message (each problem with its place, then the schema) as for a workspace tool.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # jsonschema is loaded with the first client or MCP tool (a few MiB a daemon may not need)
    from jsonschema import Draft202012Validator


def invalid_arguments(
    name: str, validator: Draft202012Validator, arguments: Any, schema: dict[str, Any]
) -> str | None:
    """The error observation for arguments that do not fit `schema`; None when they do."""
    problems = sorted(validator.iter_errors(arguments), key=lambda e: [str(p) for p in e.path])
    if not problems:
        return None
    lines = "\n".join(f"- {_where(e.json_path)}: {e.message}" for e in problems)
    return (
        f"Invalid arguments for {name}:\n{lines}\nExpected schema: {json.dumps(schema, ensure_ascii=False)}"
    )


def _where(json_path: str) -> str:
    return "arguments" if json_path == "$" else json_path.removeprefix("$.")

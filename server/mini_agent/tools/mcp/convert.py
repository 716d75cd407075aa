"""Pure mappings between MCP's shapes and ours: tool names, input schemas and call results.

No I/O here, so each rule is testable on its own and the connection code stays about lifecycles.
"""

from __future__ import annotations

import json
import re
from collections.abc import Collection
from typing import TYPE_CHECKING, Any

from mini_agent.core.contracts import Image
from mini_agent.core.images import decoded_size
from mini_agent.core.images import passed_on as images_passed_on

if TYPE_CHECKING:
    import mcp_types as types

_INVALID = re.compile(r"[^A-Za-z0-9_-]")
_MAX_NAME = 64
MAX_SCHEMA_DEPTH = 64  # nesting of lists and objects in an input schema, after inlining
MAX_SCHEMA_NODES = 20_000  # values in an input schema, after inlining
OMITTED = "x-mini-agent-omitted"  # in a schema the transport could not take: why (see `stdio`)


def tool_name(server: str, tool: str, taken: Collection[str]) -> str:
    """`<server>_<tool>` made valid as an OpenAI function name and unique among `taken`.

    Models only see the prefixed name, so two servers offering `search` stay apart; a name cut to
    64 characters or clashing after cleaning gets a numeric suffix rather than shadowing another.
    """
    base = _INVALID.sub("_", f"{server}_{tool}")[:_MAX_NAME] or "tool"
    name, n = base, 1
    while name in taken:
        n += 1
        suffix = f"_{n}"
        name = base[: _MAX_NAME - len(suffix)] + suffix
    return name


class SchemaRefused(ValueError):
    """A tool's input schema over one of the bounds below; the message says which, for the user."""


def inline_refs(schema: dict[str, Any]) -> dict[str, Any]:
    """`schema` with every local `$ref` (`#/$defs/…`, `#/definitions/…`) replaced by its target.

    Many model servers ignore `$ref`, and the published protocol promises schemas without one. A
    recursive reference cannot be inlined; it becomes `{}` (any value) at the point it recurs. The
    result is built within `MAX_SCHEMA_NODES` values and `MAX_SCHEMA_DEPTH` levels (references
    inlined into references grow exponentially); past either, `SchemaRefused`.
    """
    if OMITTED in schema:
        raise SchemaRefused(str(schema[OMITTED]))
    budget = [MAX_SCHEMA_NODES]

    def resolve(pointer: str) -> Any:
        node: Any = schema
        for part in pointer.removeprefix("#/").split("/"):
            part = part.replace("~1", "/").replace("~0", "~")
            if not isinstance(node, dict) or part not in node:
                return {}
            node = node[part]
        return node

    def walk(node: Any, seen: tuple[str, ...], depth: int) -> Any:
        budget[0] -= 1
        if budget[0] < 0:
            raise SchemaRefused(
                f"its input schema has over {MAX_SCHEMA_NODES} values once its $refs are inlined "
                "(MAX_SCHEMA_NODES)"
            )
        if depth > MAX_SCHEMA_DEPTH:
            raise SchemaRefused(
                f"its input schema is nested deeper than {MAX_SCHEMA_DEPTH} levels (MAX_SCHEMA_DEPTH)"
            )
        if isinstance(node, list):
            return [walk(item, seen, depth + 1) for item in node]
        if not isinstance(node, dict):
            return node
        ref = node.get("$ref")
        if isinstance(ref, str) and ref.startswith("#/"):
            if ref in seen:
                return {}
            target = walk(resolve(ref), (*seen, ref), depth)
            siblings = {k: walk(v, seen, depth + 1) for k, v in node.items() if k != "$ref"}
            return {**target, **siblings} if isinstance(target, dict) else target
        return {k: walk(v, seen, depth + 1) for k, v in node.items() if k not in ("$defs", "definitions")}

    result: dict[str, Any] = walk(schema, (), 0)
    result.setdefault("type", "object")
    return result


def depth_over(value: Any, limit: int) -> bool:
    """Whether `value` (parsed JSON) nests lists and objects deeper than `limit`; stops at the first
    such path, and needs no recursion however deep it is."""
    pending = [(value, 0)]
    while pending:
        node, depth = pending.pop()
        children = node.values() if isinstance(node, dict) else node if isinstance(node, list) else None
        if children is None:
            continue
        if depth >= limit:
            return True
        pending += [(child, depth + 1) for child in children]
    return False


def result_content(result: types.CallToolResult) -> tuple[str, tuple[Image, ...]]:
    """One observation text and the images that go on to the model. Text blocks are joined, other
    blocks are one line each (an image's says so when it does not go on, and why), structured content
    is JSON unless a text block already carries the same value (servers often send both)."""
    import mcp_types as types  # here, not at the top: the daemon starts without the MCP SDK

    pictures = [block for block in result.content if isinstance(block, types.ImageContent)]
    images, why = images_passed_on((block.mime_type, block.data) for block in pictures)
    not_passed = {id(block): problem for block, problem in zip(pictures, why, strict=True)}
    parts: list[str] = []
    for block in result.content:
        if isinstance(block, types.TextContent):
            parts.append(block.text)
        elif isinstance(block, types.ImageContent | types.AudioContent):
            kind = "image" if isinstance(block, types.ImageContent) else "audio"
            problem = not_passed.get(id(block))
            tail = f", not passed on: {problem}" if problem else ""
            parts.append(f"[{kind}: {block.mime_type[:80]}, {decoded_size(block.data)} bytes{tail}]")
        elif isinstance(block, types.ResourceLink):
            parts.append(f"[resource: {block.uri}]")
        elif isinstance(block, types.EmbeddedResource):
            resource = block.resource
            if isinstance(resource, types.TextResourceContents):
                parts.append(resource.text)
            else:
                size = decoded_size(resource.blob)
                parts.append(f"[resource: {resource.uri}, {resource.mime_type or 'binary'}, {size} bytes]")
    structured = result.structured_content
    if structured is not None and not any(_carries(part, structured) for part in parts):
        parts.append(json.dumps(structured, ensure_ascii=False, separators=(",", ":")))
    return "\n".join(parts), images


def _carries(text: str, structured: dict[str, Any]) -> bool:
    """Whether a text block already says what the structured content does: the same JSON, or, for a
    value wrapped as `{"result": value}` (the SDK servers' way with a non-object result), that value
    (a string as is, anything else as JSON)."""
    if _same_json(text, structured):
        return True
    if structured.keys() != {"result"}:
        return False
    value = structured["result"]
    return text == value if isinstance(value, str) else _same_json(text, value)



def _same_json(text: str, value: Any) -> bool:
    try:
        return bool(json.loads(text) == value)
    except ValueError:
        return False

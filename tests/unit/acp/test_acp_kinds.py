"""ACP's `tool_call.kind` from the MCP annotations a tool's server set (the table in docs/acp.md)."""

from __future__ import annotations

import pytest
from mini_agent.acp.updates import kind_of
from mini_agent.core.contracts import ToolSpec


def mcp_tool(**hints: bool) -> ToolSpec:
    return ToolSpec("srv_tool", "", {"type": "object"}, mcp_server="srv", hints=tuple(sorted(hints.items())))


@pytest.mark.parametrize(
    ("hints", "kind"),
    [
        ({"readOnlyHint": True}, "read"),
        ({"readOnlyHint": True, "openWorldHint": False}, "read"),
        ({"readOnlyHint": True, "openWorldHint": True}, "fetch"),
        ({"readOnlyHint": False}, "edit"),
        ({"readOnlyHint": False, "destructiveHint": False}, "edit"),
        ({"destructiveHint": True}, "edit"),
        ({"idempotentHint": True}, "edit"),
        ({"openWorldHint": True}, "other"),  # open world but maybe writing: not a fetch
        ({}, "other"),  # MCP's defaults for absent hints are not assumed
    ],
)
def test_mcp_annotations_decide_the_kind(hints: dict[str, bool], kind: str) -> None:
    assert kind_of("srv_tool", mcp_tool(**hints)) == kind


def test_editor_file_tools_and_undeclared_tools() -> None:
    assert kind_of("read_text_file", None) == "read"
    assert kind_of("write_text_file", None) == "edit"
    assert kind_of("count_file_lines", ToolSpec("count_file_lines", "", {"type": "object"})) == "other"
    assert kind_of("gone_tool", None) == "other"  # its server stopped: no spec to read hints from

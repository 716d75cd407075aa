"""ACP's `tool_call.kind` from the MCP annotations a tool's server set (the table in docs/acp.md)."""

from __future__ import annotations

import pytest
from mini_agent.acp.updates import kind_of, update_for
from mini_agent.core.contracts import Image, Observation, ToolSpec
from mini_agent.core.events import ToolCallFinished


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


def test_a_results_images_follow_its_text_in_the_tool_calls_content() -> None:
    png = Image("image/png", "iVBORw0K")
    finished = ToolCallFinished("s", 0, Observation("c1", "every_get-tiny-image", "Here:", images=(png,)))
    update = update_for(finished, kind_of)
    assert update is not None
    content = update.model_dump(by_alias=True, exclude_none=True)["content"]
    assert content == [
        {"type": "content", "content": {"type": "text", "text": "Here:"}},
        {"type": "content", "content": {"type": "image", "data": "iVBORw0K", "mimeType": "image/png"}},
    ]

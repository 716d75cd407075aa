"""`mini-agent mcp`'s pieces that need no process: an observation as a `CallToolResult` (text always,
structured content only for a successful call of a tool with an output schema), a spec as a `Tool`,
and the `--http` address and its DNS-rebinding allow-list."""

from __future__ import annotations

import mcp_types as types
import pytest
from mini_agent.core.contracts import Observation, ToolSpec
from mini_agent.mcp.http import AddressError, parse_address, security
from mini_agent.mcp.results import call_result, mcp_tool

SCHEMA = {"type": "object", "properties": {"result": {"type": "integer"}}, "required": ["result"]}
TYPED = ToolSpec("halve", "Half.", {"type": "object"}, output_schema=SCHEMA, hints=(("readOnlyHint", True),))


def test_a_structured_result_keeps_its_text() -> None:
    result = call_result(TYPED, Observation("c", "halve", "21", structured={"result": 21}))
    assert result.structured_content == {"result": 21} and not result.is_error
    assert result.content == [types.TextContent(text="21")]


def test_an_error_or_an_untyped_tool_has_text_only() -> None:
    failed = call_result(TYPED, Observation("c", "halve", "halve raised ValueError", is_error=True))
    untyped = call_result(ToolSpec("t", "", {}), Observation("c", "t", "[1]", structured=None))
    assert (failed.is_error, failed.structured_content) == (True, None)
    assert (untyped.is_error, untyped.structured_content) == (False, None)


def test_a_typed_tool_without_its_structure_is_an_error() -> None:
    cut = call_result(TYPED, Observation("c", "halve", "2…", truncated=True))
    assert cut.is_error and "cut to the output cap" in cut.content[0].text  # type: ignore[union-attr]


def test_the_tool_carries_schema_and_hints() -> None:
    tool = mcp_tool(TYPED)
    assert tool.output_schema == SCHEMA
    assert tool.annotations == types.ToolAnnotations(read_only_hint=True)


@pytest.mark.parametrize(
    ("address", "parsed"),
    [("8765", ("127.0.0.1", 8765)), ("0.0.0.0:0", ("0.0.0.0", 0)), ("[::1]:9", ("::1", 9))],
)
def test_addresses(address: str, parsed: tuple[str, int]) -> None:
    assert parse_address(address) == parsed


@pytest.mark.parametrize(("address", "problem"), [("x:http", "must be a number"), ("70000", "between 0")])
def test_bad_addresses(address: str, problem: str) -> None:
    with pytest.raises(AddressError, match=problem):
        parse_address(address)


def test_the_allow_list_names_the_bound_host() -> None:
    assert security("127.0.0.1").allowed_hosts == ["127.0.0.1:*", "localhost:*", "[::1]:*"]
    assert security("192.168.1.5").allowed_hosts == ["192.168.1.5:*"]

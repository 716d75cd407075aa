"""MCP's behaviour hints declared on `@tool`: carried as `ToolOptions` (merged under a registration's,
across the host pipe), named as MCP names them, and read by the approval rule as an MCP server's
read-only tool is: one that only reads (and does not destroy) is not asked about."""

from __future__ import annotations

from mini_agent import tool
from mini_agent.core.contracts import ToolOptions, ToolSource
from mini_agent.tools import protocol
from mini_agent.tools.decorators import OPTIONS_ATTRIBUTE


def test_the_decorator_declares_the_hints() -> None:
    @tool(read_only=True, open_world=False, idempotent=True)
    def look() -> None: ...

    options: ToolOptions = getattr(look, OPTIONS_ATTRIBUTE)
    assert options.hints == (("openWorldHint", False), ("readOnlyHint", True))
    assert options.idempotent  # served as idempotentHint from the spec's own field
    assert ToolOptions().hints == ()


def test_a_read_only_tool_is_not_asked_about_unless_it_also_destroys() -> None:
    assert ToolOptions(requires_approval=True).asks
    assert not ToolOptions(requires_approval=True, read_only=True).asks
    assert ToolOptions(requires_approval=True, read_only=True, destructive=True).asks
    assert ToolOptions(requires_approval=True, read_only=False).asks
    assert not ToolOptions(read_only=False, destructive=True).asks  # nobody asked for approval


def test_a_registration_overrides_a_declared_hint_it_sets() -> None:
    declared = ToolOptions(read_only=True, destructive=False, open_world=True)
    assert ToolOptions(read_only=False).over(declared) == ToolOptions(
        read_only=False, destructive=False, open_world=True
    )


def test_hints_and_output_schema_cross_the_host_pipe() -> None:
    schema = {"type": "object", "properties": {"result": {"type": "integer"}}, "required": ["result"]}
    described = protocol.DescribedTool(
        "halve", "Half.", {"type": "object", "properties": {}}, ToolSource("/w/t.py", "halve", 1),
        ToolOptions(read_only=True, destructive=False), schema,
    )  # fmt: skip
    result = protocol.CallResult("21", structured={"result": 21})
    for message, read in ((described, protocol.DescribedTool.of), (result, protocol.CallResult.of)):
        body = protocol.encode(message)[protocol.HEADER.size :]
        back = protocol.read(protocol.decode(body), read)
        assert back == message and getattr(back, "structured", None) == getattr(message, "structured", None)

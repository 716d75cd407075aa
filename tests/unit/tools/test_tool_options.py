"""A tool's options are declared once (`contracts.ToolOptions`): every door that takes them applies
that type's one rule, so a bad timeout is refused alike by the decorator, agent/registerTool's
params and the registry (reading back a stored registration). The host pipe's messages are typed,
each read back as it was written."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from mini_agent import tool
from mini_agent.core.contracts import ToolOptions, ToolSource
from mini_agent.core.strict import InvalidParams, parse
from mini_agent.lsp.params import RegisterToolParams
from mini_agent.tools import protocol
from mini_agent.tools.registry import ToolRegistry

RULE = "a tool's timeout must be positive, got 0"


@pytest.mark.parametrize("timeout", [0, -1.5])
def test_the_one_rule(timeout: float) -> None:
    with pytest.raises(ValueError, match=f"a tool's timeout must be positive, got {timeout}"):
        ToolOptions(timeout_sec=timeout)


def test_decorator_refuses_with_the_rule() -> None:
    with pytest.raises(ValueError) as refused:
        tool(timeout_sec=0)
    assert str(refused.value) == RULE


def test_params_refuse_with_the_rule() -> None:
    with pytest.raises(InvalidParams) as refused:
        parse("agent/registerTool", {"path": "tools.py", "timeoutSec": 0}, RegisterToolParams)
    assert refused.value.errors == [f"timeoutSec: Value error, {RULE}"]


@pytest.mark.asyncio
async def test_registry_refuses_with_the_rule(workspace: Path) -> None:
    registry = ToolRegistry(workspace)
    try:
        assert await registry.restore([{"path": "tools.py", "timeout_sec": 0}]) == [RULE]
        assert registry.list_tools() == []
    finally:
        await registry.aclose()


def test_params_carry_the_options() -> None:
    params = parse(
        "agent/registerTool",
        {"path": "tools.py", "name": "n", "description": "d", "requiresApproval": True, "timeoutSec": 2},
        RegisterToolParams,
    )
    assert params.options() == ToolOptions("n", "d", requires_approval=True, timeout_sec=2)


def test_a_registration_overrides_the_decorator() -> None:
    declared = ToolOptions("decorated", "doc", requires_approval=True, timeout_sec=5)
    assert ToolOptions(name="renamed", idempotent=True).over(declared) == ToolOptions(
        "renamed", "doc", requires_approval=True, idempotent=True, timeout_sec=5
    )
    assert ToolOptions(timeout_sec=1).over(declared).timeout_sec == 1


DESCRIBED = protocol.DescribedTool(
    "count",
    "Count lines.",
    {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]},
    ToolSource("/w/tools.py", "count", 3),
    ToolOptions(requires_approval=True, idempotent=True, timeout_sec=2.5),
)


@pytest.mark.parametrize(
    ("message", "read"),
    [
        (protocol.Ready(4242), protocol.Ready.of),
        (protocol.LoadRequest("/w/tools.py", "count", "n", "d"), protocol.request_of),
        (protocol.LoadRequest("/w/tools.py"), protocol.request_of),
        (
            protocol.CallRequest("/w/tools.py", "count", "count", {"path": "a\u00e9"}, True),
            protocol.request_of,
        ),
        (protocol.LoadReply((DESCRIBED,), logs="imported\n"), protocol.LoadReply.of),
        (protocol.LoadReply(error="tools.py defines no public functions"), protocol.LoadReply.of),
        (protocol.CallResult("3", False, True, "printed"), protocol.CallResult.of),
    ],
)
def test_host_messages_round_trip_through_a_frame(message: protocol.Message, read: Any) -> None:
    frame = protocol.encode(message)
    body = frame[protocol.HEADER.size :]
    assert protocol.frame_length(frame[: protocol.HEADER.size]) == len(body)
    assert protocol.read(protocol.decode(body), read) == message


def test_a_malformed_reply_is_a_protocol_error() -> None:
    with pytest.raises(protocol.ProtocolError, match="malformed frame"):
        protocol.read({"output": "x"}, protocol.CallResult.of)
    with pytest.raises(protocol.ProtocolError, match=r"malformed frame.*timeout must be positive"):
        protocol.read({**DESCRIBED.wire(), "timeoutSec": -1}, protocol.DescribedTool.of)
    with pytest.raises(protocol.ProtocolError, match="unknown request 'exec'"):
        protocol.read({"op": "exec"}, protocol.request_of)

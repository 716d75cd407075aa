"""A tool's options are declared once (`contracts.ToolOptions`): every door that takes them applies
that type's one rule, so a bad timeout is refused alike by the decorator, agent/registerTool's
params and the registry."""

from __future__ import annotations

from pathlib import Path

import pytest
from mini_agent.contracts import ToolOptions
from mini_agent.params import InvalidParams, RegisterToolParams, parse
from mini_agent.tools import RegistrationError, ToolRegistry, tool

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
        with pytest.raises(RegistrationError) as refused:
            await registry.register_file("tools.py", timeout_sec=0)
        assert str(refused.value) == RULE
        assert registry.list() == []
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

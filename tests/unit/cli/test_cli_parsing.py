"""The command line door in process: what its flags become (the options a daemon is started with, the
tool-host settings of `mini-agent mcp`) and what each way a session ends exits with."""

from __future__ import annotations

import pytest
from mini_agent.cli.main import build_parser
from mini_agent.cli.running import EXIT_CANCELLED, EXIT_FAILED, EXIT_OK, options, outcome


def test_model_flags_become_initialization_options_and_absent_ones_stay_absent() -> None:
    args = build_parser().parse_args(["ask", "task", "--model", "qwen", "--tool-mode", "json"])
    assert options(args) == {"llm": {"model": "qwen", "toolMode": "json"}}
    assert options(build_parser().parse_args(["ask", "task"])) == {"llm": {}}


def test_mini_agent_mcp_takes_every_tool_host_cap() -> None:
    args = build_parser().parse_args(["mcp", "--max-memory-mb", "64", "--timeout-sec", "5", "tools.py"])
    assert (args.max_memory_mb, args.timeout_sec, args.files) == (64, 5.0, ["tools.py"])


def test_doctor_is_a_command() -> None:
    assert build_parser().parse_args(["doctor"]).command == "doctor"


@pytest.mark.parametrize(
    ("result", "interrupted", "code"),
    [
        ({"stopReason": "end_turn"}, False, EXIT_OK),
        ({"stopReason": "cancelled"}, False, EXIT_CANCELLED),
        ({"stopReason": "end_turn"}, True, EXIT_CANCELLED),
        ({"stopReason": "max_turn_requests", "steps": 8}, False, EXIT_FAILED),
        ({"stopReason": "error", "error": "the model server is down"}, False, EXIT_FAILED),
    ],
)
def test_each_way_a_session_ends_has_its_exit_code(
    result: dict[str, object], interrupted: bool, code: int, capsys: pytest.CaptureFixture[str]
) -> None:
    assert outcome(result, interrupted=interrupted) == code
    said = capsys.readouterr().err
    if result.get("stopReason") == "max_turn_requests":
        assert "no answer within the step budget (8 steps)" in said


def test_a_bad_number_is_a_usage_error() -> None:
    with pytest.raises(SystemExit) as raised:
        build_parser().parse_args(["ask", "task", "--max-steps", "0"])
    assert raised.value.code == 2

"""The session configuration on the ACP door, end to end: the SDK's client side (and acpx) drive
`python -m mini_agent acp` over real stdio against the scripted model server listing three models.
The config options (model, permission mode) and the legacy session modes are offered, a switch reaches
the model server on the next request, and the permission mode decides which tool calls ask."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from acp import RequestError

from ...support.acp import acp_agent, calls, dump, run_acpx, said, text, workspace_config
from ...support.model_list import APPROVAL_TOOL, MODELS, ListingServer
from ...support.scripted import action

DONE = {"content": "Final Answer: done"}


def options_of(answer: Any) -> dict[str, dict[str, Any]]:
    """The config options of an answer, by id."""
    return {option["id"]: option for option in dump(answer)["configOptions"]}


def stamp_workspace(workspace: Path, base_url: str) -> None:
    (workspace / "stamp.py").write_text(APPROVAL_TOOL, encoding="utf-8")
    workspace_config(workspace, base_url, tools='tools = ["tools.py", "stamp.py"]')


@pytest.mark.asyncio
async def test_new_session_offers_the_listed_models_and_a_switch_reaches_the_next_request(
    workspace: Path,
) -> None:
    script = [{"content": "Final Answer: first"}, {"content": "Final Answer: second"}]
    async with ListingServer(script) as model:
        workspace_config(workspace, model.base_url)
        async with acp_agent(workspace, trust=True) as (conn, _, recorder):
            session = await conn.new_session(cwd=str(workspace), mcp_servers=[])
            sid = session.session_id
            await conn.prompt(session_id=sid, prompt=text("first"))
            switched = await conn.set_config_option(config_id="model", session_id=sid, value="large")
            await conn.prompt(session_id=sid, prompt=text("second"))
        asked = model.asked_for()
    offered = options_of(session)
    assert offered["model"]["category"] == "model" and offered["model"]["currentValue"] == "replay"
    assert [o["value"] for o in offered["model"]["options"]] == list(MODELS)
    assert offered["mode"]["category"] == "mode" and offered["mode"]["currentValue"] == "ask_when_needed"
    assert [o["value"] for o in offered["mode"]["options"]] == ["ask_always", "ask_when_needed", "ask_never"]
    assert dump(session)["modes"]["currentModeId"] == "ask_when_needed"
    assert options_of(switched)["model"]["currentValue"] == "large"
    assert asked == ["replay", "large"]
    updates = recorder.of(sid)
    changed = [u for u in updates if u["sessionUpdate"] == "config_option_update"]
    assert [{o["id"]: o["currentValue"] for o in u["configOptions"]} for u in changed] == [
        {"model": "large", "mode": "ask_when_needed"}
    ]
    assert said(updates) == "firstsecond"  # the answer text stays clean


@pytest.mark.asyncio
@pytest.mark.parametrize("how", ["config_option", "set_mode"])
async def test_ask_never_runs_a_tool_that_needs_approval_without_asking(workspace: Path, how: str) -> None:
    script = [action("stamp", {"note": "x"}), DONE]
    async with ListingServer(script) as model:
        stamp_workspace(workspace, model.base_url)
        async with acp_agent(workspace, trust=True) as (conn, _, recorder):
            session = await conn.new_session(cwd=str(workspace), mcp_servers=[])
            sid = session.session_id
            if how == "set_mode":
                await conn.set_session_mode(session_id=sid, mode_id="ask_never")
            else:
                await conn.set_config_option(config_id="mode", session_id=sid, value="ask_never")
            answer = await conn.prompt(session_id=sid, prompt=text("stamp it"))
    assert answer.stop_reason == "end_turn"
    assert recorder.permission_requests == []
    (stamped,) = calls(recorder.of(sid)).values()
    assert stamped[-1]["status"] == "completed" and stamped[-1]["rawOutput"]["output"] == "stamped x"


@pytest.mark.asyncio
@pytest.mark.parametrize("how", ["config_option", "set_mode"])
async def test_ask_always_asks_before_a_read_only_tool(workspace: Path, how: str) -> None:
    script = [DONE, action("count_file_lines", {"path": "schema.py"}), DONE]
    async with ListingServer(script) as model:
        workspace_config(workspace, model.base_url)
        async with acp_agent(workspace, trust=True) as (conn, _, recorder):
            recorder.answer = lambda request: "allow_once"
            session = await conn.new_session(cwd=str(workspace), mcp_servers=[])
            sid = session.session_id
            await conn.prompt(session_id=sid, prompt=text("hello"))  # the session has started
            if how == "set_mode":
                await conn.set_session_mode(session_id=sid, mode_id="ask_always")
            else:
                await conn.set_config_option(config_id="mode", session_id=sid, value="ask_always")
            answer = await conn.prompt(session_id=sid, prompt=text("count"))
    assert answer.stop_reason == "end_turn"
    asked = [r["toolCall"]["title"].split("(")[0] for r in recorder.permission_requests]
    assert asked == ["count_file_lines"]
    modes = [u["currentModeId"] for u in recorder.of(sid) if u["sessionUpdate"] == "current_mode_update"]
    assert modes == ["ask_always"]


@pytest.mark.asyncio
@pytest.mark.parametrize("how", ["config_option", "set_mode"])
async def test_ask_never_is_refused_in_a_folder_not_trusted(workspace: Path, how: str) -> None:
    async with ListingServer() as model:
        workspace_config(workspace, model.base_url)
        async with acp_agent(workspace) as (conn, _, _recorder):
            session = await conn.new_session(cwd=str(workspace), mcp_servers=[])
            sid = session.session_id
            with pytest.raises(RequestError) as refused:
                if how == "set_mode":
                    await conn.set_session_mode(session_id=sid, mode_id="ask_never")
                else:
                    await conn.set_config_option(config_id="mode", session_id=sid, value="ask_never")
            unchanged = await conn.set_config_option(config_id="mode", session_id=sid, value="ask_always")
    assert refused.value.code == -32602
    assert refused.value.data["reason"] == "workspace_untrusted"
    assert "not trusted" in str(refused.value) and "mini-agent trust" in str(refused.value)
    assert options_of(unchanged)["mode"]["currentValue"] == "ask_always"


@pytest.mark.asyncio
async def test_unknown_config_ids_and_values_are_refused_naming_them(workspace: Path) -> None:
    async with ListingServer() as model:
        workspace_config(workspace, model.base_url)
        async with acp_agent(workspace, trust=True) as (conn, _, _recorder):
            sid = (await conn.new_session(cwd=str(workspace), mcp_servers=[])).session_id
            refusals = []
            for config_id, value in (("colour", "red"), ("model", "huge"), ("mode", "sometimes")):
                with pytest.raises(RequestError) as refused:
                    await conn.set_config_option(config_id=config_id, session_id=sid, value=value)
                refusals.append(str(refused.value))
    assert "colour" in refusals[0] and "huge" in refusals[1] and "'large'" in refusals[1]
    assert "sometimes" in refusals[2] and "ask_never" in refusals[2]


@pytest.mark.asyncio
async def test_load_and_resume_keep_the_model_and_mode_and_load_shows_the_change(workspace: Path) -> None:
    script = [DONE, DONE]
    async with ListingServer(script) as model:
        workspace_config(workspace, model.base_url)
        async with acp_agent(workspace, trust=True) as (conn, _, _recorder):
            sid = (await conn.new_session(cwd=str(workspace), mcp_servers=[])).session_id
            await conn.prompt(session_id=sid, prompt=text("first"))
            await conn.set_config_option(config_id="model", session_id=sid, value="small")
            await conn.set_config_option(config_id="mode", session_id=sid, value="ask_always")
        async with acp_agent(workspace, trust=True) as (conn, _, recorder):
            loaded = await conn.load_session(cwd=str(workspace), session_id=sid, mcp_servers=[])
            await conn.prompt(session_id=sid, prompt=text("second"))
        async with acp_agent(workspace, trust=True) as (conn, _, _recorder):
            resumed = await conn.resume_session(cwd=str(workspace), session_id=sid, mcp_servers=[])
        asked = model.asked_for()
    for answer in (loaded, resumed):
        assert {k: o["currentValue"] for k, o in options_of(answer).items()} == {
            "model": "small", "mode": "ask_always"
        }
        assert dump(answer)["modes"]["currentModeId"] == "ask_always"
    replayed = [u for u in recorder.of(sid) if u["sessionUpdate"] == "config_option_update"]
    assert [{o["id"]: o["currentValue"] for o in u["configOptions"]} for u in replayed] == [
        {"model": "small", "mode": "ask_when_needed"},
        {"model": "small", "mode": "ask_always"},
    ]
    assert asked == ["replay", "small"]


@pytest.mark.asyncio
async def test_acpx_model_flag_switches_the_model_through_the_config_option(
    workspace: Path, tmp_path: Path
) -> None:
    async with ListingServer([{"content": "Final Answer: hi"}]) as model:
        workspace_config(workspace, model.base_url)
        code, stream, err = await run_acpx(workspace, tmp_path, "--model", "large", "exec", "say hi")
        asked = model.asked_for()
    assert code == 0, err
    assert asked == ["large"]
    sets = [m for m in stream if m.get("method") == "session/set_config_option"]
    assert [(m["params"]["configId"], m["params"]["value"]) for m in sets] == [("model", "large")]

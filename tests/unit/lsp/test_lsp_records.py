"""The LSP door's requests over stored sessions, in process: `lsp.records` handlers called with their
parsed params against a real `Workspace` (its recording client, a SQLite store in a temp folder), so
what each answers on the wire, and what it refuses, is seen without a daemon or a socket."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio
from mini_agent.app.config import WorkspaceConfig
from mini_agent.app.options import InitOptions, StoreOptions
from mini_agent.app.port import RecordingClient
from mini_agent.app.workspace import Workspace
from mini_agent.core.contracts import Image, LLMConfig, Message, Observation, Role, SessionStatus, ToolCall
from mini_agent.core.errors import AgentError, UnknownSession
from mini_agent.core.session import AgentConfig, AgentSession, StepRecord
from mini_agent.core.strict import parse
from mini_agent.lsp import params, records

PNG = Image("image/png", "iVBORw0K")


@pytest_asyncio.fixture
async def workspace(tmp_path: Path) -> AsyncIterator[Workspace]:
    options = InitOptions(store=StoreOptions(path=str(tmp_path / "sessions.db")))
    ws = Workspace(tmp_path, options, RecordingClient(), config=WorkspaceConfig())
    try:
        yield ws
    finally:
        await ws.aclose()


def stored(ws: Workspace, session_id: str, steps: int = 2) -> AgentSession:
    """A finished session of `steps` steps, each a call of `look` and its result, saved to the store."""
    config = AgentConfig(llm=LLMConfig(base_url="http://127.0.0.1:9/v1", model="m"))
    session = AgentSession(session_id, "look twice", config, [])
    session.messages += [Message(Role.SYSTEM, "Be brief."), Message(Role.USER, "look twice")]
    for index in range(steps):
        call = ToolCall(f"c{index}", "look", {"n": index})
        seen = Observation(call.id, "look", f"saw {index}", images=(PNG,) if index == 0 else ())
        session.steps.append(StepRecord(index, tool_calls=[call], observations=[seen], tool_mode="native"))
        session.messages += [Message(Role.ASSISTANT, "", tool_calls=(call,)),
                             Message(Role.TOOL, seen.output, tool_call_id=call.id, images=seen.images)]
    session.status = SessionStatus.FINISHED
    assert ws.store is not None
    ws.store.save(session)
    return session


async def call(handler: str, ws: Workspace, raw: dict[str, Any]) -> Any:
    """The handler of `agent/<handler>` with `raw` parsed the way the door parses it."""
    method, model, run = next(entry for entry in records.REQUESTS if entry[0] == f"agent/{handler}")
    return await run(ws, parse(method, raw, getattr(params, model)))


@pytest.mark.asyncio
async def test_stored_sessions_are_listed_newest_first_with_their_total(workspace: Workspace) -> None:
    stored(workspace, "sess_a")
    stored(workspace, "sess_b")
    listed = await call("listSessions", workspace, {"limit": 1})
    assert listed["total"] == 2 and len(listed["sessions"]) == 1
    assert listed["sessions"][0]["status"] == "finished"
    assert (await call("listSessions", workspace, {"status": "ready"}))["sessions"] == []


@pytest.mark.asyncio
async def test_a_fork_up_to_a_step_is_a_new_stored_session_with_that_history(workspace: Workspace) -> None:
    stored(workspace, "sess_a")
    forked = await call("forkSession", workspace, {"sessionId": "sess_a", "step": 0})
    assert forked["sessionId"] != "sess_a" and len(forked["steps"]) == 1
    again = await call("getSession", workspace, {"sessionId": forked["sessionId"]})
    assert again["steps"][0]["observations"][0]["images"] == [{"mimeType": "image/png", "bytes": 6}]
    assert (await call("listSessions", workspace, {}))["total"] == 2


@pytest.mark.asyncio
async def test_an_observation_is_answered_whole_and_an_unknown_one_is_refused_by_name(
    workspace: Workspace,
) -> None:
    stored(workspace, "sess_a")
    found = await call("getObservation", workspace, {"sessionId": "sess_a", "toolCallId": "c1"})
    assert found == {"sessionId": "sess_a", "toolCallId": "c1", "toolName": "look", "output": "saw 1",
                     "isError": False, "elapsedMs": 0.0}
    with pytest.raises(AgentError, match="c9"):
        await call("getObservation", workspace, {"sessionId": "sess_a", "toolCallId": "c9"})


@pytest.mark.asyncio
async def test_a_deleted_session_is_gone_from_the_list_and_from_every_request(workspace: Workspace) -> None:
    stored(workspace, "sess_a")
    assert await call("deleteSession", workspace, {"sessionId": "sess_a"}) == {
        "sessionId": "sess_a", "deleted": True
    }
    assert (await call("listSessions", workspace, {}))["total"] == 0
    with pytest.raises(UnknownSession):
        await call("getSession", workspace, {"sessionId": "sess_a"})


@pytest.mark.asyncio
async def test_params_that_do_not_fit_are_refused_before_any_handler_runs(workspace: Workspace) -> None:
    with pytest.raises(AgentError, match=r"agent/forkSession.*step: Input should be greater than or equal"):
        await call("forkSession", workspace, {"sessionId": "sess_a", "step": -1})
    with pytest.raises(AgentError, match=r"sessionId: String should have at least 1 character"):
        await call("getSession", workspace, {"sessionId": ""})

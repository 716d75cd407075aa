"""app.workspace.Workspace with no door: what it decides, seen through the fake client of its port."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from mini_agent.app.config import WorkspaceConfig
from mini_agent.app.options import InitOptions
from mini_agent.app.port import HeldRegistration, RecordingClient, ToolList
from mini_agent.app.workspace import Workspace
from mini_agent.core.contracts import ToolCall, ToolSpec
from mini_agent.core.events import AnswerChunk, ThoughtChunk
from mini_agent.core.session import AgentConfig, AgentSession, Decision
from mini_agent.store.sqlite import SqliteStore

STORED = [{"path": "evil.py", "function": "wipe", "requires_approval": True}]


def workspace(root: Path, client: RecordingClient, *, trusted: bool = False, **config: object) -> Workspace:
    options = InitOptions(workspace_trusted=trusted, store={"path": "sessions.db"})
    return Workspace(root, options, client, config=WorkspaceConfig(**config))  # type: ignore[arg-type]


async def closed(ws: Workspace) -> None:
    await ws.aclose()


def stored(root: Path) -> None:
    """A store that came with the workspace (a cloned repository's, say) naming a tool file."""
    store = SqliteStore(root / "sessions.db")
    store.save_registrations(STORED)
    store.close()


@pytest.mark.asyncio
async def test_an_untrusted_workspace_holds_stored_registrations_back_and_says_so(tmp_path: Path) -> None:
    stored(tmp_path)
    client = RecordingClient()
    ws = workspace(tmp_path, client)
    try:
        assert await ws.restore_tools() == []
        held = HeldRegistration.of(STORED[0])
        assert ws.tool_list() == ToolList([], [held])
        assert (held.name, held.path, held.requires_approval, held.client) == ("wipe", "evil.py", True, False)
        assert client.tool_lists == [ToolList([], [held])]  # the client is told once
    finally:
        await closed(ws)


@pytest.mark.asyncio
async def test_a_held_registration_can_be_removed_unimported_and_stays_removed(tmp_path: Path) -> None:
    stored(tmp_path)
    client = RecordingClient()
    ws = workspace(tmp_path, client)
    try:
        await ws.restore_tools()
        removed = ws.unregister("wipe")
        assert isinstance(removed, HeldRegistration) and removed.name == "wipe"
        assert client.tool_lists[-1] == ToolList([], [])
    finally:
        await closed(ws)
    again = SqliteStore(tmp_path / "sessions.db")
    assert again.load_registrations() == []
    again.close()


def test_a_held_registration_from_a_hostile_store_is_read_defensively() -> None:
    held = HeldRegistration.of({"name": 7, "requires_approval": "yes", "client": 1})
    assert (held.name, held.description, held.requires_approval, held.client) == (
        "7", "from ; loaded once the workspace is trusted", True, True
    )


@pytest.mark.parametrize(("trusted", "expected"), [(False, {"rm": Decision.REJECT_ALWAYS}), (True, None)])
def test_the_file_s_allow_list_counts_only_in_a_trusted_workspace(
    tmp_path: Path, trusted: bool, expected: dict[str, Decision] | None
) -> None:
    ws = workspace(tmp_path, RecordingClient(), trusted=trusted, allow=("ls", "rm"), reject=("rm",))
    try:
        want = expected or {"rm": Decision.REJECT_ALWAYS, "ls": Decision.ALLOW_ALWAYS}
        assert ws.standing_policy() == want  # reject wins over allow either way
    finally:
        asyncio.run(closed(ws))


@pytest.mark.asyncio
async def test_a_permission_prompt_is_the_client_s_answer_as_is(tmp_path: Path) -> None:
    client = RecordingClient(answers=[(Decision.ALLOW_ONCE, "fine"), None])
    ws = workspace(tmp_path, client)
    session = AgentSession("sess_1", "a task", AgentConfig(), [])
    call = ToolCall("call_1", "ls", {})
    spec = ToolSpec("ls", "List.", {"type": "object"})
    try:
        assert await ws.request_permission(session, call, spec) == (Decision.ALLOW_ONCE, "fine")
        assert await ws.request_permission(session, call, spec) is None  # nobody answered: the call waits
        assert client.asked == [call, call]
    finally:
        await closed(ws)


@pytest.mark.asyncio
async def test_thought_chunks_of_one_loop_turn_reach_the_client_as_one_in_order(tmp_path: Path) -> None:
    client = RecordingClient()
    ws = workspace(tmp_path, client)
    try:
        for text in ("a", "b", "c"):
            ws._on_update(ThoughtChunk("s", 0, text))
        assert client.events == []  # held until the loop's next turn
        ws._on_update(AnswerChunk("s", 0, "done"))  # anything else flushes them first
        assert client.events == [ThoughtChunk("s", 0, "abc"), AnswerChunk("s", 0, "done")]
        await asyncio.sleep(0)
        assert len(client.events) == 2
    finally:
        await closed(ws)

"""A session's permission mode as the approvals take it, and `AgentRuntime.configure`: a change applies
from the next model turn, is stored with the session, goes out as an event and is replayed where it
happened; a session stored before the mode existed reads back with the default."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import pytest
from mini_agent.core.approvals import with_mode
from mini_agent.core.contracts import LLMConfig, LLMResponse, Message, ToolSpec
from mini_agent.core.events import AgentEvent, ConfigChanged
from mini_agent.core.runtime import AgentRuntime
from mini_agent.core.session import AgentConfig, Ask, Decision, PermissionMode
from mini_agent.core.trajectory import replay
from mini_agent.store import codec

from ...support.fakes import ECHO, RISKY, Approver, MemoryStore, Tools, action, answer, call

ALWAYS, NEEDED, NEVER = PermissionMode.ASK_ALWAYS, PermissionMode.ASK_WHEN_NEEDED, PermissionMode.ASK_NEVER


@pytest.mark.parametrize(("ask", "mode", "standing", "expected"), [
    (Ask.NEVER, NEEDED, None, Ask.NEVER),
    (Ask.UNLESS_STANDING, NEEDED, None, Ask.UNLESS_STANDING),
    (Ask.NEVER, ALWAYS, None, Ask.UNLESS_STANDING),  # a read-only tool asks
    (Ask.NEVER, ALWAYS, Decision.ALLOW_ALWAYS, Ask.UNLESS_STANDING),  # and a standing answer answers it
    (Ask.UNLESS_STANDING, NEVER, None, Ask.NEVER),
    (Ask.UNLESS_STANDING, NEVER, Decision.ALLOW_ALWAYS, Ask.NEVER),
    (Ask.UNLESS_STANDING, NEVER, Decision.REJECT_ALWAYS, Ask.UNLESS_STANDING),  # a standing reject rejects
    (Ask.EVERY_TIME, NEVER, None, Ask.EVERY_TIME),  # outside the workspace: asked in every mode
    (Ask.EVERY_TIME, ALWAYS, None, Ask.EVERY_TIME),
])
def test_the_mode_combines_with_how_the_call_would_be_decided(
    ask: Ask, mode: PermissionMode, standing: Decision | None, expected: Ask
) -> None:
    assert with_mode(ask, mode, standing) is expected


class Recording:
    """A model that answers from a script and records the model name of each request."""

    def __init__(self, *replies: LLMResponse) -> None:
        self.replies = list(replies)
        self.models: list[str] = []

    async def generate(
        self, messages: Sequence[Message], tools: Sequence[ToolSpec], config: LLMConfig, *_: Any, **__: Any
    ) -> LLMResponse:
        self.models.append(config.model)
        return self.replies.pop(0)


@pytest.mark.asyncio
async def test_ask_always_asks_of_a_read_only_call_and_ask_never_of_none() -> None:
    approver = Approver((Decision.ALLOW_ONCE, None))
    model = Recording(action(call("echo", 1, text="a")), action(call("wipe", 2)), answer("done"))
    runtime = AgentRuntime(model, Tools(ECHO, RISKY), approver=approver)
    session = runtime.start_session("t", permission_mode=ALWAYS)
    await runtime.step(session.session_id, wait_for_approval=True)
    runtime.configure(session.session_id, permission_mode=NEVER)
    await runtime.run(session.session_id)
    assert approver.asked == ["echo"]


@pytest.mark.asyncio
async def test_configure_applies_from_the_next_turn_is_stored_and_replayed_where_it_happened() -> None:
    events: list[AgentEvent] = []
    store = MemoryStore()
    model = Recording(action(call("echo", 1, text="a")), answer("done"))
    runtime = AgentRuntime(model, Tools(ECHO), store=store, events=events.append,
                           defaults=AgentConfig(llm=LLMConfig(model="first")))
    sid = runtime.start_session("t").session_id
    await runtime.step(sid)
    changed = runtime.configure(sid, model="second", tool_mode="json", permission_mode=ALWAYS)
    assert runtime.configure(sid, model="second") is changed and len(changed.config.changes) == 1
    await runtime.step(sid)
    assert model.models == ["first", "second"]
    live = [e for e in events if isinstance(e, ConfigChanged)]
    message = "Model: second; Tool mode: json; Permission mode: Ask before every tool call"
    assert [(e.step, e.model, e.tool_mode, e.permission_mode, e.message) for e in live] == [
        (1, "second", "json", ALWAYS, message)
    ]
    stored = store.load(sid)
    assert stored is not None and stored.config.permission_mode is ALWAYS
    replayed = replay(stored)
    assert [e for e in replayed if isinstance(e, ConfigChanged)] == live
    first_of_step_1 = next(n for n, e in enumerate(replayed) if e.step == 1)
    assert isinstance(replayed[first_of_step_1], ConfigChanged)


def test_a_config_stored_before_the_permission_mode_reads_back_with_the_default() -> None:
    stored = json.loads(codec.dumps(AgentConfig()))
    del stored["permission_mode"], stored["changes"]
    config = codec.loads(AgentConfig, json.dumps(stored))
    assert config.permission_mode is NEEDED and config.changes == ()
    changed = AgentConfig(permission_mode=NEVER)
    assert codec.loads(AgentConfig, codec.dumps(changed)) == changed

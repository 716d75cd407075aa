"""The ACP door in one process: the SDK's client side over an in-memory line pair to `acp.connect`, the
workspace's model server a function (`llm.fake.FakeTransport` under the model client, a lister's
`ask`). No socket, no process: what runs is the door's own edge (`LineTransport`), the SDK's router,
`MiniAgent`, the app and the core, as `mini-agent acp` runs them."""

from __future__ import annotations

import asyncio
import io
import json
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from acp import RequestError
from acp.client.connection import ClientSideConnection
from acp.helpers import (
    embedded_text_resource,
    image_block,
    resource_block,
    resource_link_block,
    text_block,
)
from mini_agent.acp import connect
from mini_agent.app.model_choices import ModelAccess
from mini_agent.llm.client import OpenAICompatibleClient
from mini_agent.llm.fake import FakeReply, FakeTransport, Request
from mini_agent.llm.models import ModelList, ModelLister
from mini_agent.plumbing.pipes import SafeWriter

from ...support.acp import Recorder, dump, said, text
from ...support.completions import sse, whole

BASE = "http://model.invalid/v1"
LISTED = ("tiny", "large")
Model = Callable[[Request], Awaitable[FakeReply]]


class DoorOutput(io.RawIOBase):
    """The door's stdout: each line it writes, decoded, onto `lines` (on the loop, whichever thread
    wrote it)."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.lines: asyncio.Queue[dict[str, Any] | None] = asyncio.Queue()
        self._loop = loop
        self._partial = b""

    def writable(self) -> bool:
        return True

    def write(self, data: Any) -> int:
        self._partial += bytes(data)
        *whole_lines, self._partial = self._partial.split(b"\n")
        for line in whole_lines:
            self._loop.call_soon_threadsafe(self.lines.put_nowait, json.loads(line))
        return len(data)


@dataclass
class ClientEnd:
    """The client's end of the pair, an SDK `Transport`: what it sends is a line on the door's stdin;
    what it receives is kept in `seen` too."""

    stdin: asyncio.StreamReader
    stdout: DoorOutput
    seen: list[dict[str, Any]] = field(default_factory=list)

    async def send(self, message: dict[str, Any]) -> None:
        self.stdin.feed_data(json.dumps(message).encode() + b"\n")

    async def receive(self) -> dict[str, Any] | None:
        message = await self.stdout.lines.get()
        if message is not None:
            self.seen.append(message)
        return message

    async def close(self) -> None:
        if not self.stdin.at_eof():
            self.stdin.feed_eof()


@dataclass
class ModelServer:
    """The workspace's model server: `answer` answers each chat completion; the requests are kept."""

    answer: Model
    requests: list[dict[str, Any]] = field(default_factory=list)

    async def __call__(self, request: Request) -> FakeReply:
        self.requests.append(request.json())
        return await self.answer(request)


def replying(*texts: str) -> Model:
    """A model that answers the n-th request with `texts[n]`, streamed when asked to stream."""
    replies = iter(texts)

    async def answer(request: Request) -> FakeReply:
        reply = next(replies)
        return sse(reply) if request.json().get("stream") else whole(reply)

    return answer


async def listing(server: str, api_key: str | None) -> ModelList:
    return ModelList(server, LISTED, answered=True)


@dataclass
class Door:
    """The client's side of a running door: its connection, what it recorded, the raw line end."""

    client: ClientSideConnection
    recorder: Recorder
    end: ClientEnd
    root: Path

    async def new_session(self) -> Any:
        return await self.client.new_session(cwd=str(self.root), mcp_servers=[])

    async def prompt(self, session_id: str, words: str) -> Any:
        return await self.client.prompt(session_id=session_id, prompt=text(words))


@asynccontextmanager
async def door(tmp_path: Path, model: ModelServer, monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[Door]:
    """`mini-agent acp --trust` in this process for the folder `tmp_path/ws`, initialized."""
    root = tmp_path / "ws"
    root.mkdir(exist_ok=True)
    (root / "pyproject.toml").write_text(
        f'[tool.mini-agent.llm]\nbase_url = "{BASE}"\nmodel = "tiny"\ntool_mode = "react"\n'
        "context_window = 8192\n",
        encoding="utf-8",
    )
    env = {"HOME": str(tmp_path / "home"), "MINI_AGENT_STATE_DIR": str(tmp_path / "state"),
           "XDG_CONFIG_HOME": str(tmp_path / "config")}  # fmt: skip
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    stdin = asyncio.StreamReader()
    stdout = DoorOutput(asyncio.get_running_loop())
    access = ModelAccess(
        client=OpenAICompatibleClient(transport=FakeTransport(model)), lister=ModelLister(ask=listing)
    )
    agent, connection = connect(stdin, SafeWriter(stdout, newline=True), trusted=True, env=env, access=access)
    serving = asyncio.ensure_future(connection.main_loop())
    end = ClientEnd(stdin, stdout)
    recorder = Recorder()
    client = ClientSideConnection(recorder, end)
    try:
        await client.initialize(protocol_version=1)
        yield Door(client, recorder, end, root)
    finally:
        await agent.aclose()
        await connection.close()
        serving.cancel()
        await asyncio.gather(serving, return_exceptions=True)


@pytest.mark.asyncio
async def test_a_prompt_is_answered_in_process_and_the_listed_models_are_offered(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    model = ModelServer(replying("Thought: I know this.\nFinal Answer: four"))
    async with door(tmp_path, model, monkeypatch) as running:
        session = await running.new_session()
        answer = await running.prompt(session.session_id, "What is 2 + 2?")
    offered = {option["id"]: option for option in dump(session)["configOptions"]}
    assert [o["value"] for o in offered["model"]["options"]] == list(LISTED)
    assert offered["model"]["currentValue"] == "tiny"
    assert answer.stop_reason == "end_turn"
    assert said(running.recorder.of(session.session_id)) == "four"
    (request,) = model.requests
    assert request["model"] == "tiny" and request["messages"][-1]["content"] == "What is 2 + 2?"


@pytest.mark.asyncio
async def test_a_model_the_server_does_not_list_is_refused_with_the_choices_and_the_door_answers_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    model = ModelServer(replying("Final Answer: still here"))
    async with door(tmp_path, model, monkeypatch) as running:
        session = await running.new_session()
        with pytest.raises(RequestError) as refused:
            await running.client.set_config_option(
                config_id="model", session_id=session.session_id, value="huge"
            )
        answer = await running.prompt(session.session_id, "Still there?")
    assert "'huge' is not one to choose" in str(refused.value)
    assert "'tiny', 'large'" in str(refused.value)
    assert answer.stop_reason == "end_turn" and said(running.recorder.of(session.session_id)) == "still here"
    assert model.requests[0]["model"] == "tiny"


@pytest.mark.asyncio
async def test_a_prompt_for_a_session_nobody_started_is_an_error_naming_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    model = ModelServer(replying())
    async with door(tmp_path, model, monkeypatch) as running:
        with pytest.raises(RequestError) as refused:
            await running.prompt("no-such-session", "hello")
    assert "no-such-session" in str(refused.value)
    assert model.requests == []


@pytest.mark.asyncio
async def test_cancel_ends_a_prompt_waiting_on_the_model_as_cancelled(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    asked = asyncio.Event()

    async def stalls(request: Request) -> FakeReply:
        asked.set()
        await asyncio.sleep(30)
        raise AssertionError("the model was not given up on")

    model = ModelServer(stalls)
    async with door(tmp_path, model, monkeypatch) as running:
        session = await running.new_session()
        prompting = asyncio.ensure_future(running.prompt(session.session_id, "slow"))
        await asyncio.wait_for(asked.wait(), 10)
        await running.client.cancel(session_id=session.session_id)
        answer = await asyncio.wait_for(prompting, 10)
    assert answer.stop_reason == "cancelled"


@pytest.mark.asyncio
async def test_a_line_that_is_not_json_is_answered_with_a_parse_error_and_the_next_request_still_is(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    model = ModelServer(replying())
    async with door(tmp_path, model, monkeypatch) as running:
        running.end.stdin.feed_data(b'{"jsonrpc": "2.0", "id": 9, "method": \n')
        session = await running.new_session()
    errors = [message["error"] for message in running.end.seen if "error" in message]
    assert [error["code"] for error in errors] == [-32700]
    assert session.session_id


PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="


@pytest.mark.asyncio
async def test_a_prompt_of_words_resources_and_an_image_is_stored_as_its_parts_and_replayed_block_by_block(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    blocks = [
        text_block("Compare these:"),
        resource_link_block("a.py", "file:///ws/a.py", mime_type="text/x-python"),
        image_block(PNG, "image/png"),
        resource_block(embedded_text_resource("file:///ws/notes.md", "remember the milk")),
    ]
    model = ModelServer(replying("Final Answer: compared"))
    async with door(tmp_path, model, monkeypatch) as running:
        session = await running.new_session()
        await running.client.prompt(session_id=session.session_id, prompt=blocks)
    async with door(tmp_path, ModelServer(replying()), monkeypatch) as later:
        await later.client.load_session(cwd=str(later.root), session_id=session.session_id, mcp_servers=[])
    (request,) = model.requests
    assert request["messages"][-1]["content"] == (
        "Compare these:\n\n[a.py](file:///ws/a.py)\n\n"
        '<context uri="file:///ws/notes.md">\nremember the milk\n</context>'
        "\n\n[1 image attached to this message left out: this tool mode sends the model text only. "
        "Say so if the task needs what it shows.]"
    )
    replayed = later.recorder.of(session.session_id)
    user = [update["content"] for update in replayed if update["sessionUpdate"] == "user_message_chunk"]
    assert user == [dump(block) for block in blocks]


def test_the_lister_asks_through_its_ask_once_per_server() -> None:
    asked: list[str] = []

    async def ask(server: str, api_key: str | None) -> ModelList:
        asked.append(server)
        return ModelList(server, LISTED, answered=True)

    async def twice() -> tuple[ModelList, ModelList]:
        lister = ModelLister(ask=ask)
        return await lister.models(BASE + "/", None), await lister.models(BASE, None)

    first, second = asyncio.run(twice())
    assert first.ids == second.ids == LISTED and asked == [BASE]

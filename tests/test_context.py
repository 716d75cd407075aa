"""The context budget's parts: the token estimate against real tokenizers, the ReAct allowance, reading
a server's window and its refusals."""

from __future__ import annotations

import contextlib
import json
import random
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web
from mini_agent.core.budget import MESSAGE_OVERHEAD, estimate, tools_cost
from mini_agent.core.contracts import LLMConfig, LLMError, Message, Role, ToolSpec
from mini_agent.llm import react
from mini_agent.llm.client import OpenAICompatibleClient
from mini_agent.llm.window import ServerWindowProbe, overflow
from mini_agent.scripted import ReplayServer
from mini_agent.scripted.text import tokens_of

from .test_real_model import model_file

ROOT = Path(__file__).resolve().parents[1]


def corpus() -> list[tuple[str, str]]:
    """Ordinary text and code: this repository's sources and docs, and a few generated kinds."""
    paths = [
        p
        for pattern in ("server/**/*.py", "tests/*.py", "docs/*", "*.md", "editors/**/*.ts")
        for p in ROOT.glob(pattern)
        if "node_modules" not in p.parts
    ]
    texts = [(str(p.relative_to(ROOT)), p.read_text(encoding="utf-8")) for p in sorted(paths) if p.is_file()]
    rng = random.Random(7)
    rows = [{"id": i, "name": f"item{i}", "price": round(rng.random() * 100, 2)} for i in range(300)]
    texts += [
        ("json", json.dumps(rows)),
        (
            "log",
            "\n".join(
                f"2026-12-01T14:{i % 60:02d}:07Z INFO worker-{i} wrote {i * 37} rows" for i in range(300)
            ),
        ),
        ("hex", " ".join(f"{rng.getrandbits(128):032x}" for _ in range(100))),
        ("french", "Le vif renard brun saute par-dessus le chien paresseux ; ça coûte très cher. " * 40),
        ("japanese", "これは普通の日本語の文章です。テストのために書きました。" * 40),
    ]
    return [(name, text) for name, text in texts if text.strip()]


def under(count: Callable[[str], int]) -> list[tuple[str, int, int]]:
    return [(name, estimate(text), count(text)) for name, text in corpus() if estimate(text) < count(text)]


def test_the_estimate_is_never_under_the_scripted_servers_tokenizer() -> None:
    assert len(corpus()) > 50
    assert under(lambda text: len(tokens_of(text))) == []


@pytest.mark.real_model
def test_the_estimate_is_never_under_a_real_models_tokenizer() -> None:
    """SmolLM2's byte-level BPE vocabulary (the GGUF of the real-model tests), through llama.cpp."""
    import llama_cpp

    model = llama_cpp.Llama(str(model_file()), n_ctx=64, verbose=False)

    def count(text: str) -> int:
        return len(model.tokenize(text.encode(), add_bos=False, special=False))

    assert under(count) == []


def test_the_react_allowance_covers_the_instructions_a_text_mode_request_adds() -> None:
    schema = {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}
    for count in (1, 2, 8):
        tools = [ToolSpec(f"tool_{i}", "Reads a file of the workspace.", schema) for i in range(count)]
        base = "You are a careful assistant."
        added = estimate(react.build_system_prompt(base, tools)) - estimate(base)
        assert added + MESSAGE_OVERHEAD <= tools_cost(tools)


@pytest.mark.parametrize(
    ("status", "body", "window"),
    [
        (
            400,
            "This model's maximum context length is 2048 tokens. However, you requested 2100 tokens "
            "(1600 in the messages, 500 in the completion).",
            2048,
        ),  # vLLM
        (400, "Requested tokens (1200) exceed context window of 1024", 1024),  # llama-cpp-python
        (
            400,
            '{"error":{"code":400,"message":"the request exceeds the available context size, try increasing '
            'it","type":"exceed_context_size_error","n_prompt_tokens":5000,"n_ctx":4096}}',
            4096,
        ),  # llama.cpp
        (400, "prompt is too long: 210000 tokens > 200000 maximum", None),
    ],
)
def test_a_length_refusal_is_recognised_with_the_window_it_names(
    status: int, body: str, window: int | None
) -> None:
    assert overflow(status, body) == (True, window)


def test_other_errors_are_not_length_refusals() -> None:
    assert overflow(400, "this server does not support tools: remove the `tools` field") == (False, None)
    assert overflow(429, "maximum context length is 2048 tokens") == (False, None)


@pytest.mark.asyncio
async def test_the_window_is_read_from_vllms_model_list() -> None:
    async with ReplayServer({"context_limit": 3000, "model": "m"}) as server:
        probe = ServerWindowProbe()
        assert await probe.context_window(LLMConfig(base_url=server.base_url, model="m")) == 3000


@contextlib.asynccontextmanager
async def serve(routes: dict[str, Any]) -> AsyncIterator[str]:
    """A stand-in for a model server that says its window at one of these paths."""

    def answering(answer: Any) -> Callable[[web.Request], Awaitable[web.Response]]:
        async def handle(request: web.Request) -> web.Response:
            return web.json_response(answer)

        return handle

    app = web.Application()
    for path, answer in routes.items():
        app.router.add_route("*", path, answering(answer))
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    host, port = runner.addresses[0][:2]
    try:
        yield f"http://{host}:{port}/v1"
    finally:
        await runner.cleanup()


@pytest.mark.asyncio
@pytest.mark.parametrize(
    ("routes", "window"),
    [
        ({"/props": {"default_generation_settings": {"n_ctx": 1024}}}, 1024),  # llama.cpp's server
        ({"/api/show": {"model_info": {"llama.context_length": 131072}, "parameters": "num_ctx 8192"}}, 8192),
        ({"/api/show": {"model_info": {"llama.context_length": 131072}}}, 2048),  # Ollama's default num_ctx
        ({"/v1/models": {"data": [{"id": "x"}]}}, None),  # says nothing: the documented default applies
    ],
)
async def test_the_window_is_read_where_each_server_says_it(
    routes: dict[str, Any], window: int | None
) -> None:
    async with serve(routes) as base_url:
        probe = ServerWindowProbe()
        config = LLMConfig(base_url=base_url, model="x")
        assert await probe.context_window(config) == window
        assert await probe.context_window(config) == window  # cached: asked once per server and model


@pytest.mark.asyncio
async def test_a_length_refusal_is_no_refusal_of_tools_and_is_not_retried() -> None:
    """In auto mode a 400 would send the client on to another tool mode; a length refusal must not."""
    tools = [ToolSpec("note", "Take a note.", {"type": "object", "properties": {}})]
    messages = [Message(Role.SYSTEM, "Be brief."), Message(Role.USER, "word " * 3000)]
    async with ReplayServer({"context_limit": 1024}) as server, OpenAICompatibleClient() as client:
        config = LLMConfig(base_url=server.base_url, tool_mode="auto", max_tokens=100)
        with pytest.raises(LLMError) as raised:
            await client.generate(messages, tools, config)
    assert raised.value.context_overflow and raised.value.context_window == 1024
    assert len(server.exchanges) == 1 and "maximum context length is 1024 tokens" in str(raised.value)


def test_a_compaction_and_a_cut_result_survive_the_store(tmp_path: Path) -> None:
    """The model's view is rebuilt from the store alone: the compaction rides on its step's record."""
    from mini_agent.core import budget
    from mini_agent.core.contracts import Compaction, ContextUse, Observation, TokenUsage, ToolCall
    from mini_agent.core.session import AgentConfig, AgentSession, StepRecord
    from mini_agent.store.sqlite import SqliteStore

    session = AgentSession("sess_ctx", "task", AgentConfig(), [])
    session.messages += [Message(Role.SYSTEM, "system"), Message(Role.USER, "task")]
    call = ToolCall("c1", "big", {})
    shown = budget.cut("x" * 5000, 5000, "c1", budget.Window.of(1024, 256))
    observation = Observation("c1", "big", "x" * 5000, shown=shown)
    digest = budget.digest(Message(Role.TOOL, shown, tool_call_id="c1", name="big"), 5000)
    session.steps.append(
        StepRecord(
            0,
            tool_calls=[call],
            observations=[observation],
            usage=TokenUsage(300, 20),
            context=ContextUse(2, False, 1024, 700),
            compaction=Compaction(2, (digest,), digested=1, before=900, after=400),
        )
    )
    session.messages += [
        Message(Role.ASSISTANT, "a", tool_calls=(call,)),
        Message(Role.TOOL, shown, tool_call_id="c1", name="big"),
    ]
    with SqliteStore(tmp_path / "s.db") as store:
        store.save(session)
    with SqliteStore(tmp_path / "s.db") as store:
        loaded = store.load("sess_ctx")
    assert loaded is not None and loaded.steps == session.steps
    assert budget.view(loaded) == budget.view(session) and budget.view(loaded)[2] == digest
    assert budget.find_observation(loaded, "c1") == observation

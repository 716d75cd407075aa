"""Reading a model server's context window and its refusals, from a real HTTP server."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import pytest
from aiohttp import web
from mini_agent.core.contracts import LLMConfig, LLMError, Message, Role, ToolSpec
from mini_agent.llm.client import OpenAICompatibleClient
from mini_agent.llm.window import PROBE_MAX_BYTES, ServerWindowProbe
from mini_agent.scripted import ReplayServer


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
        (  # an answer past the probe's bound is not read: the next question is asked
            {
                "/v1/models": {"data": [{"id": "x", "max_model_len": 4096, "pad": "x" * PROBE_MAX_BYTES}]},
                "/props": {"default_generation_settings": {"n_ctx": 1024}},
            },
            1024,
        ),
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

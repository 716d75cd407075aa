"""`llm.models.ModelLister` against a real HTTP server: the ids kept (at most `MAX_MODEL_IDS`, each
once), an answer past `MODELS_MAX_BYTES` or not a list refused in words, the key sent to its own
server only, the list kept per base URL until refreshed."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

import pytest
from aiohttp import web
from mini_agent.llm import models
from mini_agent.llm.models import MAX_MODEL_ID_CHARS, MAX_MODEL_IDS, MODELS_MAX_BYTES, ModelLister

Answer = Callable[[], web.StreamResponse]


@asynccontextmanager
async def serving(answer: Answer) -> AsyncIterator[tuple[str, list[dict[str, str]]]]:
    """A server whose GET /v1/models gives `answer()`; yields its base URL and each request's headers."""
    seen: list[dict[str, str]] = []

    async def models(request: web.Request) -> web.StreamResponse:
        seen.append(dict(request.headers))
        return answer()

    app = web.Application()
    app.router.add_get("/v1/models", models)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    host, port = runner.addresses[0][:2]
    try:
        yield f"http://{host}:{port}/v1", seen
    finally:
        await runner.cleanup()


def listing(ids: list[Any]) -> Answer:
    return lambda: web.json_response({"data": [{"id": i} for i in ids]})


@pytest.mark.asyncio
async def test_ids_are_kept_once_in_order_and_bounded() -> None:
    ids = ["b", "a", "b", 7, "", "x" * (MAX_MODEL_ID_CHARS + 1), *(f"m{n}" for n in range(MAX_MODEL_IDS + 5))]
    async with serving(listing(ids)) as (url, _):
        found = await ModelLister().models(url + "/", None)
    assert found.problem is None and found.base_url == url
    assert found.ids[:3] == ("b", "a", "m0") and len(found.ids) == MAX_MODEL_IDS


@pytest.mark.asyncio
@pytest.mark.parametrize(("answer", "said"), [
    (lambda: web.Response(body=b"x" * (MODELS_MAX_BYTES + 1)), f"more than {MODELS_MAX_BYTES}"),
    (lambda: web.Response(text="<html>"), "is not JSON"),
    (lambda: web.json_response({"models": ["a"]}), "lists no models"),
    (listing([]), "lists no models"),
    (lambda: web.Response(status=404), "HTTP 404"),
])
async def test_an_answer_that_lists_nothing_says_why(answer: Answer, said: str) -> None:
    async with serving(answer) as (url, _):
        found = await ModelLister().models(url, None)
    assert found.ids == () and found.problem is not None
    assert found.problem.startswith(f"the model server at {url} ") and said in found.problem


@pytest.mark.asyncio
async def test_the_list_is_kept_until_refreshed_and_the_key_goes_along() -> None:
    ids = ["a"]
    async with serving(lambda: web.json_response({"data": [{"id": i} for i in ids]})) as (url, seen):
        lister = ModelLister()
        first = await lister.models(url, "sk-own")
        ids.append("b")
        kept = await lister.models(url, "sk-own")
        fresh = await lister.models(url, None, refresh=True)
    assert first.ids == kept.ids == ("a",) and fresh.ids == ("a", "b")
    assert lister.known(url) == fresh
    assert [h.get("Authorization") for h in seen] == ["Bearer sk-own", None]


@pytest.mark.asyncio
@pytest.mark.parametrize(("retry_after", "listed"), [(3600.0, ()), (0.0, ("late",))])
async def test_an_answer_that_listed_nothing_stands_a_while_then_the_server_is_asked_again(
    monkeypatch: pytest.MonkeyPatch, retry_after: float, listed: tuple[str, ...]
) -> None:
    monkeypatch.setattr(models, "RETRY_AFTER_SEC", retry_after)
    ids: list[str] = []
    async with serving(lambda: web.json_response({"data": [{"id": i} for i in ids]})) as (url, _):
        lister = ModelLister()
        first = await lister.models(url, None)
        ids.append("late")  # the server came up with a model since
        second = await lister.models(url, None)
    assert first.ids == () and second.ids == listed

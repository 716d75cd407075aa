"""The models a model server offers: `GET {base_url}/models`, as vLLM, llama.cpp, Ollama and OpenAI
answer it (`{"data": [{"id": ...}, ...]}`).

Asked once per base URL and kept (`refresh` asks again; an answer that listed nothing is kept
`RETRY_AFTER_SEC`, so a server started later is found), bounded in time (`MODELS_TIMEOUT_SEC`), in
the bytes read (`MODELS_MAX_BYTES`) and in the ids kept (`MAX_MODEL_IDS`, each at most
`MAX_MODEL_ID_CHARS`). A server that is down, slow, answers junk or lists nothing gives no ids and a
sentence saying why, so a picker can offer the configured model alone and say so.

A model id is data from another program, shown in pickers and terminals: one holding a control
character (C0, DEL, C1: an escape sequence, a NUL, a newline) or a bidirectional-text control
(U+202A–U+202E, U+2066–U+2069, U+200E, U+200F, U+061C) is left out of the list and logged (`unsafe`),
and the doors refuse such a name where a client sets a session's model.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from mini_agent.llm import side

log = logging.getLogger(__name__)

MODELS_TIMEOUT_SEC = 2.0
MODELS_MAX_BYTES = 1 << 20
MAX_MODEL_IDS = 1000  # the first ones the server lists; the rest are left out
MAX_MODEL_ID_CHARS = 256  # a longer id is left out
RETRY_AFTER_SEC = 30.0  # how long an answer that listed nothing stands before the server is asked again
BIDI_CONTROLS = frozenset("\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")


def unsafe(name: str) -> str | None:
    """Why `name` cannot be a model's name (its first control or bidi character, as U+XXXX and where),
    or None when it can."""
    for index, char in enumerate(name):
        code = ord(char)
        if code < 0x20 or 0x7F <= code <= 0x9F:
            return f"it holds the control character U+{code:04X} at position {index}"
        if char in BIDI_CONTROLS:
            return f"it holds the bidirectional-text control U+{code:04X} at position {index}"
    return None


@dataclass(frozen=True, slots=True)
class ModelList:
    """What a server listed (`ids`, in its order), or why nothing (`problem`, in words); `answered`:
    it answered with a model list (an empty one too), so it is up and takes the key it was given."""

    base_url: str
    ids: tuple[str, ...] = ()
    problem: str | None = None
    answered: bool = False
    at: float = field(default_factory=time.monotonic, compare=False)

    def stale(self) -> bool:
        return not self.ids and time.monotonic() - self.at > RETRY_AFTER_SEC


Ask = Callable[[str, "str | None"], Awaitable["ModelList"]]  # (base URL, API key) -> what it lists


class ModelLister:
    """`GET /models` per base URL over HTTP (aiohttp, imported on first use), kept per base URL.
    `ask` stands in for the HTTP request (a test's model server without a socket); the keeping, the
    sharing of one question and the retry of an empty answer are the same either way."""

    def __init__(self, timeout_sec: float = MODELS_TIMEOUT_SEC, *, ask: Ask | None = None) -> None:
        self._timeout = timeout_sec
        self._asker: Ask = ask or self._ask
        self._known: dict[str, ModelList] = {}
        self._asking: dict[str, asyncio.Future[ModelList]] = {}

    def known(self, base_url: str) -> ModelList | None:
        """The list kept for `base_url`, without asking; None when it was never asked."""
        return self._known.get(_server(base_url))

    async def models(self, base_url: str, api_key: str | None, *, refresh: bool = False) -> ModelList:
        """The server's list; `api_key` goes to this server only (the caller's word on whose it is).
        Questions for one server at once share one request."""
        server = _server(base_url)
        kept = self._known.get(server)
        if not refresh and kept is not None and not kept.stale():
            return kept
        asking = self._asking.get(server)
        if asking is None:
            asking = self._asking[server] = asyncio.ensure_future(self._asker(server, api_key))
            asking.add_done_callback(lambda _: self._asking.pop(server, None))
        found = await asyncio.shield(asking)
        self._known[server] = found
        return found

    async def _ask(self, server: str, api_key: str | None) -> ModelList:
        import aiohttp

        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        timeout = aiohttp.ClientTimeout(total=self._timeout)
        where = f"the model server at {server}"
        try:
            async with (
                aiohttp.ClientSession(timeout=timeout, headers=headers) as http,
                http.get(server + "/models") as resp,
            ):
                if resp.status != 200:
                    return ModelList(server, problem=f"{where} answered GET /models with HTTP {resp.status}")
                data = await side.bounded_json(resp, MODELS_MAX_BYTES)
        except TimeoutError:
            return ModelList(server, problem=f"{where} did not answer in {self._timeout:g} s")
        except aiohttp.ClientError as exc:
            return ModelList(server, problem=f"{where} could not be reached ({type(exc).__name__}: {exc})")
        except ValueError as exc:
            return ModelList(server, problem=f"{where} answered GET /models with no model list: {exc}")
        ids = model_ids(data)
        if not ids:
            return ModelList(server, problem=f"{where} lists no models", answered=True)
        return ModelList(server, ids, answered=True)


def model_ids(data: Any) -> tuple[str, ...]:
    """The ids of an OpenAI-shaped list, each once, at most `MAX_MODEL_IDS`; () for anything else.
    An id holding a control or bidi character (`unsafe`) is left out, and logged."""
    entries = data.get("data") if isinstance(data, dict) else None
    if not isinstance(entries, list):
        return ()
    ids: dict[str, None] = {}
    for entry in entries:
        found = entry.get("id") if isinstance(entry, dict) else None
        if isinstance(found, str) and found and len(found) <= MAX_MODEL_ID_CHARS:
            if (why := unsafe(found)) is not None:
                log.warning("the model server lists a model id that is left out: %s: %a", why, found[:80])
                continue
            ids.setdefault(found)
            if len(ids) >= MAX_MODEL_IDS:
                break
    return tuple(ids)


def _server(base_url: str) -> str:
    return base_url.rstrip("/")

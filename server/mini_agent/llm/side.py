"""Side requests to a model server (the context-window probe, the model list): their answers read as
JSON within a byte bound, so a server that answers without end costs at most that bound.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import aiohttp


async def bounded_json(resp: aiohttp.ClientResponse, limit: int) -> Any:
    """The answer's JSON; ValueError past `limit` bytes (announced or sent), or when it is no JSON."""
    if resp.content_length is not None and resp.content_length > limit:
        raise ValueError(f"the answer announced {resp.content_length} bytes, more than {limit}")
    raw = bytearray()
    async for chunk in resp.content.iter_any():
        raw += chunk
        if len(raw) > limit:
            raise ValueError(f"the answer passed {limit} bytes")
    try:
        return json.loads(raw)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ValueError(f"the answer is not JSON ({exc})") from None


CHECK_MAX_BYTES = 1 << 20


async def chat_check(base_url: str, model: str, api_key: str | None, *, timeout_sec: float) -> str | None:
    """Ask the server for one token of chat from `model` (what `mini-agent setup` tries before it
    saves): None when it answered with a completion, else why not, in words. Bounded in time and in
    the bytes read; `api_key` goes to this server only (the caller's word on whose it is)."""
    import aiohttp

    server = base_url.rstrip("/")
    body = {"model": model, "messages": [{"role": "user", "content": "Say OK."}], "max_tokens": 1}
    headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
    where = f"the model server at {server}"
    try:
        async with (
            aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=timeout_sec), headers=headers) as http,
            http.post(server + "/chat/completions", json=body) as resp,
        ):
            data = await bounded_json(resp, CHECK_MAX_BYTES)
            if resp.status != 200:
                words = data.get("error", data) if isinstance(data, dict) else data
                return f"{where} answered HTTP {resp.status}: {str(words)[:200]}"
    except TimeoutError:
        return f"{where} did not answer a chat request in {timeout_sec:g} s"
    except aiohttp.ClientError as exc:
        return f"{where} could not be reached ({type(exc).__name__}: {exc})"
    except ValueError as exc:
        return f"{where} answered a chat request with no completion: {exc}"
    choices = data.get("choices") if isinstance(data, dict) else None
    if not isinstance(choices, list) or not choices:
        return f"{where} answered a chat request with no choices"
    return None

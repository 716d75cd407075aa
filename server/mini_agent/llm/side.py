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

"""The model server's context window: asked of the server where it says, and read off its refusals.

vLLM reports `max_model_len` in `/v1/models`; llama.cpp's own server `n_ctx` in `/props`; Ollama the
`num_ctx` set in a model's parameters (`/api/show`), else it runs with its default of 2048 (older
releases; newer ones give more, so 2048 stays on the safe side). Every question has a short timeout
and a bound on the answer's size, and each answer — none included — is kept per base URL and model.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from mini_agent.core.contracts import LLMConfig
from mini_agent.llm import side

if TYPE_CHECKING:
    pass

PROBE_TIMEOUT_SEC = 2.0
PROBE_MAX_BYTES = 1 << 20  # an answer past this says nothing usable: the next question is asked
OLLAMA_DEFAULT_CTX = 2048

# How servers word a prompt longer than their window (vLLM, llama.cpp, llama-cpp-python, Ollama, OpenAI).
_OVERFLOW = re.compile(
    r"maximum context length|context length|context window|context size|exceed_context_size|n_ctx"
    r"|too many tokens|prompt is too long",
    re.IGNORECASE,
)
_WINDOW = re.compile(
    r"(?:maximum context length is|context window of|\"n_ctx\"\s*:\s*|context size of)\s*(\d+)",
    re.IGNORECASE,
)


def overflow(status: int, body: str) -> tuple[bool, int | None]:
    """Whether an error answer refuses the prompt as too long, and the window it names (if any)."""
    if status not in (400, 413, 422, 500) or not _OVERFLOW.search(body):
        return False, None
    found = _WINDOW.search(body)
    return True, int(found.group(1)) if found else None


class ServerWindowProbe:
    """`ports.WindowProbe` over HTTP (aiohttp, imported on first use)."""

    def __init__(self, timeout_sec: float = PROBE_TIMEOUT_SEC) -> None:
        self._timeout = timeout_sec
        self._known: dict[tuple[str, str], int | None] = {}

    async def context_window(self, config: LLMConfig) -> int | None:
        key = (config.base_url, config.model)
        if key not in self._known:
            self._known[key] = await self._ask(config)
        return self._known[key]

    async def _ask(self, config: LLMConfig) -> int | None:
        import aiohttp

        base = config.base_url.rstrip("/")
        root = base[: -len("/v1")] if base.endswith("/v1") else base
        headers = {"Authorization": f"Bearer {config.api_key}"} if config.api_key else {}
        timeout = aiohttp.ClientTimeout(total=self._timeout)
        async with aiohttp.ClientSession(timeout=timeout, headers=headers) as http:
            asks: list[tuple[str, str, dict[str, str] | None, Callable[[Any], int | None]]] = [
                ("GET", base + "/models", None, functools.partial(_vllm, model=config.model)),
                ("GET", root + "/props", None, _llama_cpp),
                ("POST", root + "/api/show", {"model": config.model}, _ollama),
            ]
            for method, url, body, read in asks:
                try:
                    async with http.request(method, url, json=body) as resp:
                        if resp.status != 200:
                            continue
                        found = read(await side.bounded_json(resp, PROBE_MAX_BYTES))
                except (aiohttp.ClientError, TimeoutError, ValueError):
                    continue
                if isinstance(found, int) and found > 0:
                    return found
        return None


def _vllm(data: Any, model: str) -> int | None:
    models = data.get("data") if isinstance(data, dict) else None
    if not isinstance(models, list):
        return None
    lengths = {m.get("id"): m.get("max_model_len") for m in models if isinstance(m, dict)}
    found = lengths.get(model) or next((v for v in lengths.values() if v), None)
    return found if isinstance(found, int) else None


def _llama_cpp(data: Any) -> int | None:
    if not isinstance(data, dict):
        return None
    settings = data.get("default_generation_settings")
    found = settings.get("n_ctx") if isinstance(settings, dict) else data.get("n_ctx")
    return found if isinstance(found, int) else None


def _ollama(data: Any) -> int | None:
    if not isinstance(data, dict) or "model_info" not in data:
        return None
    found = re.search(r"num_ctx\s+(\d+)", str(data.get("parameters") or ""))
    return int(found.group(1)) if found else OLLAMA_DEFAULT_CTX

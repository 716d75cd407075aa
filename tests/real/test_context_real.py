"""The context budget against a real model server: llama.cpp (llama-cpp-python) with a 1024-token
window, and a tool that returns 100 KB. Set-up: `scripts/real-model.sh` (fails, never skips, without it)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from ..support.llama import MODEL_ALIAS, LlamaServer, start_llama, within

pytestmark = pytest.mark.real_model

DUMP = '''
def dump_log() -> str:
    """The whole build log."""
    return "".join(f"{n:05d} compiled module {n} without warnings\\n" for n in range(1, 4000))[:100_000]
'''
# The 135M model copies a format it is shown: this makes it call the tool most of the time.
TASK = "Write only these three lines:\nThought: I need the log.\nAction: dump_log\nAction Input: {}"
STEPS = 4


@pytest.fixture
def small_llama(tmp_path: Path) -> Iterator[LlamaServer]:
    server = start_llama(tmp_path, interrupt_requests=False, n_ctx=1024)
    yield server
    server.stop()


@pytest.mark.asyncio
@pytest.mark.parametrize(
    ("stream", "window"),
    [
        # llama-cpp-python says its window nowhere, and a streamed refusal is only a cut stream: set it
        (True, 1024),
        # unset, the window is learnt from its first refusal (HTTP 400, vLLM's words)
        (False, None),
    ],
)
async def test_a_100_kb_result_in_a_1024_token_llama_cpp_window_raises_no_context_error(
    workspace: Path,
    daemon_factory: Callable[..., Any],
    small_llama: LlamaServer,
    stream: bool,
    window: int | None,
) -> None:
    (workspace / "dump.py").write_text(DUMP)
    llm = {
        "baseUrl": small_llama.base_url,
        "model": MODEL_ALIAS,
        "temperature": 0.0,
        "maxTokens": 64,
        "timeoutSec": 300,
        "stream": stream,
        "contextWindow": window,
    }
    client = await daemon_factory(
        {"llm": llm, "tools": {"maxOutputBytes": 1024 * 1024}, "store": {"enabled": False}, "maxSteps": STEPS}
    )
    await within(client.request("agent/registerTool", {"path": "dump.py"}))
    started = await within(client.request("agent/startSession", {"task": TASK}))
    steps = [await within(client.request("agent/step", {"sessionId": started["sessionId"]}))]
    while steps[-1]["status"] != "finished" and len(steps) < STEPS:
        steps.append(await within(client.request("agent/step", {"sessionId": started["sessionId"]})))
    trace = "\n".join(f"{s['index']}: {s['stopReason']} {s['error']} {s['toolCalls']}" for s in steps)
    assert all(s["error"] is None and s["stopReason"] not in ("max_tokens", "error") for s in steps), trace
    cut = [o for s in steps for o in s["observations"] if o["toolName"] == "dump_log"]
    assert cut, f"the model never called the tool:\n{trace}"
    assert cut[0]["truncated"] and cut[0]["fullLength"] == 100_000 and len(cut[0]["output"]) < 5000
    assert len(steps) >= 2, trace  # the session went on past the 100 KB result
    usage = [u["update"] for u in client.updates if u["update"]["kind"] == "usage_update"]
    assert usage and usage[-1]["size"] == 1024, usage  # set, or learnt from the refusal
    # where the server counted (it does not when streaming), the window held the request and reply
    assert all(u["used"] <= 1024 for u in usage if u["usage"]["promptTokens"]), usage

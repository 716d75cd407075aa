"""Each tool mode against a capable small model: Qwen2.5-Coder-1.5B-Instruct (Q4_K_M) on llama-cpp-python.

One short session per mode (react, json, native, auto): the seed task of the example workspace, once, at
temperature 0, through the daemon. Each must end cleanly — a final answer, or a clean stop (the step budget,
the loop detector) — with no error step and no crash. Whether the answer is right is the benchmark's
question (bench/agents: success rates over many runs), not a test's: a test asserting a sampled model's
success would be flaky or would pin the model.

Set-up: `scripts/real-model.sh` (it fetches the 1.1 GB model into the user cache once per machine). These
tests fail rather than skip without it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest
from mini_agent.cli.demo import TASK

from ..support.daemon import AgentTestClient
from ..support.llama import QWEN, REQUEST_TIMEOUT, LlamaServer, start_llama, within

pytestmark = pytest.mark.real_model

MAX_STEPS = 5  # the seed task takes 3 (list, count, answer), 4 with a repaired call
CLEAN_ENDS = {"end_turn", "max_turn_requests", "loop_detected"}


@pytest.fixture(scope="module")
def qwen(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LlamaServer]:
    server = start_llama(tmp_path_factory.mktemp("qwen"), interrupt_requests=False, n_ctx=8192, model=QWEN)
    yield server
    server.stop()


def show(steps: list[dict[str, Any]]) -> str:
    """What the model did, printed on failure (and with -s)."""
    return "\n".join(
        f"--- step {s['index']} {s['toolMode']} stop={s['stopReason']} error={s['error']!r}\n"
        f"thought={s['thought'][:200]!r} final={s['finalAnswer']!r}\n"
        f"calls={[(c['name'], c['rawArguments']) for c in s['toolCalls']]}\n"
        f"observations={[o['output'][:160] for o in s['observations']]}"
        for s in steps
    )


@pytest.mark.asyncio
@pytest.mark.parametrize("mode", ["react", "json", "native", "auto"])
async def test_the_seed_task_ends_cleanly(mode: str, qwen: LlamaServer,
                                          daemon_factory: Callable[..., Any]) -> None:
    llm = {"baseUrl": qwen.base_url, "model": qwen.model, "toolMode": mode, "temperature": 0.0,
           "maxTokens": 256, "timeoutSec": REQUEST_TIMEOUT}
    client: AgentTestClient = await daemon_factory({"llm": llm, "store": {"enabled": False},
                                                    "maxSteps": MAX_STEPS})
    await within(client.request("agent/registerTool", {"path": "tools.py"}))
    started = await within(client.request("agent/startSession", {"task": TASK}))
    session_id = started["sessionId"]
    steps: list[dict[str, Any]] = []
    while not steps or steps[-1]["status"] != "finished":
        assert len(steps) < MAX_STEPS, f"still not finished after the step budget:\n{show(steps)}"
        steps.append(await within(client.request("agent/step", {"sessionId": session_id})))
    print(show(steps))

    assert all(step["error"] is None for step in steps), show(steps)
    last = steps[-1]
    assert last["stopReason"] in CLEAN_ENDS, show(steps)
    if last["stopReason"] == "end_turn":
        assert last["finalAnswer"] and last["finalAnswer"].strip(), show(steps)
    session = await within(client.request("agent/getSession", {"sessionId": session_id}))
    assert session["status"] == "finished" and session["stopReason"] == last["stopReason"]

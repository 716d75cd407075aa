"""What SmolLM2-135M does in json tool mode: the seed task N times against llama-cpp-python.

    scripts/real-model.sh .venv
    PYTHONPATH=server:clients/python:. .venv/bin/python bench/bench_real_json.py [--runs 10] [--temperature 0]

Each run is a new session in one daemon (so the `json_object` form, learned from the server's refusal of
`json_schema`, is reused). Prints every step — tool, arguments, the start of the observation, or the
answer — and a summary: how many runs ran a tool with schema-valid arguments, how they ended, and whether
any reply failed to parse.
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

from mini_agent.cli.demo import TASK
from mini_agent_client import AgentClient

from tests.support.llama import MODEL_ALIAS, executed_calls, start_llama

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "server" / "mini_agent" / "examples" / "workspace"


def describe(step: dict[str, Any]) -> str:
    if step["finalAnswer"] is not None:
        return f"answer {step['finalAnswer']!r}"
    if not step["toolCalls"]:
        return f"format error: {step['observations'][0]['output'][:80]!r}"
    outputs = {o["toolCallId"]: o["output"] for o in step["observations"]}
    return "; ".join(
        f"{c['name']}({c['rawArguments']}) -> {outputs.get(c['id'], '')[:70]!r}" for c in step["toolCalls"]
    )


async def bench(base_url: str, root: Path, runs: int, temperature: float, max_steps: int) -> None:
    llm = {
        "baseUrl": base_url,
        "model": MODEL_ALIAS,
        "toolMode": "json",
        "temperature": temperature,
        "maxTokens": 256,
        "timeoutSec": 300,
    }
    options = {"llm": llm, "store": {"enabled": False}, "maxSteps": max_steps}
    ends: collections.Counter[str] = collections.Counter()
    tools: collections.Counter[str] = collections.Counter()
    with_tool = parse_errors = 0
    async with AgentClient.spawn(root=root, options=options) as client:
        schemas = {t["name"]: t["inputSchema"] for t in await client.register_tool("tools.py")}
        for run in range(1, runs + 1):
            started = time.monotonic()
            session_id = await client.start_session(TASK)
            steps: list[dict[str, Any]] = []
            while not steps or steps[-1]["status"] != "finished":
                steps.append(await client.step(session_id))
            print(f"run {run} ({time.monotonic() - started:.1f} s): {steps[-1]['stopReason']}")
            for step in steps:
                print(f"  step {step['index']}: thought {step['thought'][:60]!r}; {describe(step)}")
                tools.update(c["name"] for c in step["toolCalls"])
                parse_errors += any(o["toolCallId"].startswith("format-") for o in step["observations"])
            with_tool += any(executed_calls(step, schemas) for step in steps)
            ends[steps[-1]["stopReason"]] += 1
    print(f"\nruns: {runs}, temperature {temperature:g}, max steps {max_steps}")
    print(f"runs where a tool ran with schema-valid arguments: {with_tool}/{runs}")
    print(f"steps with a parse (format) error: {parse_errors}")
    print(f"ends: {dict(ends)}; tool calls: {dict(tools)}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--temperature", type=float, default=0.0)
    parser.add_argument("--max-steps", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "ws"
        shutil.copytree(EXAMPLE, root, ignore=shutil.ignore_patterns("__pycache__"))
        server = start_llama(Path(tmp), interrupt_requests=False)
        try:
            asyncio.run(bench(server.base_url, root, args.runs, args.temperature, args.max_steps))
        finally:
            server.stop()


if __name__ == "__main__":
    main()

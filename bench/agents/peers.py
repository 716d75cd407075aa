"""The agent-success suite run by mini-agent's peers on the same server and the same tasks: LangChain's
tool-calling agent (`create_agent` over `ChatOpenAI`) and smolagents' `ToolCallingAgent` (over
`OpenAIServerModel`), each given the task's workspace functions as its tools.

    .venv/bin/python bench/agents/peers.py --serve qwen --peer langchain --peer smolagents --runs 1
    .venv/bin/python bench/agents/peers.py --base-url http://127.0.0.1:8000/v1 --model qwen --tasks seed

The peers live in their own virtual environment, bench/agents/.venv (made on first use; needs the package
index), never in mini-agent's. Each run is this file started there with `--role PEER` in a fresh copy of
the workspace (its working directory), printing one JSON line: the answer, the model calls, an error. The
bench checks the answer with the task's checker and reads the prompt tokens the server computed from its
log, as bench/agents/suite.py does for mini-agent; the table has the same columns (steps = model calls).

Differences the table does not show: the peers run tools in their own process with no approval step (the
edit tasks' tools simply run), and each peer uses its framework's defaults except that LangChain's tools
turn an exception into an error message for the model (`handle_tool_error=True`), as mini-agent does.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.util
import inspect
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
VENV = HERE / ".venv"
PEERS = ["langchain>=1.0", "langchain-openai>=1.0", "smolagents>=1.20"]
ROLE_TIMEOUT = 1800.0


# -- inside the peers' venv ------------------------------------------------------------------------


def workspace_functions(files: list[str]) -> list[Callable[..., Any]]:
    """The public functions each tools file defines (its `__all__` when it has one), as the daemon
    registers them; the files run with the workspace as the working directory."""
    sys.path[:0] = [os.getcwd(), str(ROOT / "server")]  # `from mini_agent import tool` in the files
    functions: list[Callable[..., Any]] = []
    for number, file in enumerate(files):
        spec = importlib.util.spec_from_file_location(f"workspace_tools_{number}", Path(file).resolve())
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        names = getattr(module, "__all__", None) or [
            name for name, value in vars(module).items()
            if inspect.isfunction(value) and value.__module__ == module.__name__ and not name.startswith("_")]
        functions += [getattr(module, name) for name in names]
    return functions


def role_langchain(args: argparse.Namespace) -> dict[str, Any]:
    from langchain.agents import create_agent  # type: ignore[import-not-found]
    from langchain_core.messages import AIMessage  # type: ignore[import-not-found]
    from langchain_core.tools import StructuredTool  # type: ignore[import-not-found]
    from langchain_openai import ChatOpenAI  # type: ignore[import-not-found]

    functions = workspace_functions(args.tools)
    tools = [StructuredTool.from_function(fn, handle_tool_error=True) for fn in functions]
    model = ChatOpenAI(base_url=args.base_url, api_key="none", model=args.model, temperature=args.temperature,
                       max_tokens=args.max_tokens, seed=args.seed, timeout=ROLE_TIMEOUT)
    agent = create_agent(model, tools=tools)
    state = agent.invoke({"messages": [{"role": "user", "content": args.task}]},
                         {"recursion_limit": 2 * args.max_steps + 1})
    replies = [m for m in state["messages"] if isinstance(m, AIMessage)]
    content = replies[-1].content if replies else ""
    if isinstance(content, list):
        content = "".join(part.get("text", "") if isinstance(part, dict) else str(part) for part in content)
    calls = sum(len(m.tool_calls) for m in replies)
    return {"answer": str(content), "model_calls": len(replies), "tool_calls": calls}


def role_smolagents(args: argparse.Namespace) -> dict[str, Any]:
    from smolagents import OpenAIServerModel, ToolCallingAgent, tool  # type: ignore[import-not-found]
    from smolagents.memory import ActionStep  # type: ignore[import-not-found]

    tools = [tool(fn) for fn in workspace_functions(args.tools)]
    # smolagents sends each message's content as a list of parts, which llama-cpp-python 0.3.36 refuses
    # (HTTP 500); its own switch for such servers sends plain strings
    model = OpenAIServerModel(model_id=args.model, api_base=args.base_url, api_key="none",
                              temperature=args.temperature, max_tokens=args.max_tokens, seed=args.seed,
                              flatten_messages_as_text=True)
    agent = ToolCallingAgent(tools=tools, model=model, max_steps=args.max_steps, verbosity_level=-1)
    answer = agent.run(args.task)
    steps = [s for s in agent.memory.steps if isinstance(s, ActionStep)]
    calls = sum(len(s.tool_calls or []) for s in steps)
    return {"answer": str(answer), "model_calls": len(steps), "tool_calls": calls}


ROLES: dict[str, Callable[[argparse.Namespace], dict[str, Any]]] = {
    "langchain": role_langchain, "smolagents": role_smolagents,
}


def run_role(args: argparse.Namespace) -> int:
    try:
        result = ROLES[args.role](args)
    except Exception as exc:  # the run failed: reported as its error, like a daemon's crash
        result = {"answer": None, "model_calls": 0, "tool_calls": 0, "error": f"{type(exc).__name__}: {exc}"}
    print(json.dumps(result))
    return 0


# -- the bench (mini-agent's venv) -------------------------------------------------------------------


def ensure_venv() -> Path:
    python = VENV / "bin" / "python"
    stamp = VENV / "installed.json"
    if not (stamp.exists() and json.loads(stamp.read_text()) == PEERS):
        print(f"setting up {VENV} (the peers; not dependencies of mini-agent) …", file=sys.stderr)
        subprocess.run([sys.executable, "-m", "venv", "--clear", str(VENV)], check=True)
        subprocess.run([str(python), "-m", "pip", "install", "--quiet", *PEERS], check=True)
        stamp.write_text(json.dumps(PEERS))
    return python


def versions(python: Path) -> str:
    code = ("import importlib.metadata as m; print(', '.join(f'{n} {m.version(n)}' for n in "
            "['langchain', 'langchain-openai', 'smolagents']))")
    done = subprocess.run([str(python), "-c", code], capture_output=True, text=True, check=False)
    return done.stdout.strip()


async def run_peer(python: Path, peer: str, target: Any, task: Any, record: Any, max_tokens: int) -> None:
    from bench.agents.suite import server_counts, workspace_copy

    offset = target.log.stat().st_size if target.log else 0
    started = time.monotonic()
    with workspace_copy(task) as root:
        command = [str(python), str(Path(__file__).resolve()), "--role", peer, "--task", task.text,
                   "--base-url", target.base_url, "--model", target.model,
                   "--temperature", str(record.temperature), "--seed", str(record.seed),
                   "--max-tokens", str(max_tokens), "--max-steps", str(task.max_steps),
                   *(arg for file in task.workspace.tools for arg in ("--tools", file))]
        process = await asyncio.create_subprocess_exec(*command, cwd=root, stdout=asyncio.subprocess.PIPE,
                                                       stderr=asyncio.subprocess.PIPE)
        try:
            out, err = await asyncio.wait_for(process.communicate(), ROLE_TIMEOUT)
            lines = out.decode(errors="replace").strip().splitlines()
            result = json.loads(lines[-1]) if lines else {"error": err.decode(errors="replace")[-500:]}
        except (TimeoutError, json.JSONDecodeError) as exc:
            process.kill()
            result = {"error": f"{type(exc).__name__}: {exc}"}
        record.wall_s = time.monotonic() - started
        record.answer, record.error = result.get("answer"), result.get("error")
        record.steps = int(result.get("model_calls") or 0)
        record.trace = [{"tool_calls": result.get("tool_calls")}]
        record.stop_reason = "end_turn" if record.answer is not None and not record.error else "error"
        if record.stop_reason == "end_turn":
            record.ok, record.why = task.check(record.answer, root)
        else:
            record.why = record.error or "no answer"
    if target.log is not None:
        await asyncio.sleep(0.2)
        with target.log.open("rb") as log:
            log.seek(offset)
            record.server = server_counts(log.read().decode(errors="replace"))


async def bench(args: argparse.Namespace, python: Path, target: Any) -> None:

    from bench.agents.suite import Record, report, summary
    from bench.agents.tasks import by_id

    tasks = by_id([i for item in args.tasks or [] for i in item.split(",") if i])
    peers = args.peer or list(ROLES)
    header = (f"- server: {target.base_url}, model `{target.model}`; temperature {args.temperature:g}; "
              f"runs {args.runs}; seeds {args.seed}…{args.seed + args.runs - 1}\n- peers: {versions(python)}")
    print(header, file=sys.stderr)
    records = []
    out = args.json_out.open("a", encoding="utf-8") if args.json_out else None
    try:
        for run in range(args.runs):
            for task in tasks:
                for peer in peers:
                    record = Record(peer, target.model, "tools", task.id, run, args.seed + run,
                                    args.temperature, {})
                    await run_peer(python, peer, target, task, record, args.max_tokens)
                    records.append(record)
                    report(record, peer, f"{record.steps} model calls", out)
    finally:
        if out is not None:
            out.close()
    print(f"\n{header}\n\n{summary(records)}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--role", choices=sorted(ROLES), help=argparse.SUPPRESS)
    parser.add_argument("--task", help=argparse.SUPPRESS)
    parser.add_argument("--tools", action="append", default=[], help=argparse.SUPPRESS)
    parser.add_argument("--max-steps", type=int, default=6, help=argparse.SUPPRESS)
    parser.add_argument("--serve", choices=("smollm2", "qwen"))
    parser.add_argument("--base-url")
    parser.add_argument("--model")
    parser.add_argument("--peer", action="append", choices=sorted(ROLES), help="repeatable; default both")
    parser.add_argument("--temperature", type=float, default=0.0)
    parser.add_argument("--runs", type=int, default=1)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--tasks", action="append", metavar="ID[,ID…]")
    parser.add_argument("--threads", type=int)
    parser.add_argument("--max-tokens", type=int, default=512)
    parser.add_argument("--json-out", type=Path, metavar="FILE")
    args = parser.parse_args()
    if args.role:
        return run_role(args)
    sys.path[:0] = [str(ROOT), str(ROOT / "clients" / "python"), str(ROOT / "server")]
    from bench.agents.suite import Target
    from tests.support.llama import launch

    if not (args.serve or (args.base_url and args.model)):
        parser.error("give --serve MODEL or --base-url URL --model NAME")
    python = ensure_venv()
    if args.serve:
        with tempfile.TemporaryDirectory(prefix="agents-llama-") as tmp:
            llama = launch(Path(tmp), model=args.serve, n_ctx=8192, seed=args.seed, threads=args.threads)
            try:
                asyncio.run(bench(args, python, Target(llama.base_url, llama.model, llama.log)))
            finally:
                llama.stop()
    else:
        asyncio.run(bench(args, python, Target(args.base_url.rstrip("/"), args.model, None)))
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""mini-agent next to its peers, in one run on one machine: prints markdown tables and writes
bench/RESULTS.md.

    python bench/bench_peers.py            # creates bench/.peers-venv on first use (needs PyPI)
    python bench/bench_peers.py --quick    # fewer repetitions, for a smoke run
    python bench/bench_peers.py --baseline /tmp/old   # also another checkout, side by side

What is measured (see bench/README.md for the method and the caveats):

1. Overhead per agent step on one scripted 20-step episode (19 calls of a trivial tool, then the
   answer): mini-agent through the whole daemon over stdio against a replayed model server with no
   delay, versus LangChain's agent (`create_agent`) and smolagents' `ToolCallingAgent` in process,
   their model objects replaced by in-process fakes that return the same scripted tool calls.
2. `agent/listTools` round trip versus a minimal pygls server and an MCP SDK stdio server
   (`tools/list`), all driven by the same client code.
3. Cold start (spawn → `initialize` answered) and idle RSS, versus a minimal pygls server,
   python-lsp-server and jedi-language-server.
4. 50 concurrent sessions × 5 steps against a model with 200 ms latency, as efficiency against the
   ideal of 5 × 0.2 s.
5. Capacity: steps per second of one daemon with 1, 8 and 64 sessions running at once against a
   model with no latency (store on).
6. Memory per idle session: the daemon's RSS growth over 300 sessions started and left, and over
   300 sessions run to their end (store on).

With `--baseline TREE` (another checkout, e.g. `git archive <commit> | tar -x -C /tmp/old`), every
mini-agent figure is measured for that tree too, in the same run: the two daemons run side by side
and take turns episode by episode and round by round, so that a noisy moment hits both.

The peers live in their own virtual environment (bench/.peers-venv); they are never runtime
dependencies. Helper processes are this same file started with `--role`.
"""

from __future__ import annotations

import argparse
import asyncio
import atexit
import contextlib
import datetime
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
PEERS_VENV = HERE / ".peers-venv"
PEERS = ["langchain>=1.0", "smolagents>=1.20", "mcp", "python-lsp-server", "jedi-language-server",
         "pygls==2.1.1"]
EPISODE_STEPS = 20
CONCURRENT_SESSIONS, CONCURRENT_STEPS, LATENCY_S = 50, 5, 0.2
CAPACITY_SESSIONS = (1, 8, 64)
IDLE_SESSIONS, IDLE_STEPS, IDLE_BATCH = 300, 5, 50

TOOLS_FILE = '''def add(a: int, b: int) -> int:
    """Add two integers.

    Args:
        a: The first addend.
        b: The second addend.
    """
    return a + b


def list_python_files(directory: str = ".") -> list[str]:
    """List the Python files of a directory.

    Args:
        directory: Folder to look in, relative to the workspace root.
    """
    import os

    return sorted(name for name in os.listdir(directory) if name.endswith(".py"))
'''

MINIMAL_PYGLS = """
from pygls.lsp.server import LanguageServer
server = LanguageServer("minimal", "0.1")
TOOLS = {"tools": [{"name": "add", "description": "Add two integers.", "inputSchema": {"type": "object"}}]}
@server.feature("tools/list")
def tools_list(params):
    return TOOLS
server.start_io()
"""


# -- helper roles (run as `python bench_peers.py --role NAME`) --------------------------------


def role_mcp_server() -> None:
    """An MCP SDK stdio server with the same two tools (FastMCP, called MCPServer from mcp 2.x)."""
    try:
        from mcp.server.mcpserver import MCPServer as Server  # type: ignore[import-not-found]
    except ImportError:
        from mcp.server.fastmcp import FastMCP as Server  # type: ignore[import-not-found]
    server = Server("bench")
    tools = _tools_module()
    server.tool()(tools.add)
    server.tool()(tools.list_python_files)
    server.run("stdio")


def _tools_module() -> Any:
    """TOOLS_FILE as a real module: the peers read tool source and docstrings through `inspect`."""
    import importlib.util

    path = _scratch_dir("bench-tools-") / "bench_tools.py"
    path.write_text(TOOLS_FILE)
    spec = importlib.util.spec_from_file_location("bench_tools", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def role_replay(latency: float, steps: int, record: str | None) -> None:
    """A replayed OpenAI-compatible model: each session calls `add` steps-1 times, then answers.
    With `record`, every request body is appended to that file, one JSON line each."""
    log = open(record, "a", encoding="utf-8") if record else None  # noqa: SIM115 (open while serving)

    def turn(body: dict[str, Any]) -> dict[str, Any]:
        if log is not None:
            log.write(json.dumps(body, ensure_ascii=False) + "\n")
            log.flush()
        return add_up(body, latency, steps)

    serve_replay(turn)


def add_up(body: dict[str, Any], latency: float, steps: int) -> dict[str, Any]:
    """The scripted turn: call `add` until the session has steps-1 results, then answer."""
    done = sum(1 for m in body["messages"] if m.get("role") == "tool")
    reply: dict[str, Any] = {"delay": latency} if latency else {}
    if done + 1 >= steps:
        return {**reply, "content": f"The total is {done}."}
    return {**reply, "tool_calls": [{"name": "add", "arguments": {"a": done, "b": 1}}]}


def serve_replay(turn: Callable[[dict[str, Any]], dict[str, Any]]) -> None:
    """Serve `turn` as an OpenAI-compatible model; print its URL, stop when stdin closes."""
    from mini_agent.scripted import ReplayServer

    async def serve() -> None:
        async with ReplayServer(responder=turn) as server:
            print(server.base_url, flush=True)
            await asyncio.get_running_loop().run_in_executor(None, sys.stdin.read)

    asyncio.run(serve())


def _scripted_calls() -> list[dict[str, Any]]:
    return [{"name": "add", "args": {"a": i, "b": 1}, "id": f"call_{i}"} for i in range(EPISODE_STEPS - 1)]


def role_langchain(episodes: int) -> None:
    """LangChain's agent loop with its model replaced by a fake that plays the scripted episode."""
    from langchain.agents import create_agent  # type: ignore[import-not-found]
    from langchain_core.language_models.fake_chat_models import GenericFakeChatModel  # type: ignore[import-not-found]
    from langchain_core.messages import AIMessage  # type: ignore[import-not-found]
    from langchain_core.tools import tool  # type: ignore[import-not-found]

    class ScriptedModel(GenericFakeChatModel):  # type: ignore[misc]
        def bind_tools(self, tools: Any, **kwargs: Any) -> Any:
            return self

    add = tool(_tools_module().add)

    def episode() -> float:
        script = [AIMessage(content="", tool_calls=[call]) for call in _scripted_calls()]
        model = ScriptedModel(messages=iter([*script, AIMessage(content="The total is 19.")]))
        agent = create_agent(model, tools=[add])
        started = time.perf_counter()
        state = agent.invoke({"messages": [{"role": "user", "content": "Add up."}]}, {"recursion_limit": 200})
        elapsed = time.perf_counter() - started
        assert state["messages"][-1].content == "The total is 19.", state["messages"][-1]
        return elapsed

    _report_episodes(episode, episodes)


def role_smolagents(episodes: int) -> None:
    """smolagents' ToolCallingAgent with its Model replaced by a fake that plays the scripted episode."""
    from smolagents import Model, ToolCallingAgent, tool  # type: ignore[import-not-found]
    from smolagents.models import ChatMessage, ChatMessageToolCall, ChatMessageToolCallFunction  # type: ignore[import-not-found]

    add = tool(_tools_module().add)

    def message(name: str, arguments: dict[str, Any], call_id: str) -> ChatMessage:
        call = ChatMessageToolCall(id=call_id, type="function",
                                   function=ChatMessageToolCallFunction(name=name, arguments=arguments))
        return ChatMessage(role="assistant", content="", tool_calls=[call])

    class ScriptedModel(Model):  # type: ignore[misc]
        def __init__(self, script: list[ChatMessage]) -> None:
            super().__init__(model_id="scripted")
            self.script = iter(script)

        def generate(self, messages: Any, stop_sequences: Any = None, response_format: Any = None,
                     tools_to_call_from: Any = None, **kwargs: Any) -> ChatMessage:
            return next(self.script)

    def episode() -> float:
        script = [message(c["name"], c["args"], c["id"]) for c in _scripted_calls()]
        script.append(message("final_answer", {"answer": "The total is 19."}, "call_final"))
        agent = ToolCallingAgent(tools=[add], model=ScriptedModel(script), max_steps=EPISODE_STEPS + 5,
                                 verbosity_level=-1)
        started = time.perf_counter()
        answer = agent.run("Add up.")
        elapsed = time.perf_counter() - started
        assert answer == "The total is 19.", answer
        return elapsed

    _report_episodes(episode, episodes)


def _report_episodes(episode: Callable[[], float], episodes: int) -> None:
    episode()  # warm-up: imports, caches
    print(json.dumps([episode() / EPISODE_STEPS for _ in range(episodes)]))


ROLES: dict[str, Callable[[argparse.Namespace], None]] = {
    "mcp-server": lambda a: role_mcp_server(),
    "replay": lambda a: role_replay(a.latency, a.steps, a.record),
    "langchain": lambda a: role_langchain(a.episodes),
    "smolagents": lambda a: role_smolagents(a.episodes),
}


# -- the measurements --------------------------------------------------------------------------


@dataclass
class Peers:
    python: str
    versions: dict[str, str]

    def bin(self, name: str) -> str:
        return str(Path(self.python).parent / name)


def ensure_peers() -> Peers:
    """Create bench/.peers-venv with the peer frameworks, once (a stamp file records what is in it)."""
    python = PEERS_VENV / "bin" / "python"
    stamp = PEERS_VENV / "installed.json"
    if not (stamp.exists() and json.loads(stamp.read_text()) == PEERS):
        print(f"setting up {PEERS_VENV} (the peers; not runtime dependencies) …", file=sys.stderr)
        subprocess.run([sys.executable, "-m", "venv", "--clear", str(PEERS_VENV)], check=True)
        done = subprocess.run([str(python), "-m", "pip", "install", "--quiet", *PEERS], capture_output=True,
                              text=True, check=False)
        if done.returncode != 0:
            raise RuntimeError(f"installing the peers failed:\n{done.stdout[-2000:]}{done.stderr[-2000:]}")
        stamp.write_text(json.dumps(PEERS))
    names = ["langchain", "langgraph", "smolagents", "mcp", "python-lsp-server", "jedi-language-server",
             "pygls"]
    code = ("import json, importlib.metadata as m; "
            f"print(json.dumps({{n: m.version(n) for n in {names!r}}}))")
    versions = json.loads(subprocess.run([str(python), "-c", code], check=True, capture_output=True,
                                         text=True).stdout)
    return Peers(str(python), versions)


@dataclass(frozen=True)
class Tree:
    """A checkout of mini-agent whose daemon is measured: this one, or a `--baseline` to compare with."""

    label: str
    root: Path


THIS = Tree("mini-agent", ROOT)


def daemon_env(tree: Tree = THIS) -> dict[str, str]:
    paths = [str(tree.root / "server"), str(tree.root / "clients" / "python"),
             os.environ.get("PYTHONPATH", "")]
    return {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in paths if p)}


def cpu_seconds(pid: int) -> float:
    """User and system CPU the process (all its threads) has used so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


@contextlib.asynccontextmanager
async def model_server(latency: float, steps: int, record: Path | None = None) -> AsyncIterator[str]:
    """The replayed model in its own process, so its work does not share the client's event loop."""
    process = await asyncio.create_subprocess_exec(
        sys.executable, __file__, "--role", "replay", "--latency", str(latency), "--steps", str(steps),
        *(["--record", str(record)] if record else []),
        stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, env=daemon_env())
    assert process.stdin is not None and process.stdout is not None
    try:
        yield (await process.stdout.readline()).decode().strip()
    finally:
        process.stdin.close()
        await process.wait()


def _scratch_dir(prefix: str) -> Path:
    """A temporary directory removed when this process exits."""
    path = Path(tempfile.mkdtemp(prefix=prefix))
    atexit.register(shutil.rmtree, path, True)
    return path


def workspace() -> Path:
    root = _scratch_dir("mini-agent-bench-")
    (root / "bench_tools.py").write_text(TOOLS_FILE)
    return root


async def per_step_mini_agent(trees: list[Tree], episodes: int, *, store: bool
                              ) -> dict[str, tuple[list[float], list[float]]]:
    """For each tree: (seconds per step of each episode, seconds of the model server's share of each
    step). The trees' daemons run side by side and take turns, episode by episode.

    The model server's share is measured by sending it the very requests the daemon just sent, bare
    (one aiohttp client, one at a time, each read to its end), in the same moments as the episodes:
    what is left of a step is the daemon's overhead, comparable with an in-process framework's.
    """
    import aiohttp

    record = _scratch_dir("mini-agent-bench-requests-") / "requests.jsonl"
    record.touch()
    figures: dict[str, tuple[list[float], list[float]]] = {tree.label: ([], []) for tree in trees}
    async with daemons(trees, 0.0, EPISODE_STEPS, store=store, record=record) as (base_url, clients), \
            aiohttp.ClientSession() as http:
        for episode in range(episodes + 1):  # the first is the warm-up
            for label, client in turns(clients, episode):
                session_id = await client.start_session("Add up.")
                sent = len(record.read_bytes().splitlines())
                started = time.perf_counter()
                result = await client.call("agent/run", {"sessionId": session_id})
                elapsed = time.perf_counter() - started
                assert result["stopReason"] == "end_turn" and result["steps"] == EPISODE_STEPS, result
                bodies = record.read_bytes().splitlines()[sent:]
                assert len(bodies) == EPISODE_STEPS, len(bodies)
                times = [await _bare_request(http, base_url, body) for body in bodies]
                if episode:
                    figures[label][0].append(elapsed / EPISODE_STEPS)
                    figures[label][1].append(sum(times) / EPISODE_STEPS)
    return figures


async def _bare_request(http: Any, base_url: str, body: bytes) -> float:
    started = time.perf_counter()
    async with http.post(f"{base_url}/chat/completions", data=body,
                         headers={"Content-Type": "application/json"}) as response:
        await response.read()
    return time.perf_counter() - started


def per_step_peer(peers: Peers, role: str, episodes: int) -> list[float]:
    done = subprocess.run([peers.python, __file__, "--role", role, "--episodes", str(episodes)],
                          capture_output=True, text=True, check=False, env={**os.environ, "PYTHONPATH": ""})
    if done.returncode != 0:
        raise RuntimeError(f"{role} failed:\n{done.stderr[-3000:]}")
    times: list[float] = json.loads(done.stdout.strip().splitlines()[-1])
    return times


@contextlib.asynccontextmanager
async def connected(command: list[str], cwd: Path | str | None, *, ndjson: bool = False,
                    env: dict[str, str] | None = None) -> AsyncIterator[Any]:
    """A server process and a JSON-RPC connection to it (mini_agent_client.rpc, the same client code
    for every server); killed afterwards."""
    from mini_agent_client.rpc import Connection

    process = await asyncio.create_subprocess_exec(
        *command, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.DEVNULL, env=env or daemon_env(), cwd=cwd)
    assert process.stdin is not None and process.stdout is not None
    connection = Connection(process.stdout, process.stdin, ndjson=ndjson)
    connection.start()
    try:
        yield process, connection
    finally:
        process.stdin.close()
        with contextlib.suppress(ProcessLookupError):
            process.kill()
        await process.wait()
        await connection.close()


async def round_trips(command: list[str], method: str, init: dict[str, Any], *, ndjson: bool,
                      setup: Callable[[Any], Awaitable[None]] | None = None, count: int,
                      env: dict[str, str] | None = None) -> list[float]:
    """Sequential `method` requests, after initialize (and `setup`)."""
    async with connected(command, init.pop("_cwd", None), ndjson=ndjson, env=env) as (_, connection):
        await connection.request("initialize", init)
        await connection.notify("notifications/initialized" if ndjson else "initialized", {})
        if setup is not None:
            await setup(connection)
        times = []
        for _ in range(count + count // 10):
            started = time.perf_counter()
            await connection.request(method, {})
            times.append(time.perf_counter() - started)
        return times[count // 10:]


def lsp_init(root: Path) -> dict[str, Any]:
    return {"processId": os.getpid(), "rootUri": root.as_uri(), "capabilities": {},
            "initializationOptions": {"store": {"enabled": False}}, "_cwd": str(root)}


def mcp_init() -> dict[str, Any]:
    return {"protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "bench", "version": "0.1"}}


async def list_tools_figures(peers: Peers, trees: list[Tree], count: int) -> dict[str, list[float]]:
    root = workspace()

    async def register(connection: Any) -> None:
        await connection.request("agent/registerTool", {"path": "bench_tools.py"})

    ours = {
        f"{tree.label} `agent/listTools`": await round_trips(
            [sys.executable, "-m", "mini_agent"], "agent/listTools", lsp_init(root), ndjson=False,
            setup=register, count=count, env=daemon_env(tree))
        for tree in trees
    }
    return {
        **ours,
        "minimal pygls `tools/list`": await round_trips(
            [sys.executable, "-c", MINIMAL_PYGLS], "tools/list", lsp_init(root), ndjson=False, count=count),
        "MCP SDK stdio `tools/list`": await round_trips(
            [peers.python, __file__, "--role", "mcp-server"], "tools/list", mcp_init(), ndjson=True,
            count=count),
    }


@dataclass(frozen=True)
class Server:
    command: list[str]
    env: dict[str, str] | None = None
    ready: str | None = None  # a request answered only once the server has finished starting


async def cold_start(server: Server, root: Path) -> tuple[float, float]:
    """(seconds from spawn to the initialize answer, RSS in MiB once initialized, ready and idle).

    mini-agent answers initialize before it has loaded its protocol stack and builds its core after
    `initialized`; its RSS is read one second after it answered a request that needs all of that.
    """
    started = time.perf_counter()
    async with connected(server.command, root, env=server.env) as (process, connection):
        await connection.request("initialize", {k: v for k, v in lsp_init(root).items() if k != "_cwd"})
        elapsed = time.perf_counter() - started
        await connection.notify("initialized", {})
        if server.ready is not None:
            await connection.request(server.ready, {})
        await asyncio.sleep(1.0)
        return elapsed, rss_mib(process.pid)


async def cold_start_figures(peers: Peers, trees: list[Tree], runs: int
                             ) -> dict[str, list[tuple[float, float]]]:
    root = workspace()
    servers = {
        **{tree.label: Server([sys.executable, "-m", "mini_agent"], daemon_env(tree), "agent/listTools")
           for tree in trees},
        "minimal pygls": Server([sys.executable, "-c", MINIMAL_PYGLS]),
        "python-lsp-server": Server([peers.bin("pylsp")]),
        "jedi-language-server": Server([peers.bin("jedi-language-server")]),
    }
    figures: dict[str, list[tuple[float, float]]] = {name: [] for name in servers}
    for _ in range(runs):  # interleaved, so a noisy moment hits every server alike
        for name, server in servers.items():
            figures[name].append(await cold_start(server, root))
    return figures


@contextlib.asynccontextmanager
async def daemons(trees: list[Tree], latency: float, steps: int, *, store: bool = True,
                  record: Path | None = None) -> AsyncIterator[tuple[str, dict[str, Any]]]:
    """(the model's URL, a client per tree): a daemon of each tree with the `add` tool, against one
    replayed model where each session calls `add` steps-1 times, then answers."""
    from mini_agent_client import AgentClient

    async with model_server(latency, steps, record) as base_url, contextlib.AsyncExitStack() as stack:
        options = {"llm": {"baseUrl": base_url, "model": "replay", "toolMode": "native"},
                   "store": {"enabled": store}}
        clients = {}
        for tree in trees:
            clients[tree.label] = client = await stack.enter_async_context(
                AgentClient.spawn(root=workspace(), options=options, env=daemon_env(tree)))
            await client.register_tool("bench_tools.py", function="add")
        yield base_url, clients


def turns(clients: dict[str, Any], round_no: int) -> list[tuple[str, Any]]:
    """The daemons in turn, the order reversed every other round: going first costs a few per cent
    (two copies of one tree measured so)."""
    order = list(clients.items())
    return order[::-1] if round_no % 2 else order


async def run_all(client: Any, count: int, steps: int) -> float:
    """Start `count` sessions, run them all at once; the wall seconds of the runs."""
    sessions = [await client.start_session(f"Add up, {i}.") for i in range(count)]
    started = time.perf_counter()
    results = await asyncio.gather(*(client.call("agent/run", {"sessionId": s}) for s in sessions))
    wall = time.perf_counter() - started
    assert all(r["stopReason"] == "end_turn" and r["steps"] == steps for r in results), results[0]
    return wall


async def concurrency_figures(trees: list[Tree], rounds: int, *, store: bool
                              ) -> dict[str, tuple[float, float]]:
    """For each tree: (median wall seconds of a round, efficiency = ideal / that wall); the trees take
    turns round by round, after a warm-up round each (tool hosts start on demand, imports, caches)."""
    walls: dict[str, list[float]] = {tree.label: [] for tree in trees}
    async with daemons(trees, LATENCY_S, CONCURRENT_STEPS, store=store) as (_, clients):
        for round_no in range(rounds + 1):
            for label, client in turns(clients, round_no):
                wall = await run_all(client, CONCURRENT_SESSIONS, CONCURRENT_STEPS)
                if round_no:
                    walls[label].append(wall)
    ideal = CONCURRENT_STEPS * LATENCY_S
    return {label: (statistics.median(w), ideal / statistics.median(w)) for label, w in walls.items()}


async def capacity_figures(trees: list[Tree], rounds: int) -> dict[str, dict[int, float]]:
    """For each tree, steps per second of one daemon (store on) with n sessions at once, model
    without latency: the median of `rounds`, the trees taking turns."""
    rates: dict[str, dict[int, list[float]]] = {t.label: {n: [] for n in CAPACITY_SESSIONS} for t in trees}
    async with daemons(trees, 0.0, EPISODE_STEPS) as (_, clients):
        for client in clients.values():
            await run_all(client, 8, EPISODE_STEPS)  # warm-up
        for round_no in range(rounds):
            for n in CAPACITY_SESSIONS:
                for label, client in turns(clients, round_no):
                    rates[label][n].append(n * EPISODE_STEPS / await run_all(client, n, EPISODE_STEPS))
    return {label: {n: statistics.median(r) for n, r in by_n.items()} for label, by_n in rates.items()}


async def idle_memory_figures(trees: list[Tree]) -> dict[str, tuple[float, float, float]]:
    """For each tree: (RSS MiB once warmed up, KiB per session started and left, KiB per session run
    to its end), store on. Sessions run in batches of the warm-up's size, so that what a batch needs
    while it runs is there before the first reading; each RSS is read after a second of quiet."""
    async def settled_rss(client: Any) -> float:
        await asyncio.sleep(1.0)
        return rss_mib(client.process.pid)

    figures = {}
    async with daemons(trees, 0.0, IDLE_STEPS) as (_, clients):
        for label, client in clients.items():
            for _ in range(2):  # warm-up: imports, the tool host, caches, a batch's buffers
                await run_all(client, IDLE_BATCH, IDLE_STEPS)
            base = await settled_rss(client)
            for i in range(IDLE_SESSIONS):
                await client.start_session(f"Left alone, {i}.")
            started = await settled_rss(client)
            for _ in range(IDLE_SESSIONS // IDLE_BATCH):
                await run_all(client, IDLE_BATCH, IDLE_STEPS)
            finished = await settled_rss(client)
            per = 1024 / IDLE_SESSIONS
            figures[label] = base, (started - base) * per, (finished - started) * per
    return figures


# -- report ------------------------------------------------------------------------------------


def ms(values: list[float]) -> str:
    return f"{statistics.median(values) * 1e3:.2f}"


def us(values: list[float]) -> str:
    return f"{statistics.median(values) * 1e6:.0f}"


def table(header: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    return "\n".join([*lines, *("| " + " | ".join(row) + " |" for row in rows)])


def machine() -> str:
    cpu = next((line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines()
                if line.startswith("model name")), platform.processor())
    uname = subprocess.run(["uname", "-a"], capture_output=True, text=True, check=False).stdout.strip()
    return (f"- date: {datetime.datetime.now(datetime.UTC):%Y-%m-%d %H:%M UTC}\n- machine: `{uname}`\n"
            f"- CPU: {cpu} ({os.cpu_count()} logical CPUs)\n- Python: {platform.python_version()}\n"
            f"- load average when the run began: {_load()}")


def _load() -> str:
    """The 1/5/15-minute load: on a shared machine, what says how far to trust the figures."""
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


async def measure(peers: Peers, quick: bool, baseline: Tree | None) -> str:
    episodes, count, runs, rounds = (4, 100, 3, 2) if quick else (20, 500, 7, 4)
    trees = [THIS] if baseline is None else [THIS, baseline]
    sections = [f"# mini-agent vs peers\n\n{machine()}\n- peers: " +
                ", ".join(f"{k} {v}" for k, v in peers.versions.items())]
    if baseline is not None:
        sections[0] += f"\n- {baseline.label}: the checkout at `{baseline.root}`, measured in the same run"

    print("per-step overhead …", file=sys.stderr)
    steps = {(label, store): figures for store in (True, False)
             for label, figures in (await per_step_mini_agent(trees, episodes, store=store)).items()}
    langchain = per_step_peer(peers, "langchain", episodes)
    smol = per_step_peer(peers, "smolagents", episodes)
    title = "## 1. Overhead per agent step (20-step scripted episode, median ms per step)"
    sections.append(f"{title}\n\n" + table(
        ["system", "ms / step", "the model server's share (its requests sent again bare, ms)",
         "overhead (ms / step less that share)"],
        [*([f"{label}: whole daemon over stdio, store {'on (the default)' if store else 'off'}", ms(ours),
            ms(bare), ms(_less(ours, bare))] for (label, store), (ours, bare) in steps.items()),
         [f"LangChain {peers.versions['langchain']} `create_agent`, in process, fake model", ms(langchain),
          "—", ms(langchain)],
         [f"smolagents {peers.versions['smolagents']} `ToolCallingAgent`, in process, fake model", ms(smol),
          "—", ms(smol)]]))

    print("listTools round trips …", file=sys.stderr)
    trips = await list_tools_figures(peers, trees, count)
    sections.append("## 2. Tool listing round trip (median µs, sequential requests)\n\n" + table(
        ["server", "µs"], [[name, us(values)] for name, values in trips.items()]))

    print("cold starts …", file=sys.stderr)
    starts = await cold_start_figures(peers, trees, runs)
    sections.append("## 3. Cold start (spawn → `initialize` answered) and idle RSS (median)\n\n" + table(
        ["server", "cold start ms", "idle RSS MiB"],
        [[name, ms([s for s, _ in values]), f"{statistics.median(r for _, r in values):.1f}"]
         for name, values in starts.items()]))

    print("concurrency …", file=sys.stderr)
    concurrency = {(label, store): figures for store in (True, False)
                   for label, figures in (await concurrency_figures(trees, rounds, store=store)).items()}
    ideal = f"{CONCURRENT_STEPS * LATENCY_S:.2f}"
    sections.append(
        f"## 4. {CONCURRENT_SESSIONS} concurrent sessions × {CONCURRENT_STEPS} steps, model latency "
        f"{LATENCY_S * 1e3:.0f} ms (median of {rounds} rounds after a warm-up round)\n\n" + table(
            ["system", "wall s", "ideal s", "efficiency"],
            [[f"{label}, store {'on (the default)' if store else 'off'}", f"{wall:.2f}", ideal,
              f"{efficiency:.0%}"] for (label, store), (wall, efficiency) in concurrency.items()]))

    print("capacity …", file=sys.stderr)
    capacity = await capacity_figures(trees, rounds)
    sections.append(
        f"## 5. Capacity: steps per second of one daemon, store on, model without latency "
        f"({EPISODE_STEPS}-step sessions, all started at once; median of {rounds} rounds)\n\n" + table(
            ["system", *(f"{n} session{'s' if n > 1 else ''}" for n in CAPACITY_SESSIONS)],
            [[label, *(f"{figures[n]:.0f}" for n in CAPACITY_SESSIONS)]
             for label, figures in capacity.items()]))

    print("memory per idle session …", file=sys.stderr)
    memory = await idle_memory_figures(trees)
    sections.append(
        f"## 6. Memory per idle session (store on; RSS growth over {IDLE_SESSIONS} sessions, run in "
        f"batches of {IDLE_BATCH}; read after a second of quiet)\n\n" + table(
            ["system", "RSS after warm-up MiB", "KiB per session started and left",
             f"KiB per session run to its end ({IDLE_STEPS} steps)"],
            [[label, f"{base:.1f}", f"{started:.0f}", f"{finished:.0f}"]
             for label, (base, started, finished) in memory.items()]))

    ours, share = steps[THIS.label, True]
    ours_step, lc_step = statistics.median(ours), statistics.median(langchain)
    overhead, no_store_overhead = statistics.median(_less(ours, share)), statistics.median(
        _less(*steps[THIS.label, False]))
    pygls_start = statistics.median(s for s, _ in starts["minimal pygls"])
    ours_start = statistics.median(s for s, _ in starts[THIS.label])
    ours_rss = statistics.median(r for _, r in starts[THIS.label])
    efficiency, efficiency_no_store = concurrency[THIS.label, True][1], concurrency[THIS.label, False][1]
    targets = [
        ["per-step overhead (store on; the step less the model server's share) at most LangChain's",
         f"{overhead * 1e3:.2f} vs {lc_step * 1e3:.2f} ms (store off: {no_store_overhead * 1e3:.2f})",
         _met(overhead <= lc_step)],
        ["the whole step (store on; model server included) at most LangChain's in-process step",
         f"{ours_step * 1e3:.2f} vs {lc_step * 1e3:.2f} ms", _met(ours_step <= lc_step)],
        ["cold start at most the minimal pygls server's",
         f"{ours_start * 1e3:.0f} vs {pygls_start * 1e3:.0f} ms "
         f"({(ours_start / pygls_start - 1) * 100:+.0f} %)",
         _met(ours_start <= pygls_start)],
        ["idle RSS at most 60 MiB", f"{ours_rss:.1f} MiB", _met(ours_rss <= 60)],
        ["concurrency efficiency (store on) ≥ 90 %",
         f"{efficiency:.0%} (store off: {efficiency_no_store:.0%})", _met(efficiency >= 0.90)],
    ]
    sections.append("## Targets\n\n" + table(["target", "measured", "met"], targets))
    return "\n\n".join(sections) + "\n"


def _less(steps: list[float], shares: list[float]) -> list[float]:
    """Each episode's seconds per step less the model server's share of it."""
    return [step - share for step, share in zip(steps, shares, strict=True)]


def _met(ok: bool) -> str:
    return "yes" if ok else "**no**"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="fewer repetitions")
    parser.add_argument("--baseline", type=Path, metavar="TREE",
                        help="another checkout of mini-agent to measure side by side (labelled with its "
                             "folder name)")
    parser.add_argument("--role", choices=sorted(ROLES), help=argparse.SUPPRESS)
    parser.add_argument("--latency", type=float, default=0.0, help=argparse.SUPPRESS)
    parser.add_argument("--steps", type=int, default=EPISODE_STEPS, help=argparse.SUPPRESS)
    parser.add_argument("--record", help=argparse.SUPPRESS)
    parser.add_argument("--episodes", type=int, default=5, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.role:
        ROLES[args.role](args)
        return 0
    sys.path[:0] = [str(ROOT / "server"), str(ROOT / "clients" / "python")]
    if shutil.which("uname") is None:
        print("needs Linux (/proc, uname)", file=sys.stderr)
        return 2
    started = time.perf_counter()
    baseline = Tree(f"baseline ({args.baseline.name})", args.baseline.resolve()) if args.baseline else None
    report = asyncio.run(measure(ensure_peers(), args.quick, baseline))
    report += f"\n(whole run: {time.perf_counter() - started:.0f} s; load average at the end: {_load()})\n"
    print(report)
    (HERE / "RESULTS.md").write_text(report)
    return 0


if __name__ == "__main__":
    sys.exit(main())

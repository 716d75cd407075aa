"""One streamed chat-completions POST on loopback, per HTTP client: what the model request of a step
costs the daemon's side.

    python bench/bench_http.py [--rounds 3] [--requests 2000] [--baseline TREE] [--httpx PYTHON]

The server runs in its own process (raw asyncio, keep-alive, a chunked SSE answer of five events), so
only the client's work is counted. Each client runs in a process of its own on uvloop (the daemon's
loop), 200 warm-up requests then `--requests` timed ones, and reports the median wall time per request
and the process's CPU per request. The rounds interleave the clients, so a noisy moment hits them
alike.

- this checkout's transport (`mini_agent.llm.transport.AiohttpTransport`, aiohttp);
- with `--baseline TREE`, that checkout's transport for `http://` (an older tree's `Http1Transport`
  where it has one: `git archive 41a44f8 | tar -x -C /tmp/base` has the hand-written HTTP/1.1 client);
- with `--httpx PYTHON`, httpx's `AsyncClient` in that interpreter (bench/.peers-venv has httpx once
  bench_peers.py has made it; it needs uvloop there too).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve()
ROOT = HERE.parents[1]
EVENTS = [{"choices": [{"index": 0, "delta": {"content": t}, "finish_reason": None}]} for t in
          ("Thought: one", " two", "\nFinal Answer: 5")]
EVENTS += [{"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]},
           {"choices": [], "usage": {"prompt_tokens": 20, "completion_tokens": 5}}]
BODY = b"".join(f"data: {json.dumps(e)}\n\n".encode() for e in EVENTS) + b"data: [DONE]\n\n"
ANSWER = (b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"
          + f"{len(BODY):x}\r\n".encode() + BODY + b"\r\n0\r\n\r\n")
REQUEST = json.dumps({"model": "m", "messages": [{"role": "user", "content": "x" * 2000}],
                      "stream": True}).encode()
HEADERS = {"Content-Type": "application/json", "Authorization": "Bearer k"}


async def serve() -> None:
    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                length = next(int(line.split(b":")[1]) for line in head.split(b"\r\n")
                              if line.lower().startswith(b"content-length"))
                await reader.readexactly(length)
                writer.write(ANSWER)
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    print(server.sockets[0].getsockname()[1], flush=True)
    async with server:
        await server.serve_forever()


async def client(kind: str, port: int, count: int) -> None:
    url = f"http://127.0.0.1:{port}/v1/chat/completions"
    if kind == "httpx":
        import httpx

        http = httpx.AsyncClient(timeout=30.0)

        async def once() -> None:
            async with http.stream("POST", url, content=REQUEST, headers=HEADERS) as reply:
                async for _ in reply.aiter_raw():
                    pass
    else:
        try:  # an older tree's own HTTP/1.1 client, where it has one
            from mini_agent.llm.http1 import Http1Transport as Transport  # type: ignore[import-not-found]
        except ImportError:
            from mini_agent.llm.transport import AiohttpTransport as Transport
        transport = Transport()

        async def once() -> None:
            async with transport.post(url, REQUEST, HEADERS, 30.0) as reply:
                async for _ in reply.chunks():
                    pass

    for _ in range(200):
        await once()
    times = []
    cpu = time.process_time()
    for _ in range(count):
        started = time.perf_counter()
        await once()
        times.append(time.perf_counter() - started)
    print(json.dumps({"median_ms": statistics.median(times) * 1e3,
                      "cpu_ms": (time.process_time() - cpu) / count * 1e3}))


def run_client(python: str, tree: Path | None, kind: str, port: int, count: int) -> dict[str, float]:
    env = dict(os.environ)
    if tree is not None:
        env["PYTHONPATH"] = str(tree / "server")
    done = subprocess.run([python, str(HERE), "--role", kind, "--port", str(port), "--requests", str(count)],
                          env=env, capture_output=True, text=True, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--requests", type=int, default=2000)
    parser.add_argument("--baseline", type=Path)
    parser.add_argument("--httpx", metavar="PYTHON")
    parser.add_argument("--role", choices=["serve", "transport", "httpx"], help=argparse.SUPPRESS)
    parser.add_argument("--port", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.role is not None:
        try:
            import uvloop

            uvloop.install()
        except ImportError:
            pass
        asyncio.run(serve() if args.role == "serve" else client(args.role, args.port, args.requests))
        return 0
    command = [sys.executable, str(HERE), "--role", "serve"]
    server = subprocess.Popen(command, stdout=subprocess.PIPE, text=True)
    assert server.stdout is not None
    port = int(server.stdout.readline())
    clients: dict[str, tuple[str, Path | None, str]] = {
        "this checkout (aiohttp)": (sys.executable, ROOT, "transport")
    }
    if args.baseline is not None:
        clients[f"baseline {args.baseline}"] = (sys.executable, args.baseline, "transport")
    if args.httpx is not None:
        clients["httpx AsyncClient"] = (args.httpx, None, "httpx")
    figures: dict[str, list[dict[str, float]]] = {name: [] for name in clients}
    try:
        for _ in range(args.rounds):
            for name, (python, tree, kind) in clients.items():
                figures[name].append(run_client(python, tree, kind, port, args.requests))
    finally:
        server.terminate()
        server.wait()
    print(f"| client | median ms / request | CPU ms / request | ({args.rounds} rounds of {args.requests}) |")
    print("|---|---|---|---|")
    for name, rounds in figures.items():
        wall = statistics.median(r["median_ms"] for r in rounds)
        cpu = statistics.median(r["cpu_ms"] for r in rounds)
        print(f"| {name} | {wall:.3f} | {cpu:.3f} | |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

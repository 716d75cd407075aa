"""`python -m mini_agent.scripted --script turns.json`: serve a script until SIGINT or SIGTERM; the
first stdout line is the base URL."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import signal
import sys
from collections.abc import Sequence

from mini_agent.scripted.script import Script
from mini_agent.scripted.server import ReplayServer


async def _serve(script: Script, host: str, port: int) -> None:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(signum, stop.set)
    async with ReplayServer(script, host=host, port=port) as server:
        print(server.base_url, flush=True)
        await stop.wait()


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m mini_agent.scripted",
        description="A scripted OpenAI-compatible model server, for demos and tests.",
    )
    parser.add_argument("--script", required=True, help="the script, a JSON file (see the module docs)")
    parser.add_argument("--port", type=int, default=0, help="port to listen on (default: any free one)")
    parser.add_argument("--host", default="127.0.0.1")
    args = parser.parse_args(argv)
    try:
        script = Script.load(args.script)
    except (OSError, ValueError, KeyError, TypeError) as exc:
        print(f"replay: cannot load {args.script}: {exc}", file=sys.stderr)
        return 2
    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(_serve(script, args.host, args.port))
    return 0

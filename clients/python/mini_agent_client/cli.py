"""The `mini-agent` command line."""

from __future__ import annotations

import argparse
import asyncio
import sys


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="mini-agent", description="Run tool-using LLM agents from editors.")
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("serve", help="run the daemon on stdio (what editors start)")
    demo = commands.add_parser("demo", help="the seed scenario against a replayed model")
    demo.add_argument("--tool-mode", choices=["react", "native"], default="react")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.command == "serve":
        from mini_agent.server import main as serve

        serve()
        return 0
    from .demo import run_demo

    return asyncio.run(run_demo(tool_mode=args.tool_mode))


if __name__ == "__main__":
    sys.exit(main())

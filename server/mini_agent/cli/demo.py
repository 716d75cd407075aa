"""`mini-agent demo`: the seed scenario end to end, through a real daemon and a replayed model.

The model is a scripted OpenAI-compatible server (mini_agent.scripted) on 127.0.0.1; everything else is
the real path: the daemon over stdio, tools reflected and run in the tool host, observations fed back.
"""

from __future__ import annotations

import json
import shutil
import sys
import tempfile
from importlib import resources
from pathlib import Path
from typing import Any, TextIO

from mini_agent_client.client import AgentClient, Event

from mini_agent.cli.terminal import safe

TASK = "Which Python files are in the workspace, and how many non-empty lines does schema.py have?"
# The answer to every part of it, `count` the tool's result (the scripts quote it through the placeholder).
ANSWER = "The workspace has metrics.py, schema.py and tools.py; schema.py has {count} non-empty lines."
_QUOTED = ANSWER.format(count="{last_observation}")

# Step 2 passes `path` instead of `file_path`: the error observation names the right parameter and
# step 3 repairs the call. Step 4 quotes the real tool result through the replay placeholder.
SCRIPT: list[dict[str, Any]] = [
    {"content": 'Thought: First I need to see which Python files the workspace has.\n'
                'Action: list_python_files\nAction Input: {"directory": "."}'},
    {"content": 'Thought: schema.py is there. Now I count its non-empty lines.\n'
                'Action: count_file_lines\nAction Input: {"path": "schema.py", "ignore_empty": true}'},
    {"content": 'Thought: The tool says the parameter is called file_path, not path. Calling it again.\n'
                'Action: count_file_lines\nAction Input: {"file_path": "schema.py", "ignore_empty": true}'},
    {"content": "Thought: I have the list of files and the count from the tools.\n"
                "Final Answer: " + _QUOTED},
]
# The same four turns as a server with native tool calling plays them (`--tool-mode native`).
NATIVE_SCRIPT: list[dict[str, Any]] = [
    {"content": "First I need to see which Python files the workspace has.",
     "tool_calls": [{"name": "list_python_files", "arguments": {"directory": "."}}]},
    {"content": "schema.py is there. Now I count its non-empty lines.",
     "tool_calls": [{"name": "count_file_lines", "arguments": {"path": "schema.py", "ignore_empty": True}}]},
    {"content": "The tool says the parameter is called file_path, not path. Calling it again.",
     "tool_calls": [{"name": "count_file_lines",
                     "arguments": {"file_path": "schema.py", "ignore_empty": True}}]},
    {"content": _QUOTED},
]


def example_workspace() -> Path:
    return Path(str(resources.files("mini_agent") / "examples" / "workspace"))


async def run_demo(out: TextIO = sys.stdout, *, tool_mode: str = "react") -> int:
    from mini_agent.scripted import ReplayServer

    print("mini-agent demo — the model is REPLAYED from a script (no real LLM is called); "
          "daemon, tools and protocol are real.", file=out)
    with tempfile.TemporaryDirectory(prefix="mini-agent-demo-") as tmp:
        root = Path(tmp) / "workspace"
        shutil.copytree(example_workspace(), root, ignore=shutil.ignore_patterns("__pycache__"))
        async with ReplayServer(NATIVE_SCRIPT if tool_mode == "native" else SCRIPT) as model:
            options = {"llm": {"baseUrl": model.base_url, "model": "replay", "toolMode": tool_mode},
                       "store": {"enabled": False}}
            async with AgentClient.spawn(root=root, options=options) as client:
                tools = await client.register_tool("tools.py")
                print(f"workspace: {root}", file=out)
                for tool in tools:
                    print(f"tool {tool['name']}: {json.dumps(tool['inputSchema'])}", file=out)
                print(f"task: {TASK}\n", file=out)
                result: dict[str, Any] = {}
                async for event in client.run(TASK):
                    _show(event, out)
                    if event.kind == "result":
                        result = event.data
        _summary(result, out)
        return 0 if result.get("stopReason") == "end_turn" else 1


def _show(event: Event, out: TextIO) -> None:
    """One event as plain lines; what the model, a tool or the daemon wrote goes through `safe`."""
    step, data = event.step + 1, event.data
    if event.kind == "agent_thought_chunk":
        out.write(safe(data.get("text", ""), lines=True))
        out.flush()
    elif event.kind == "tool_call":
        arguments = data.get("rawArguments") or json.dumps(data["arguments"])
        print(f"\n[step {step}] call   {safe(data['name'])} {safe(arguments, lines=True)}", file=out)
    elif event.kind == "tool_call_update" and "observation" in data:
        obs = data["observation"]
        label = "error " if obs["isError"] else "result"
        print(f"[step {step}] {label} {safe(obs['output'], lines=True)}", file=out)
    elif event.kind == "agent_message_chunk":
        print(f"\n[step {step}] answer {safe(data.get('text', ''), lines=True)}", file=out)
    elif event.kind == "status" and data.get("message"):
        print(f"[step {step}] {safe(data['message'], lines=True)}", file=out)


def _summary(result: dict[str, Any], out: TextIO) -> None:
    usage = result.get("usage", {})
    print("\nsummary", file=out)
    print(f"  session id : {result.get('sessionId')}", file=out)
    print(f"  status     : {result.get('status')} ({result.get('stopReason')})", file=out)
    print(f"  steps      : {result.get('steps')}", file=out)
    print(f"  tokens     : prompt {usage.get('promptTokens')}, completion {usage.get('completionTokens')}, "
          f"cached {usage.get('cachedTokens')}", file=out)
    print("  (the model was replayed from a script; token counts come from the replay server)", file=out)

"""Every `mini-agent` command line and client program in the README and the docs runs here exactly
as written, so the documentation cannot drift from the program.

The examples are read from the fenced blocks of README.md, docs/*.md, docs/editors/*.md and
editors/*/README.md: each
line of a `sh` / `bash` / `shell` / `console` block (there, each `$ ` line) that runs `mini-agent`,
and each `python` block that uses mini_agent_client, is one test. They run in document order (bash
with `pipefail`; Python as a script) in one copy of the example workspace, against the replay model
server — which the environment names, as a reader's shell would after the README's
`export OPENAI_BASE_URL=…`. A block that cannot run here carries a visible marker on the line
before its fence, `<!-- docs-test: skip: why -->`; its examples are reported as skipped with that
reason, and nothing else is skipped.
"""

from __future__ import annotations

import asyncio
import json
import re
import shlex
import shutil
import subprocess
import sys
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio
from mini_agent.scripted import ReplayServer

from ...support.daemon import EXAMPLE, ROOT, daemon_env

DOCUMENTS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")),
             *sorted((ROOT / "docs" / "editors").glob("*.md")),
             *sorted((ROOT / "editors").glob("*/README.md"))]
SHELLS = {"sh", "bash", "shell", "console"}
FENCE = re.compile(r"^\s*(```+|~~~+)\s*([\w-]*)")
SKIP = re.compile(r"^\s*<!--\s*docs-test:\s*skip:\s*(?P<why>.+?)\s*-->\s*$")
MARKER = re.compile(r"<!--\s*docs-test")
RUNS_MINI_AGENT = re.compile(r"(?:^|[|;&(]\s*)mini-agent(?=\s|$)")

# What each subcommand's output must show to count as having done its job (the replayed model
# answers with the real tool result; see `answer`).
EXPECTED = {
    "ask": r"schema\.py has \d+ lines",
    "demo": r"answer The workspace has metrics\.py, schema\.py and tools\.py; schema\.py has \d+ non-empty",
    "tools": r'"name": "count_file_lines"',
    "sessions": r"sess_[0-9a-f]+",
    "models": r"(?m)^\* \S+",  # the current model, marked
    "doctor": r"(?m)^sandbox: (on|off|unavailable|unconfined) ",
    "setup": r"(?m)^Saved to \S+settings\.json \(readable by you alone\)\.$",
    "python": r"schema\.py has \d+ lines",
}
# A client program runs as written, with top-level `async with` / `await` allowed (as in
# `python -m asyncio`) and `url`, the name the README leaves to the reader, set to the model server's.
PYTHON = """
import ast, asyncio, os, sys
code = compile(sys.argv[1], "<example>", "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)
outcome = eval(code, {"__name__": "__main__", "url": os.environ["OPENAI_BASE_URL"]})
if asyncio.iscoroutine(outcome):
    asyncio.run(outcome)
"""


@dataclass(frozen=True)
class Example:
    document: str
    line: int
    language: str  # "sh" (one command line) or "python" (a whole client program)
    command: str
    skip: str | None

    @property
    def where(self) -> str:
        return f"{self.document}:{self.line}"

    @property
    def subcommand(self) -> str:
        if self.language == "python":
            return "python"
        rest = RUNS_MINI_AGENT.split(self.command, maxsplit=1)[-1]
        words = shlex.split(rest, comments=True)
        return words[0] if words else ""


@dataclass
class Block:
    language: str
    skip: str | None
    lines: list[tuple[int, str]]


def blocks(text: str) -> Iterator[Block]:
    """The fenced blocks of a markdown text, each with the skip marker on the line before its fence."""
    block: Block | None = None
    fence = previous = ""
    for number, line in enumerate(text.splitlines(), 1):
        opened = FENCE.match(line)
        if block is None and opened:
            marker = SKIP.match(previous)
            fence = opened.group(1)
            block = Block(opened.group(2).lower(), marker.group("why") if marker else None, [])
        elif block is not None and opened and opened.group(1).startswith(fence) and not opened.group(2):
            yield block
            block = None
        elif block is not None:
            block.lines.append((number, line))
        if line.strip():
            previous = line


def examples(path: Path) -> Iterator[Example]:
    """A document's `mini-agent` command lines (shell blocks) and client programs (Python blocks that
    use mini_agent_client)."""
    document = str(path.relative_to(ROOT))
    for block in blocks(path.read_text(encoding="utf-8")):
        if block.language == "python" and "mini_agent_client" in "".join(line for _, line in block.lines):
            source = "\n".join(line for _, line in block.lines)
            yield Example(document, block.lines[0][0], "python", source, block.skip)
        if block.language not in SHELLS:
            continue
        pending = ""  # a command continued with a trailing backslash
        for number, line in block.lines:
            if block.language == "console":
                if not line.startswith("$ "):
                    continue
                line = line[2:]
            if line.endswith("\\"):
                pending += line[:-1] + " "
                continue
            command, pending = (pending + line).strip(), ""
            if RUNS_MINI_AGENT.search(command) and not command.startswith("#"):
                yield Example(document, number, "sh", command, block.skip)


EXAMPLES = [example for document in DOCUMENTS for example in examples(document)]


def answer(body: dict[str, Any]) -> dict[str, Any]:
    """The replayed model: count schema.py's lines with the tool, then answer with the tool's result."""
    native = bool(body.get("tools"))
    if any(message["role"] == "assistant" for message in body["messages"]):
        text = "schema.py has {last_observation} lines."
        return {"content": text if native else f"Final Answer: {text}"}
    if "count_file_lines" not in json.dumps(body):
        return {"content": "Final Answer: I have no tool to count lines with."}
    arguments = {"file_path": "schema.py"}
    if native:
        return {"tool_calls": [{"name": "count_file_lines", "arguments": arguments}]}
    return {"content": "Thought: I count them.\nAction: count_file_lines\n"
                       f"Action Input: {json.dumps(arguments)}"}


@dataclass(frozen=True)
class Shell:
    workspace: Path
    env: dict[str, str]


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def shell(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Shell]:
    """A reader's shell: in the example workspace, `mini-agent` on PATH (this source tree's), and the
    model server named in the environment."""
    base = tmp_path_factory.mktemp("docs")
    workspace = base / "workspace"
    shutil.copytree(EXAMPLE, workspace, ignore=shutil.ignore_patterns("__pycache__"))
    bin_dir = base / "bin"
    bin_dir.mkdir()
    launcher = bin_dir / "mini-agent"
    launcher.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m mini_agent.cli "$@"\n')
    launcher.chmod(0o755)
    async with ReplayServer(responder=answer) as model:
        env = daemon_env(COLUMNS="120", OPENAI_BASE_URL=model.base_url, MINI_AGENT_MODEL="replay")
        env.pop("OPENAI_API_KEY", None)
        env["PATH"] = f"{bin_dir}:{env.get('PATH', '')}"
        yield Shell(workspace, env)


def test_the_examples_are_found() -> None:
    """The extraction itself: the README's shell examples are there, and every marker sits on a block."""
    commands = [example.command for example in EXAMPLES if example.document == "README.md"]
    assert any(command.startswith("mini-agent ask --tools tools.py") for command in commands), commands
    assert "mini-agent demo" in commands
    assert any(example.language == "python" for example in EXAMPLES if example.document == "README.md")
    for document in DOCUMENTS:
        lines = document.read_text(encoding="utf-8").splitlines()
        for number, line in enumerate(lines, 1):
            if MARKER.search(line):
                following = next((text for text in lines[number:] if text.strip()), "")
                assert SKIP.match(line) and FENCE.match(following), f"{document}:{number}: stray {line}"


@pytest.mark.asyncio(loop_scope="module")
@pytest.mark.parametrize("example", EXAMPLES, ids=[example.where for example in EXAMPLES])
async def test_example_runs_as_written(example: Example, shell: Shell) -> None:
    if example.skip is not None:
        pytest.skip(f"marked in {example.where}: {example.skip}")
    if example.language == "python":
        argv = [sys.executable, "-c", PYTHON, example.command]
    else:
        argv = ["bash", "-o", "pipefail", "-c", example.command]
    done = await asyncio.to_thread(subprocess.run, argv, cwd=shell.workspace, env=shell.env,
                                   stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=120,
                                   check=False)
    shown = f"{example.command}\n---\n{done.stdout}\n{done.stderr}"
    assert done.returncode == 0, shown
    expected = EXPECTED.get(example.subcommand)
    assert expected is not None, f"say in EXPECTED what `{example.subcommand}` examples must print"
    assert re.search(expected, done.stdout), shown

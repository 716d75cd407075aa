"""Files the tests write into a workspace: tool files, the workspace configuration file."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from mini_agent.core.contracts import Observation, ToolCall
from mini_agent.tools.registry import ToolRegistry

DOWN = "http://127.0.0.1:9/v1"  # the discard port: a model request there fails, naming it


# A workspace tool, `mark`, that that the trust tests name in a folder's workspace file.
MARKED = '''from mini_agent import tool


@tool
def mark(n: int) -> str:
    """Mark a number.

    Args:
        n: the number.
    """
    return f"marked {n}"
'''

# A workspace tool that prints a line and reports its progress every 0.3 s for 3 s (live output).
TICKER = '''
import time

from mini_agent.tools.progress import report


def tick() -> str:
    """Print a line every 0.3 s for 3 s."""
    for index in range(10):
        print(f"tick {index}")
        report(f"tick {index}", fraction=(index + 1) / 10)
        time.sleep(0.3)
    return "ticked"
'''


def write(root: Path, where: str, body: str) -> Path:
    """`body` at `root / where`, its folders made first."""
    path = root / where
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(body, encoding="utf-8")
    return path


def tool_call(name: str, /, **arguments: Any) -> ToolCall:
    """A call of `name` as a model would make it, raw arguments included."""
    return ToolCall(id=f"call-{name}", name=name, arguments=arguments, raw_arguments=json.dumps(arguments))


async def run(registry: ToolRegistry, name: str, /, **arguments: Any) -> Observation:
    """Execute one call through the registry, as session `s1`."""
    return await registry.execute(tool_call(name, **arguments), session_id="s1")

NOISY = '''
import os, sys

def shout(text: str) -> str:
    """Print a lot, to every stream, then crash the host on request."""
    print("PRINTED " + text)
    os.write(1, b"RAW FD1 WRITE\\n")
    sys.stderr.write("stderr noise\\n")
    if text == "exit":
        os._exit(3)
    return text.upper()
'''

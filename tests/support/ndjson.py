"""A door that speaks NDJSON on stdio (`mini-agent acp`, `mini-agent mcp`) driven with hand-made lines,
so lines no SDK client would send can be sent too; every wait for an answer is bounded."""

from __future__ import annotations

import json
import selectors
import subprocess
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from .daemon import daemon_env

ANSWER_WAIT = 30.0  # seconds a test waits for one line before it calls the door stuck


class RawLines:
    """The command on pipes, one line out, one line back; stderr goes to a file beside `cwd`."""

    def __init__(self, command: Sequence[str], cwd: Path) -> None:
        self.stderr_path = cwd.parent / f"{cwd.name}.stderr"
        with self.stderr_path.open("wb") as stderr:
            self.process = subprocess.Popen(
                list(command), cwd=cwd, env=daemon_env(), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                stderr=stderr, bufsize=0,  # unbuffered: what `read` waits on is what is left unread
            )
        self._next = 0

    def send_line(self, line: bytes) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(line + b"\n")
        self.process.stdin.flush()

    def read(self) -> dict[str, Any]:
        """The next line the door writes; fails when none comes within `ANSWER_WAIT`."""
        assert self.process.stdout is not None
        with selectors.DefaultSelector() as selector:
            selector.register(self.process.stdout, selectors.EVENT_READ)
            assert selector.select(ANSWER_WAIT), f"no answer within {ANSWER_WAIT} s"
        line = self.process.stdout.readline()
        assert line, f"the door closed its stdout (exit code {self.process.poll()})"
        message: dict[str, Any] = json.loads(line)
        return message

    def answer(self, line: bytes) -> dict[str, Any]:
        """Send `line` and read the answer (skipping notifications)."""
        self.send_line(line)
        while True:
            message = self.read()
            if "method" not in message:
                return message

    def request(self, method: str, params: Any = None) -> dict[str, Any]:
        self._next += 1
        message = {"jsonrpc": "2.0", "id": self._next, "method": method, "params": params}
        answer = self.answer(json.dumps(message).encode())
        assert answer["id"] == self._next, answer
        return answer

    def close(self) -> int:
        """Close stdin and wait for the door to exit; its exit code."""
        assert self.process.stdin is not None
        self.process.stdin.close()
        try:
            return self.process.wait(timeout=ANSWER_WAIT)
        finally:
            if self.process.poll() is None:
                self.process.kill()
                self.process.wait()

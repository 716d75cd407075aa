"""The daemon driven with hand-made frames (so malformed ones can be sent too)."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from .daemon import DAEMON, daemon_env


class RawDaemon:
    """The daemon as a subprocess driven with hand-made frames; stderr goes to a file."""

    def __init__(self, workspace: Path, *, command: Sequence[str] = DAEMON, **env: str) -> None:
        self.workspace = workspace
        self.stderr_path = workspace.parent / "daemon.stderr"
        self.stderr = self.stderr_path.open("wb")
        self.process = subprocess.Popen(
            list(command),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self.stderr,
            env=daemon_env(**env),
            cwd=workspace,
        )
        self.next_id = 0
        self.notifications: list[dict[str, Any]] = []

    def send_bytes(self, body: bytes) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
        self.process.stdin.flush()

    def read(self) -> dict[str, Any]:
        assert self.process.stdout is not None
        length = None
        while True:
            line = self.process.stdout.readline()
            assert line, "the daemon closed its stdout"
            assert line.endswith(b"\r\n") and (line == b"\r\n" or b":" in line), f"not a header: {line!r}"
            if line == b"\r\n":
                break
            name, _, value = line.partition(b":")
            if name.lower() == b"content-length":
                length = int(value)
        assert length is not None
        message: dict[str, Any] = json.loads(self.process.stdout.read(length))
        return message

    def request(self, method: str, params: Any = None) -> dict[str, Any]:
        self.next_id += 1
        self.send_bytes(
            json.dumps({"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params}).encode()
        )
        return self.answer_to(self.next_id)

    def answer_to(self, msg_id: Any) -> dict[str, Any]:
        while True:
            message = self.read()
            if "method" not in message and message.get("id") == msg_id:
                return message
            self.notifications.append(message)

    def initialize(self, options: dict[str, Any] | None = None) -> dict[str, Any]:
        result = self.request(
            "initialize",
            {
                "processId": None,
                "rootUri": self.workspace.as_uri(),
                "capabilities": {},
                "initializationOptions": options or {},
            },
        )
        self.send_bytes(json.dumps({"jsonrpc": "2.0", "method": "initialized", "params": {}}).encode())
        return result

    def close(self) -> int:
        self.request("shutdown")
        self.send_bytes(b'{"jsonrpc": "2.0", "method": "exit"}')
        code = self.process.wait(timeout=20)
        self.stderr.close()
        return code


def error_of(answer: dict[str, Any]) -> dict[str, Any]:
    assert "error" in answer, answer
    error: dict[str, Any] = answer["error"]
    return error

"""The frame-ordering contract of `mini_agent.plumbing.pipes` (its module docstring), over a real pipe."""

from __future__ import annotations

import asyncio
import os
import threading

import pytest
from mini_agent.plumbing.pipes import SafeWriter


def _available(fd: int) -> bytes:
    """What the pipe holds right now (the read end is non-blocking)."""
    chunks: list[bytes] = []
    while True:
        try:
            chunk = os.read(fd, 65536)
        except BlockingIOError:
            return b"".join(chunks)
        if not chunk:
            return b"".join(chunks)
        chunks.append(chunk)


@pytest.mark.asyncio
async def test_frames_reach_the_client_in_write_order_and_no_response_overtakes_a_notification() -> None:
    read_fd, write_fd = os.pipe()
    os.set_blocking(read_fd, False)
    stream = os.fdopen(write_fd, "wb", buffering=0)
    writer = SafeWriter(stream, newline=True)
    writer.LINGER_SEC = 60.0  # longer than the test: only other frames let a notification out
    seen = b""
    try:
        writer.write(b"n1", linger=True)
        writer.write(b"n2", linger=True)
        await asyncio.sleep(0)
        assert _available(read_fd) == b""  # notifications may wait ...
        writer.write(b"r1")  # ... but leave with, and before, the next response
        writer.write(b"n3", linger=True)  # written in the same turn: goes in the same batch
        assert _available(read_fd) == b""  # a response goes out at the loop's next turn
        await asyncio.sleep(0)
        seen += _available(read_fd)
        assert seen == b"n1\nn2\nr1\nn3\n"

        writer.write(b"n4", linger=True)
        other = threading.Thread(target=writer.write, args=(b"t1",))  # off the loop: out at once
        other.start()
        other.join()
        seen += _available(read_fd)
        assert seen.endswith(b"n4\nt1\n")

        writer.write(b"n5", linger=True)
        writer.write(b"r2")
        writer.write(b"n6", linger=True)
        writer.close()  # flushes what is held
        seen += _available(read_fd)
        assert seen.split(b"\n")[:-1] == [b"n1", b"n2", b"r1", b"n3", b"n4", b"t1", b"n5", b"r2", b"n6"]
        writer.write(b"after")  # closed: dropped, not raised
    finally:
        writer.close()
        os.close(read_fd)

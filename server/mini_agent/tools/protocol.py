"""The daemon ⇄ tool host wire: length-prefixed JSON frames on a private pipe pair.

Shared by both sides. fd 0/1/2 are never used for frames: whatever a tool prints cannot corrupt
the protocol. JSON goes through pydantic_core (both processes load pydantic anyway): on the per-call
path it is several times faster than the json module.
"""

from __future__ import annotations

import os
import struct
from typing import Any

from pydantic_core import from_json, to_json

HEADER = struct.Struct(">I")
MAX_FRAME_BYTES = 256 * 1024 * 1024
TRUNCATION_MARKER = "\n[… output truncated: {total} bytes, showing the {part} {shown} bytes]"


class ProtocolError(Exception):
    """A frame that cannot be decoded: the peer is broken or something wrote onto the pipe."""


def encode(message: dict[str, Any]) -> bytes:
    body = to_json(message)
    return HEADER.pack(len(body)) + body


def frame_length(header: bytes) -> int:
    (length,) = HEADER.unpack(header)
    if length > MAX_FRAME_BYTES:
        raise ProtocolError(f"frame of {length} bytes exceeds the limit")
    return int(length)


def decode(body: bytes) -> dict[str, Any]:
    try:
        message = from_json(body)
    except ValueError as exc:
        raise ProtocolError(f"undecodable frame: {exc}") from exc
    if not isinstance(message, dict):
        raise ProtocolError("frame is not a JSON object")
    return message


def cap_text(text: str, limit: int) -> tuple[str, bool]:
    """Cut `text` to its first `limit` UTF-8 bytes plus a marker line; say whether it was cut."""
    if len(text) * 4 <= limit:  # no need to encode: UTF-8 takes at most 4 bytes a character
        return text, False
    data = text.encode()
    if len(data) <= limit:
        return text, False
    shown = data[:limit].decode(errors="ignore")
    return shown + TRUNCATION_MARKER.format(total=len(data), part="first", shown=limit), True


def read_log(fd: int, limit: int) -> str:
    """The last `limit` bytes of the capture file behind `fd` (a marker line says if more was cut)."""
    size = os.fstat(fd).st_size
    if size == 0:
        return ""
    text = os.pread(fd, limit, max(0, size - limit)).decode(errors="replace")
    if size <= limit:
        return text
    marker = TRUNCATION_MARKER.format(total=size, part="last", shown=limit).lstrip("\n")
    return marker + "\n" + text

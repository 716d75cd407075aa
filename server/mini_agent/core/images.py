"""Images bound for the model: those a person attaches to a prompt, as the doors take them (each
refusal an error that names the image and the bound), and those a tool returns (`passed_on`: what
passes, and a word for the rest).

A prompt, or one tool result, carries at most `MAX_IMAGES`, each at most `MAX_IMAGE_BYTES` once
decoded, of the kinds vision models read (`MEDIA_TYPES`), as base64 (standard alphabet, padding as it
falls; whitespace is refused, not skipped). The bytes are not decoded into pixels here: the model
server does that.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Iterable

from mini_agent.core.contracts import Image
from mini_agent.core.errors import AgentError

MAX_IMAGES = 4
MAX_IMAGE_BYTES = 5 * 1024 * 1024
MEDIA_TYPES = ("image/png", "image/jpeg", "image/gif", "image/webp")
TOO_LARGE = f"larger than {MAX_IMAGE_BYTES} bytes, the most one image may hold"


class ImageRefused(AgentError):
    """An attached image past a bound, of a kind not taken, or not base64."""

    reason = "image_refused"


def checked(images: Iterable[tuple[str, str]], where: str) -> tuple[Image, ...]:
    """`(mime_type, base64 data)` pairs as `Image`s, each checked; `where` names them in errors
    (`prompt`, `images`)."""
    found = list(images)
    if len(found) > MAX_IMAGES:
        raise ImageRefused(f"{where}: {len(found)} images, more than the {MAX_IMAGES} a prompt may carry",
                           count=len(found), limit=MAX_IMAGES)
    out: list[Image] = []
    for index, (mime_type, data) in enumerate(found):
        problem = refusal(mime_type, data)
        if problem is not None:
            limit = {"limit": MAX_IMAGE_BYTES} if problem == TOO_LARGE else {}
            raise ImageRefused(f"{where}[{index}]: {problem}", index=index, **limit)
        out.append(Image(mime_type, data))
    return tuple(out)


def refusal(mime_type: str, data: str) -> str | None:
    """Why one image is not taken (None: it is), in words that follow its name."""
    if mime_type not in MEDIA_TYPES:
        return f"mimeType {mime_type[:80]!r} is not one of {', '.join(MEDIA_TYPES)}"
    if len(data) > (MAX_IMAGE_BYTES + 2) // 3 * 4:  # more base64 than that many bytes make: not decoded
        return TOO_LARGE
    try:
        size = len(base64.b64decode(data, validate=True))
    except (binascii.Error, ValueError):
        return "data is not base64"
    if size > MAX_IMAGE_BYTES:
        return TOO_LARGE
    if size == 0:
        return "the image is empty"
    return None


def passed_on(images: Iterable[tuple[str, str]]) -> tuple[tuple[Image, ...], list[str | None]]:
    """The images a tool returned that go on to the model, and for each one given, None when it went
    or why it did not (past the count, or `refusal`): a tool's result is never refused for them."""
    taken: list[Image] = []
    why: list[str | None] = []
    for mime_type, data in images:
        problem = refusal(mime_type, data)
        if problem is None and len(taken) == MAX_IMAGES:
            problem = f"more than the {MAX_IMAGES} images one result may pass on"
        if problem is None:
            taken.append(Image(mime_type, data))
        why.append(problem)
    return tuple(taken), why


def left_out_status(mode: str, count: int, whose: str) -> str | None:
    """The status line a person sees when a text-only tool mode leaves images out of the model's view
    (None when there are none, or `mode` sends them); `whose` says where they came from ("attached")."""
    if not count or mode not in ("react", "json"):
        return None
    images = f"{count} image" + ("s" if count > 1 else "")
    return (f"The {images} {whose} {'were' if count > 1 else 'was'} not sent to the model: tool mode {mode} "
            "sends it text only (native mode sends images).")


def decoded_size(data: str) -> int:
    """How many bytes base64 `data` holds (without decoding it)."""
    return len(data) * 3 // 4 - data[-2:].count("=")

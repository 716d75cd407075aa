"""Images a person attaches to a prompt, as the doors take them: bounded in count, size and kind, each
refusal an error that names the image and the bound.

A prompt carries at most `MAX_IMAGES`, each at most `MAX_IMAGE_BYTES` once decoded, of the kinds
vision models read (`MEDIA_TYPES`), as base64 (standard alphabet, padding as it falls; whitespace is
refused, not skipped). The bytes are not decoded into pixels here: the model server does that.
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
        name = f"{where}[{index}]"
        if mime_type not in MEDIA_TYPES:
            raise ImageRefused(f"{name}: mimeType {mime_type[:80]!r} is not one of {', '.join(MEDIA_TYPES)}",
                               index=index)
        too_large = ImageRefused(f"{name}: larger than {MAX_IMAGE_BYTES} bytes, the most one image may hold",
                                 index=index, limit=MAX_IMAGE_BYTES)
        if len(data) > (MAX_IMAGE_BYTES + 2) // 3 * 4:  # more base64 than that many bytes make: not decoded
            raise too_large
        try:
            size = len(base64.b64decode(data, validate=True))
        except (binascii.Error, ValueError):
            raise ImageRefused(f"{name}: data is not base64", index=index) from None
        if size > MAX_IMAGE_BYTES:
            raise too_large
        if size == 0:
            raise ImageRefused(f"{name}: the image is empty", index=index)
        out.append(Image(mime_type, data))
    return tuple(out)

"""A person's turn as content: its parts in order (`contracts.Part`: words, images, resources), and
what the model is given of them.

The model reads words and sees images; a resource becomes words where it stands (a link as a Markdown
link, an embedded text as a `<context>` block), so every tool mode and every server takes it. The parts
themselves are kept with the turn (`Message.parts`) when they say more than its words and images do,
so a replay gives the client back the blocks it sent.
"""

from __future__ import annotations

from collections.abc import Sequence

from mini_agent.core.contracts import Image, Part, Resource


def words(parts: Sequence[Part]) -> str:
    """The words of `parts` as the model reads them, parts apart by a blank line; images travel apart."""
    return "\n\n".join(said for part in parts if (said := _words(part)) is not None)


def images(parts: Sequence[Part]) -> tuple[Image, ...]:
    return tuple(part for part in parts if isinstance(part, Image))


def kept(parts: Sequence[Part]) -> tuple[Part, ...]:
    """`parts` when their words and images alone would lose something (a resource, an image before
    words), else none: a turn of words, then images, is its message's `content` and `images`."""
    seen_image = False
    for part in parts:
        if isinstance(part, Resource) or (seen_image and isinstance(part, str)):
            return tuple(parts)
        seen_image = seen_image or isinstance(part, Image)
    return ()


def _words(part: Part) -> str | None:
    if isinstance(part, str):
        return part
    if isinstance(part, Image):
        return None
    if part.text is None:
        return f"[{part.name or part.uri}]({part.uri})"
    return f'<context uri="{part.uri}">\n{part.text}\n</context>'

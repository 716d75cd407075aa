"""`core.content`: what the model reads of a turn's parts, and which turns keep their parts."""

from __future__ import annotations

from mini_agent.core import content
from mini_agent.core.contracts import Image, Resource

PNG = Image("image/png", "iVBORw0K")


def test_resources_are_words_where_they_stand_and_images_travel_apart() -> None:
    parts = ("See", Resource("file:///w/a.py", "a.py"), PNG, Resource("file:///w/b.md", text="milk"),
             Resource("https://x.test/spec"))
    assert content.words(parts) == (
        'See\n\n[a.py](file:///w/a.py)\n\n<context uri="file:///w/b.md">\nmilk\n</context>\n\n'
        "[https://x.test/spec](https://x.test/spec)"
    )
    assert content.images(parts) == (PNG,)


def test_a_turn_keeps_its_parts_only_when_its_words_and_images_would_lose_something() -> None:
    assert content.kept(("just words",)) == ()
    assert content.kept(("words", PNG, PNG)) == ()  # words, then images: the message says it all
    assert content.kept((PNG, "then words")) == (PNG, "then words")
    linked = ("words", Resource("file:///w/a.py", "a.py"))
    assert content.kept(linked) == linked

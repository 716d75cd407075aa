"""Ordinary text and code to measure the token estimate on, and where the estimate falls short."""

from __future__ import annotations

import json
import random
from collections.abc import Callable

from mini_agent.core.budget import estimate

from .daemon import ROOT


def corpus() -> list[tuple[str, str]]:
    """Ordinary text and code: this repository's sources and docs, and a few generated kinds."""
    paths = [
        p
        for pattern in ("server/**/*.py", "tests/**/*.py", "docs/*", "*.md", "editors/**/*.ts")
        for p in ROOT.glob(pattern)
        if "node_modules" not in p.parts
    ]
    texts = [(str(p.relative_to(ROOT)), p.read_text(encoding="utf-8")) for p in sorted(paths) if p.is_file()]
    rng = random.Random(7)
    rows = [{"id": i, "name": f"item{i}", "price": round(rng.random() * 100, 2)} for i in range(300)]
    texts += [
        ("json", json.dumps(rows)),
        (
            "log",
            "\n".join(
                f"2026-12-01T14:{i % 60:02d}:07Z INFO worker-{i} wrote {i * 37} rows" for i in range(300)
            ),
        ),
        ("hex", " ".join(f"{rng.getrandbits(128):032x}" for _ in range(100))),
        ("french", "Le vif renard brun saute par-dessus le chien paresseux ; ça coûte très cher. " * 40),
        ("japanese", "これは普通の日本語の文章です。テストのために書きました。" * 40),
    ]
    return [(name, text) for name, text in texts if text.strip()]


def under(count: Callable[[str], int]) -> list[tuple[str, int, int]]:
    return [(name, estimate(text), count(text)) for name, text in corpus() if estimate(text) < count(text)]

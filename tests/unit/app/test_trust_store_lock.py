"""The trust store changed by many writers at once (threads here, each with its own lock descriptor, as
separate processes have): no decision is lost, and the lock file stays beside the store, 0600."""

from __future__ import annotations

import json
import threading
from pathlib import Path

from mini_agent.app import config, trust
from mini_agent.plumbing import statedir

WRITERS = 8
ROUNDS = 10


def folder(tmp_path: Path, name: str) -> Path:
    root = tmp_path / name
    root.mkdir()
    (root / "pyproject.toml").write_text('[tool.mini-agent.approval]\nallow = ["w"]\n', encoding="utf-8")
    return root


def test_eight_writers_trusting_and_untrusting_at_once_lose_no_decision(
    tmp_path: Path, state_dir: Path
) -> None:
    roots = [folder(tmp_path, f"f{n}") for n in range(WRITERS)]
    start = threading.Barrier(WRITERS)
    failures: list[BaseException] = []

    def write(root: Path, keep: bool) -> None:
        try:
            loaded = config.load(root)
            start.wait()
            for _ in range(ROUNDS):
                trust.remember(root, loaded)
                trust.forget(root)
            if keep:
                trust.remember(root, loaded)
        except BaseException as exc:
            failures.append(exc)

    threads = [threading.Thread(target=write, args=(root, n % 2 == 0)) for n, root in enumerate(roots)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert failures == []
    kept = {trust.real(root) for n, root in enumerate(roots) if n % 2 == 0}
    assert set(trust.load_store()) == kept
    lock = state_dir / ("trust.json" + statedir.LOCK_SUFFIX)
    assert lock.stat().st_mode & 0o777 == 0o600


def test_a_writer_waits_for_the_lock_and_then_keeps_what_the_holder_wrote(tmp_path: Path) -> None:
    first, second = folder(tmp_path, "first"), folder(tmp_path, "second")
    done = threading.Event()

    def trust_second() -> None:
        trust.remember(second, config.load(second))
        done.set()

    with statedir.locked(trust.store_path()):
        waiting = threading.Thread(target=trust_second)
        waiting.start()
        assert not done.wait(0.3)  # held up while the lock is held
        entry = {"digest": "x", "wouldRun": [], "trustedAt": "t"}  # the holder's own change, written
        trust.store_path().write_text(json.dumps({"version": 1, "folders": {trust.real(first): entry}}))
    waiting.join()
    assert set(trust.load_store()) == {trust.real(first), trust.real(second)}

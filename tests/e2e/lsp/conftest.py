"""Fixtures of the LSP door's end-to-end tests."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from ...support.raw import RawDaemon


@pytest.fixture
def raw(workspace: Path) -> Iterator[RawDaemon]:
    daemon = RawDaemon(workspace)
    yield daemon
    if daemon.process.poll() is None:
        daemon.process.kill()
        daemon.process.wait()

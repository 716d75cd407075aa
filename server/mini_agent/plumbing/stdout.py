"""stdout is for protocol frames alone: the one place a door takes the real stdout for itself."""

from __future__ import annotations

import logging
import os
import sys
from typing import BinaryIO


def claim_stdout(label: str) -> BinaryIO:
    """The real stdout, for protocol messages alone: fd 1 (and `print`, and anything a library or a
    child writes there) goes to stderr from now on, where the logs go too, each line led by `label`."""
    wire_out = os.fdopen(os.dup(1), "wb", buffering=0)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    logging.basicConfig(
        stream=sys.stderr,
        level=os.environ.get("MINI_AGENT_LOG", "WARNING").upper(),
        format=f"[{label}] %(levelname)s %(name)s: %(message)s",
    )
    return wire_out

"""The rule that needs a fresh interpreter: importing the runtime loads no wire, storage or network
library."""

from __future__ import annotations

import subprocess
import sys

# -- layering --------------------------------------------------------------------------------------


def test_importing_the_runtime_loads_no_wire_storage_or_network_library() -> None:
    banned = ("sqlite3", "aiohttp", "pygls", "lsprotocol", "mini_agent.lsp.wire")
    probe = f"import sys, mini_agent.core.runtime; print([m for m in {banned!r} if m in sys.modules])"
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


# -- loop detection --------------------------------------------------------------------------------


# -- the session book --------------------------------------------------------------------------------


# -- resume after each checkpoint ------------------------------------------------------------------


# -- approvals and interrupted tools ---------------------------------------------------------------


# -- cancellation at each phase --------------------------------------------------------------------


# -- replay equals the live run --------------------------------------------------------------------


# -- the edge mapping and errors ---------------------------------------------------------------------

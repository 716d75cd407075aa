"""The old import path of the scripted model server (`mini_agent.scripted`), kept for scripts, tests
and editor harnesses that use `python -m mini_agent.replay` or import `ReplayServer` from here."""

import sys

from .scripted import Exchange, ReplayServer, Script, ScriptedCall, Turn, main

__all__ = ["Exchange", "ReplayServer", "Script", "ScriptedCall", "Turn", "main"]

if __name__ == "__main__":
    sys.exit(main())

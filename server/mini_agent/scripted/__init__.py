"""A scripted OpenAI-compatible model server for the demo and the tests: shipped with the daemon, but no
part of the agent core (nothing in the core imports it)."""

from .cli import main
from .script import Script, ScriptedCall, Turn
from .server import Exchange, ReplayServer

__all__ = ["Exchange", "ReplayServer", "Script", "ScriptedCall", "Turn", "main"]

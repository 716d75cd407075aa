"""A scripted OpenAI-compatible model server for the demo and the tests: shipped with the daemon, but no
part of the agent core (nothing in the core imports it)."""

from mini_agent.scripted.cli import main
from mini_agent.scripted.script import Script, ScriptedCall, Turn
from mini_agent.scripted.server import Exchange, ReplayServer

__all__ = ["Exchange", "ReplayServer", "Script", "ScriptedCall", "Turn", "main"]

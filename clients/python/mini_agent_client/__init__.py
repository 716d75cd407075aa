"""Async Python client for the mini-agent daemon: its protocol, and nothing of the daemon itself
(the `mini-agent` command line, which uses it, is `mini_agent.cli`)."""

from .client import AgentClient, Event

__all__ = ["AgentClient", "Event"]

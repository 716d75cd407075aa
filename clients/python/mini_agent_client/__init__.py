"""Async Python client and command line for the mini-agent daemon."""

from .client import AgentClient, Event

__all__ = ["AgentClient", "Event"]

"""mini-agent: a daemon that runs tool-using LLM agents for editors over JSON-RPC on stdio."""

from .tools.decorators import tool

__version__ = "0.1.0"
__all__ = ["__version__", "tool"]

"""MCP servers as a tool source (see `source`); pure shape mappings in `convert`."""

from mini_agent.tools.mcp.source import McpSource, StartFailed

__all__ = ["McpSource", "StartFailed"]

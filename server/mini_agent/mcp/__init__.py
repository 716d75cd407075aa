"""The MCP door: `mini-agent mcp` serves a workspace's Python tools to any MCP client (official SDK).

May import `app`, the adapters, `core` and `plumbing`; never another door.
"""

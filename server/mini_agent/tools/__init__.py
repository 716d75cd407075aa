"""Workspace functions as tools: reflection and execution in a subprocess, routing in the daemon.

`registry` is the `ToolExecutor` port over every source; `host` ⇄ `host_main` the isolated tool host
and `protocol` its wire; `reflect`, `signature` and `validation` turn functions into JSON-Schema tools
and check a model's arguments; `decorators` holds `@tool`, which workspace files import (as
`from mini_agent import tool`), so this package imports nothing heavy up front; `mcp/` makes MCP
servers a source. May import `core` and `plumbing`; no other adapter, no door.
"""

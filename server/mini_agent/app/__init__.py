"""The application layer both doors share: one workspace, protocol-free.

`workspace` composes the runtime with the model client, the tool registry, the MCP source and the
store, and decides trust, approval policy and session configuration; it is the doors' only entrance
(the runtime private behind its verbs, the session ones in `sessions`); `config` reads the workspace
file; `options` the settings a client hands over; `port` the one interface a door implements to reach
its client. Spells no method name or wire key. May import the adapters (`store`, `llm`, `tools`),
`core` and `plumbing`; never a door.
"""

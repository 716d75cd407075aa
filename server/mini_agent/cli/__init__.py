"""The `mini-agent` command line, a door of its own: it starts the other doors (`serve`, `acp`, `mcp`),
acts on this machine's state without a daemon (`trust`, `untrust`, `sessions export`, through the app),
and drives a daemon it spawns for everything else (`ask`, `sessions`, `models`, `tools`, `demo`) over the
protocol, with the client library (`mini_agent_client`) as any other client would."""

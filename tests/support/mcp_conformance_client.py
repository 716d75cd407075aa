"""The client under test for the MCP conformance framework: a real mini-agent session using its server.

`conformance client --command "python tests/support/mcp_conformance_client.py" --scenario S` runs this
with the scenario's server URL as the last argument and the scenario in MCP_CONFORMANCE_SCENARIO. It
starts the daemon over stdio with that URL as a streamable HTTP MCP server and a scripted model that calls the
scenario's tool; the exit status says whether the session reached its final answer.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import tempfile

from mini_agent.scripted import ReplayServer
from mini_agent_client import AgentClient

TOOL_CALLS = {  # scenario → the call the model makes (none: starting the session is the whole test)
    "tools_call": ("conf_add_numbers", {"a": 2, "b": 3}),
    "sse-retry": ("conf_test_reconnection", {}),
}


async def main(url: str, scenario: str) -> int:
    script = []
    if scenario in TOOL_CALLS:
        name, arguments = TOOL_CALLS[scenario]
        script.append(
            {"content": f"Thought: call it.\nAction: {name}\nAction Input: {json.dumps(arguments)}"}
        )
    script.append({"content": "Final Answer: {last_observation}" if script else "Final Answer: connected"})
    server = {"type": "http", "name": "conf", "url": url, "requiresApproval": False}
    with tempfile.TemporaryDirectory() as root:
        async with ReplayServer(script) as model:
            options = {"llm": {"baseUrl": model.base_url}, "store": {"enabled": False}}
            async with AgentClient.spawn(root=root, options=options) as client:
                session_id = await client.start_session(f"conformance: {scenario}", mcp_servers=[server])
                errors: list[str] = []
                for _ in script:
                    step = await client.step(session_id)
                    errors += [o["output"] for o in step["observations"] if o["isError"]]
    print(step["finalAnswer"])
    print("\n".join(errors), file=sys.stderr)
    return 1 if errors or step["finalAnswer"] is None else 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main(sys.argv[-1], os.environ.get("MCP_CONFORMANCE_SCENARIO", ""))))

"""The client under test for the MCP conformance framework: a real mini-agent session using its server.

`conformance client --command "python tests/support/mcp_conformance_client.py" --scenario S` runs this
with the scenario's server URL as the last argument, the scenario in MCP_CONFORMANCE_SCENARIO and, for
some, credentials in MCP_CONFORMANCE_CONTEXT (JSON). It starts the daemon over stdio (its own state
folder, so no sign-in carries over) with that URL as a streamable HTTP MCP server and a scripted model
that calls the scenario's tool; the exit status says whether the session reached its final answer.

The client announces `window.showDocument` and `experimental.agent.elicitation`: a sign-in page is
"opened" by fetching it with redirects followed (the suite's authorization server approves at once and
redirects to the daemon's loopback listener), and every question is accepted with no values typed, so
the daemon fills in the form's defaults.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import tempfile
from typing import Any

import httpx2
from mini_agent.scripted import ReplayServer
from mini_agent_client import AgentClient

CIMD_URL = "https://conformance-test.local/client-metadata.json"  # the suite's expected client ID URL
SECRET_VAR = "CONFORMANCE_CLIENT_SECRET"
TOOL_CALLS = {  # scenario → the call the model makes (none: starting the session is the whole test)
    "tools_call": ("conf_add_numbers", {"a": 2, "b": 3}),
    "sse-retry": ("conf_test_reconnection", {}),
    "elicitation-sep1034-client-defaults": ("conf_test_client_elicitation_defaults", {}),
}
AUTH_TOOL = ("conf_test-tool", {})  # every auth/* scenario's server offers it
CAPABILITIES = {"window": {"showDocument": {"support": True}}, "experimental": {"agent": {"elicitation": {}}}}


async def open_page(params: dict[str, Any]) -> dict[str, Any]:
    """The browser: GET the sign-in page, following its redirects to the daemon's listener."""
    async with httpx2.AsyncClient(follow_redirects=True, timeout=30) as browser:
        await browser.get(params["uri"])
    return {"success": True}


async def accept(params: dict[str, Any]) -> dict[str, Any]:
    return {"action": "accept", "content": {}}


def server_for(url: str, scenario: str, env: dict[str, str]) -> dict[str, Any]:
    """The session's MCP server; pre-registered credentials from the suite's context when it gives them."""
    server: dict[str, Any] = {"type": "http", "name": "conf", "url": url, "requiresApproval": False}
    if scenario.startswith("auth/"):
        oauth: dict[str, Any] = {"clientMetadataUrl": CIMD_URL}
        context = json.loads(os.environ.get("MCP_CONFORMANCE_CONTEXT") or "{}")
        if context.get("client_id"):
            oauth = {"clientId": context["client_id"]}
            if context.get("client_secret"):
                env[SECRET_VAR] = context["client_secret"]
                oauth["clientSecretEnv"] = SECRET_VAR
        server["oauth"] = oauth
    return server


async def main(url: str, scenario: str) -> int:
    script = []
    call = AUTH_TOOL if scenario.startswith("auth/") else TOOL_CALLS.get(scenario)
    if call is not None:
        name, arguments = call
        script.append(
            {"content": f"Thought: call it.\nAction: {name}\nAction Input: {json.dumps(arguments)}"}
        )
    script.append({"content": "Final Answer: {last_observation}" if script else "Final Answer: connected"})
    with tempfile.TemporaryDirectory() as root, tempfile.TemporaryDirectory() as state:
        env = {**os.environ, "MINI_AGENT_STATE_DIR": state}
        server = server_for(url, scenario, env)
        handlers = {"window/showDocument": open_page, "agent/elicit": accept}
        async with ReplayServer(script) as model:
            options = {"llm": {"baseUrl": model.base_url}, "store": {"enabled": False}}
            async with AgentClient.spawn(
                root=root, options=options, env=env, capabilities=CAPABILITIES, handlers=handlers
            ) as client:
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

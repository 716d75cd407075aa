"""ACP authentication: here it means "a model server is set up", since a local model needs no login.

Two methods are advertised. `setup` (a terminal method: the client runs `mini-agent setup` in a
terminal, in place of the agent's own arguments, as the registry's terminal auth does) keeps the
user's server in their settings (`app.user_settings`). `environment` (an `env_var` method) takes
`OPENAI_BASE_URL` and, when the server needs one, `OPENAI_API_KEY` from the environment the client
launches the agent with. `authenticate` with either succeeds when such a server is set up and answers
`GET /models` within the model list's bound; otherwise it answers the spec's auth-required error
(-32000) saying what to do. A prompt in a workspace where no layer names a model server (no request,
trusted workspace file, environment or user settings) is refused with the same error before any model
turn, instead of trying the default address; a server that is named but down stays the model error
it always was.
"""

from __future__ import annotations

from collections.abc import Mapping

from acp import RequestError
from acp.schema import AuthEnvVar, AuthMethodAgent, EnvVarAuthMethod, TerminalAuthMethod

from mini_agent.app import user_settings
from mini_agent.app.config import WorkspaceConfig, merged
from mini_agent.app.options import LLMParams
from mini_agent.core.contracts import LLMConfig
from mini_agent.llm.models import ModelLister

SETUP_METHOD = "setup"
ENV_METHOD = "environment"
AUTH_REQUIRED = -32000
WHAT_TO_DO = (
    "no model server is set up for mini-agent. Run `mini-agent setup` in a terminal (the editor's "
    "“Set up a model server” sign-in runs it), or start the agent with OPENAI_BASE_URL (and "
    "OPENAI_API_KEY, if the server needs one) set"
)


def methods() -> list[EnvVarAuthMethod | TerminalAuthMethod | AuthMethodAgent]:
    """The `authMethods` of the initialize answer."""
    return [
        TerminalAuthMethod(
            id=SETUP_METHOD, type="terminal", args=["setup"], name="Set up a model server",
            description="Choose a local or remote OpenAI-compatible model server, its model and key "
            "(mini-agent setup); kept for you alone in your state folder",
        ),
        EnvVarAuthMethod(
            id=ENV_METHOD, type="env_var", name="Model server from environment variables",
            description="An OpenAI-compatible server's URL, and its API key when it needs one",
            vars=[
                AuthEnvVar(name="OPENAI_BASE_URL", label="Model server URL", secret=False),
                AuthEnvVar(name="OPENAI_API_KEY", label="API key", secret=True, optional=True),
            ],
        ),
    ]  # fmt: skip


def required(words: str = WHAT_TO_DO) -> RequestError:
    """The spec's auth-required error, with what to do in its message."""
    return RequestError(
        AUTH_REQUIRED, f"Authentication required: {words}",
        {"reason": "auth_required", "authMethods": [SETUP_METHOD, ENV_METHOD]},
    )  # fmt: skip


def server(method_id: str, env: Mapping[str, str]) -> LLMParams | None:
    """The model server `method_id` sets up (`base_url`, `api_key`), read now; None when it sets none."""
    if method_id == ENV_METHOD:
        if not env.get("OPENAI_BASE_URL"):
            return None
        return merged(WorkspaceConfig(), None, env).llm
    if method_id == SETUP_METHOD:
        settings = user_settings.load(env)
        if settings is None:
            return None
        return merged(WorkspaceConfig(), None, {}, settings).llm
    words = f"unknown methodId {method_id!r}: this agent has {SETUP_METHOD!r} and {ENV_METHOD!r}"
    raise RequestError(-32602, words, {"methodId": method_id})


async def authenticate(method_id: str, env: Mapping[str, str]) -> None:
    """Succeed when `method_id`'s model server is set up and answers; else the auth-required error."""
    try:
        llm = server(method_id, env)
    except user_settings.SettingsError as exc:
        raise required(str(exc)) from None
    if llm is None:
        raise required()
    listed = await ModelLister().models(llm.base_url or LLMConfig().base_url, llm.api_key, refresh=True)
    if not listed.answered:
        raise required(f"{listed.problem}. Start it, or run `mini-agent setup` again to choose another")

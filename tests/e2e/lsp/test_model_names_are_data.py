"""Model ids are data from another program: ids holding an escape sequence, a NUL, a newline or a
right-to-left override, listed by the model server's `GET /v1/models`, never reach `agent/listModels`,
and `agent/configureSession` refuses such a name with -32602 naming `model`. The real daemon over
stdio, the scripted model server listing them."""

from __future__ import annotations

from pathlib import Path

import pytest
from mini_agent_client import AgentClient
from mini_agent_client.rpc import RpcError

from ...support.daemon import daemon_env
from ...support.model_list import ListingServer

HOSTILE = (
    "clip\x1b]52;c;aGVsbG8=\x07board",  # OSC 52: text onto the clipboard
    "nul\x00id",
    "two\ncurrent model: forged",
    "invoice\u202etxt.exe",  # shown as invoiceexe.txt
    "del\x7f",
    "c1\x9bmark",
    "isolate\u2066x\u2069",
    "mark\u200fx",
)


@pytest.mark.asyncio
async def test_model_ids_with_control_or_bidi_characters_never_reach_list_models(workspace: Path) -> None:
    async with ListingServer(models=("replay", *HOSTILE, "large")) as model:
        options = {"llm": {"baseUrl": model.base_url, "model": "replay"}, "store": {"enabled": False}}
        async with AgentClient.spawn(root=workspace, options=options, env=daemon_env()) as client:
            listed = await client.list_models()
    assert listed["models"] == [{"id": "replay"}, {"id": "large"}]


@pytest.mark.parametrize("name", HOSTILE[:4], ids=["escape", "nul", "newline", "rtl override"])
@pytest.mark.asyncio
async def test_configure_session_refuses_a_model_name_with_control_or_bidi_characters(
    workspace: Path, name: str
) -> None:
    async with ListingServer(models=("replay", *HOSTILE)) as model:
        options = {"llm": {"baseUrl": model.base_url, "model": "replay"}, "store": {"enabled": False}}
        async with AgentClient.spawn(root=workspace, options=options, env=daemon_env()) as client:
            session_id = await client.start_session("hello")
            with pytest.raises(RpcError) as refused:
                await client.configure_session(session_id, model=name)
    assert refused.value.code == -32602
    assert "model" in refused.value.message and "not a model name" in refused.value.message
    assert name not in refused.value.message  # the message shows the name escaped

"""The transport contract (tests/support/llm_contract.py) held by the fake: every case gives what the
transport that ships gives over a real socket (tests/integration/llm/test_llm_transport.py runs the same
cases)."""

from __future__ import annotations

import pytest
from mini_agent.llm.fake import FakeTransport

from ...support.llm_contract import CASES, SENT, Case, FakeServer, expected, outcome

URL = "http://127.0.0.1:8000/v1/chat/completions"


@pytest.mark.asyncio
@pytest.mark.parametrize("case", CASES, ids=[case.id for case in CASES])
async def test_the_fake_keeps_the_transport_contract(case: Case) -> None:
    server = FakeServer(case.answer)
    transport = FakeTransport(server)
    assert await outcome(transport, URL, case) == expected(case, "127.0.0.1", 8000)
    if "header" in case.id:
        assert server.seen == []  # refused before anything was sent
    elif case.answer is not None:
        assert [(r.method, r.url, r.body) for r in server.seen] == [("POST", URL, SENT)]

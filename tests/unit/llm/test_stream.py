"""The stream parts of the model client, pure: server-sent events decoded however the network splits
them, and stop strings cut wherever they fall."""

from __future__ import annotations

import itertools
from collections.abc import Sequence

from hypothesis import given
from hypothesis import strategies as st
from mini_agent.llm import react
from mini_agent.llm.stream import SSEDecoder, StopScanner, cut_at_stop

STOPS = react.STOP_SEQUENCES

SSE_BODY = (
    ": keep-alive\r\n"
    'data: {"t": "héllo 中文 🙂"}\r\n\r\n'
    "event: message\n"
    "data: line one\n"
    "data: line two\n\n"
    "data:no-space\r\r"
    "data: [DONE]\n\n"
).encode()
SSE_EVENTS = ['{"t": "héllo 中文 🙂"}', "line one\nline two", "no-space", "[DONE]"]


def decode_in_pieces(raw: bytes, cuts: Sequence[int]) -> list[str]:
    decoder = SSEDecoder()
    events: list[str] = []
    bounds = [0, *sorted(cuts), len(raw)]
    for start, end in itertools.pairwise(bounds):
        events += decoder.feed(raw[start:end])
    return events + decoder.close()


def test_sse_decoder_any_single_split_gives_the_same_events() -> None:
    """Every byte boundary, including the middle of multi-byte characters and of a CRLF."""
    for cut in range(len(SSE_BODY) + 1):
        assert decode_in_pieces(SSE_BODY, [cut]) == SSE_EVENTS, cut


def test_sse_decoder_byte_by_byte() -> None:
    assert decode_in_pieces(SSE_BODY, range(1, len(SSE_BODY))) == SSE_EVENTS


def test_sse_decoder_flushes_an_unterminated_event_at_close() -> None:
    decoder = SSEDecoder()
    assert decoder.feed(b"data: tail") == []
    assert decoder.close() == ["tail"]


def test_stop_string_split_across_two_chunks_is_cut() -> None:
    scanner = StopScanner(STOPS)
    assert scanner.feed("Action Input: {}\nObser") == "Action Input: {}"
    assert scanner.feed("vation: made up\nFinal Answer: no") == ""
    assert scanner.stopped
    assert scanner.finish() == ""


def test_held_back_text_is_released_when_it_is_not_a_stop() -> None:
    scanner = StopScanner(STOPS)
    assert scanner.feed("a\nObs") == "a"
    assert scanner.feed("cure") == "\nObscure"
    assert scanner.feed("\n") == ""
    assert scanner.finish() == "\n"
    assert not scanner.stopped


def test_earliest_stop_wins_and_full_width_colon_counts() -> None:
    assert cut_at_stop("x\nObservation：y Observation: z", STOPS) == ("x", True)
    assert cut_at_stop("inline Observation: z", STOPS) == ("inline ", True)
    assert cut_at_stop("nothing here", STOPS) == ("nothing here", False)


_PIECES = st.sampled_from(
    ["\n", "Obs", "ervation", ":", "：", "Observation:", "ab", " ", "é", "\nObservation"]
)


@given(st.lists(_PIECES, max_size=12), st.lists(st.integers(0, 200), max_size=6))
def test_stop_scanner_does_not_depend_on_where_the_stream_is_split(parts: list[str], cuts: list[int]) -> None:
    text = "".join(parts)
    scanner = StopScanner(STOPS)
    bounds = [0, *sorted(c % (len(text) + 1) for c in cuts), len(text)]
    emitted = [scanner.feed(text[a:b]) for a, b in itertools.pairwise(bounds)]
    emitted.append(scanner.finish())
    whole, stopped = cut_at_stop(text, STOPS)
    assert "".join(emitted) == whole
    assert scanner.stopped == stopped
    assert not any(stop in "".join(emitted) for stop in STOPS)


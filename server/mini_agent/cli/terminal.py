"""The edge where text someone else wrote meets the terminal: a model's thought and answer, a tool's
output, a model id, a workspace file's words, a stored task, the daemon's messages.

`safe` shows every character a terminal would act on as a visible escape instead — the C0 controls
(ESC, BEL, CR, backspace ...), DEL, the C1 controls, the bidirectional overrides, embeddings, isolates and
marks, the line and paragraph separators, and lone surrogates — so no escape sequence (a clipboard write,
a hidden link, hidden text, a window title, an erased line) and no reordered text reaches the terminal
from data. Newlines and tabs are kept only where the layout has room for more than one line.

`text` wraps the result in a rich `Text`, which rich never reads as markup: data goes to the console as
`Text`, never as a markup string, so `[/bold]` in a task is shown as written.

Escapes below U+0080 read `\\x1b`; the rest read `\\u202e`, so that in JSON shown to the person (which
`json.dumps` has already escaped below U+0020) every escape this adds is still valid JSON.
"""

from __future__ import annotations

import re
import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from rich.text import Text

__all__ = ["safe", "say", "text"]

_BIDI = "\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069"  # ALM, LRM, RLM, embeddings/overrides, isolates
_SEPARATORS = "\u2028\u2029"
_SURROGATES = "\ud800-\udfff"
_ONE_LINE = re.compile(f"[\x00-\x1f\x7f-\x9f{_BIDI}{_SEPARATORS}{_SURROGATES}]")
_LINES = re.compile(f"[\x00-\x08\x0b-\x1f\x7f-\x9f{_BIDI}{_SEPARATORS}{_SURROGATES}]")
_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _escape(match: re.Match[str]) -> str:
    char = match.group()
    if char in _NAMED:
        return _NAMED[char]
    code = ord(char)
    return f"\\x{code:02x}" if code < 0x7F else f"\\u{code:04x}"


def safe(value: object, *, lines: bool = False) -> str:
    """`value` as text a terminal shows and never acts on. With `lines`, newlines and tabs stay (a CRLF
    is a newline); without, they are escaped too, so one value is one line."""
    string = value if isinstance(value, str) else str(value)
    if lines:
        return _LINES.sub(_escape, string.replace("\r\n", "\n"))
    return _ONE_LINE.sub(_escape, string)


def text(value: object, style: str = "", *, lines: bool = False) -> Text:
    """`safe(value)` as a rich `Text` in `style`: what the console prints, never parsed as markup."""
    from rich.text import Text  # not at import: `mini-agent serve` loads this module and needs no rich

    return Text(safe(value, lines=lines), style=style)


_said: set[str] = set()


def say(message: str) -> None:
    """A line on stderr for the person. The same message twice (the daemon's notice about its options,
    then each request refused for the same reason) is said once. The message is escaped (it quotes a
    workspace file, a URL, a server's words); a line of its own after the first is indented, so that no
    line of it can pass for one of ours."""
    said = safe(message.removeprefix("mini-agent: "), lines=True)
    if said not in _said:
        _said.add(said)
        print("mini-agent: " + said.replace("\n", "\n  "), file=sys.stderr)

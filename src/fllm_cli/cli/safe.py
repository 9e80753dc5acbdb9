"""Untrusted text made harmless for a terminal: no control sequences, no rich markup.

Model replies, task text, tool observations and data files may carry escape sequences (clear
the screen, retitle the window, fake a hyperlink), carriage returns that overwrite a line, or
bidirectional overrides that reorder what the reader sees. Everything printed goes through
:class:`SafeConsole`, which shows such characters as visible escapes (``\\x1b``, ``\\u202e``);
text that did not come from fllm itself is put into ``rich.text.Text`` so that ``[bold]`` is
never read as markup. Files written with ``-o`` keep the exact text.
"""

from __future__ import annotations

from collections.abc import Iterable

from rich.console import Console, ConsoleOptions, RenderableType
from rich.segment import Segment
from rich.text import Text

_BIDI = [*range(0x202A, 0x202F), *range(0x2066, 0x206A)]
_C0 = [c for c in range(0x20) if chr(c) not in "\n\t"]
# Each character a terminal could act on, with its visible form.
_DISPLAY = {c: f"\\x{c:02x}" for c in (*_C0, 0x7F, *range(0x80, 0xA0))} | {
    c: f"\\u{c:04x}" for c in _BIDI
}
# In JSON text the control characters are escaped already; the rest become JSON escapes, which
# decode to the very same characters.
_JSON = {c: f"\\u{c:04x}" for c in (0x7F, *range(0x80, 0xA0), *_BIDI)}


def safe(text: str) -> str:
    """Return ``text`` with every terminal control character shown as its escape.

    Newlines and tabs stay; C0 and C1 controls, DEL and bidirectional overrides do not.
    """
    return text.translate(_DISPLAY)


def safe_json(text: str) -> str:
    """Return JSON text with the characters a terminal acts on as ``\\uXXXX`` escapes.

    The JSON means the same after this: only characters inside strings are affected.
    """
    return text.translate(_JSON)


def plain(text: str, style: str = "") -> Text:
    """Return untrusted text as a ``Text``: shown as it is, never parsed as markup."""
    return Text(safe(text), style=style)


class SafeConsole(Console):
    """A console whose printed text can never carry a control sequence of its own.

    Rich adds its own colours and cursor moves when it writes segments out; the text of every
    segment rendered here has already passed through :func:`safe`, whatever produced it.
    """

    def render(
        self, renderable: RenderableType, options: ConsoleOptions | None = None
    ) -> Iterable[Segment]:
        """Render as rich does, then neutralise control characters in the text."""
        for segment in super().render(renderable, options):
            if segment.control or segment.text.isprintable():
                yield segment
            else:
                yield Segment(safe(segment.text), segment.style, segment.control)

"""Help that reads like a man page: value words (TEXT, N, FILE) instead of Python types.

Typer shows each parameter's Python annotation (``<str>``, ``<list[str]>``, ``<int range>``)
and writes required arguments as ``{spec}``. ``install`` replaces both displays with the words
man pages use; a parameter with its own ``metavar`` keeps it. When typer's internals are not the
ones this was written for, help stays as typer draws it.
"""

from __future__ import annotations

import re
from typing import Any

WORDS = {
    "str": "TEXT",
    "int": "N",
    "float": "NUMBER",
    "bool": "",
    "Path": "PATH",
    "int range": "N",
    "float range": "NUMBER",
}
_TYPE = re.compile(r"^<(?:list\[)?(.*?)\]?>$")


def man_type(shown: str | None) -> str | None:
    """Return the man-page word for typer's ``<type>`` display (None or '' to show none)."""
    if shown is None:
        return None
    match = _TYPE.match(shown)
    if match is None:
        return shown
    inner = match.group(1)
    if "|" in inner:  # choices: show them as they are
        return inner
    return WORDS.get(inner, inner.upper())


def install() -> bool:
    """Patch typer's parameter displays; False when typer is not the expected shape."""
    try:
        from typer import core
    except ImportError:
        return False
    base: Any = getattr(core, "_TyperParameter", None)
    argument: Any = getattr(core, "TyperArgument", None)
    if base is None or argument is None or getattr(base, "_fllm_man", False):
        return base is not None
    if not hasattr(base, "display_type") or not hasattr(argument, "_usage_display_name"):
        return False
    shown_type = base.display_type
    usage_name = argument._usage_display_name

    def display_type(self: Any, ctx: Any) -> str:
        return man_type(shown_type(self, ctx)) or ""

    def usage_display_name(self: Any) -> str:
        name = str(usage_name(self))
        word = name.strip("{}[]").replace("...", "")
        upper = word if self.metavar is not None else word.upper()
        return name.replace(word, upper).replace("{", "").replace("}", "")

    base.display_type = display_type
    argument._usage_display_name = usage_display_name
    base._fllm_man = True
    return True


def examples(*lines: str) -> str:
    """Return a command's EXAMPLES section (its help epilog): one command line each, as typed.

    The epilog is rich markup, so a ``[`` is escaped; lines are kept as they are.
    """
    body = "\n".join("  " + line.replace("[", "\\[") for line in lines)
    return "Examples:\n" + body

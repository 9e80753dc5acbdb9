"""Prompt surgery for scoring: blanked or unlisted options, and the model's chat template."""

from __future__ import annotations

import re
from typing import Any

CHOICE_SYSTEM = "You are a careful planner. Reply with the number of the best option only."
BLANK = "N/A"
NEUTRAL = "Which option is the best next step? Reply with the option."


def blank_options(prompt: str, options: tuple[str, ...]) -> str | None:
    """Return ``prompt`` with the listed option texts replaced by N/A, or None if not found."""
    spans: list[tuple[int, int]] = []
    limit = len(prompt)
    for option in reversed(options):
        text = option.strip()
        pos = prompt.rfind(text, 0, limit) if text else -1
        if pos < 0:
            return None
        spans.append((pos, pos + len(text)))
        limit = pos
    out = prompt
    for start, end in spans:  # right to left, so earlier offsets stay valid
        out = out[:start] + BLANK + out[end:]
    return out


_LABEL = re.compile(r"\s*(?:\(?[0-9A-Za-z]{1,3}[.:)]|[-*\u2022])?\s*")
_TRAIL = re.compile(r"[\s,.;]*")


def _lists(line: str, text: str) -> bool:
    """Whether ``line`` is a listing line of ``text``: a short label, the text, punctuation."""
    at = line.find(text)
    # a label is short; the bound also keeps the pattern linear on hostile lines of spaces
    return 0 <= at <= 12 and bool(
        _LABEL.fullmatch(line[:at]) and _TRAIL.fullmatch(line[at + len(text) :])
    )


TAIL_LINES = 2  # a reply instruction after the listing: one short paragraph at the very end


def unlisted(prompt: str, options: tuple[str, ...]) -> str | None:
    """Return ``prompt`` without the lines that list ``options``, or None if not so listed.

    Each option must sit on a line of its own with at most a short label before it ("3:",
    "b)", "-") and punctuation after, the lines in the options' order; the lines between the
    first and the last of them (blank ones) go too, and so does a short last paragraph after
    them (the reply instruction). Text scoring reads each option as the reply; a listing costs
    prompt tokens, and a tiny model copies from it.
    """
    lines = prompt.split("\n")
    found: list[int] = []
    below = len(lines)  # options are looked for from the end, each above the next one's line
    for option in reversed(options):
        text = option.strip()
        row = next((r for r in range(below - 1, -1, -1) if _lists(lines[r], text)), None)
        if not text or row is None:
            return None
        found.append(row)
        below = row
    first, last = found[-1], found[0]
    if any(lines[r].strip() for r in range(first, last + 1) if r not in found):
        return None
    rest = lines[last + 1 :]
    filled = [r for r, line in enumerate(rest) if line.strip()]
    if filled and len(filled) <= TAIL_LINES and filled[-1] - filled[0] < len(filled):
        # One short paragraph ending the prompt tells how to answer from the listing ("reply
        # with its number"); with the listing gone it would ask for a number where a text is
        # read, so it goes too.
        return "\n".join(lines[:first]).rstrip()
    return "\n".join(lines[:first] + rest)


def generic_choice_prompt(n: int) -> str:
    """Return a content-free choice prompt with ``n`` blank options."""
    lines = "\n".join(f"{k}. {BLANK}" for k in range(1, n + 1))
    return f"Choose the best option.\n{lines}\nReply with the number of one option."


class ChatTemplate:
    """Render (system, user) into the model's chat format, ending where the reply starts."""

    def __init__(self, llm: Any) -> None:
        template = str(llm.metadata.get("tokenizer.chat_template", ""))
        self.chatml = "<|im_start|>" in template
        self.formatter: Any = None
        if template and not self.chatml:
            from llama_cpp.llama_chat_format import Jinja2ChatFormatter

            eos = llm.detokenize([llm.token_eos()], special=True).decode("utf-8", "replace")
            bos = llm.detokenize([llm.token_bos()], special=True).decode("utf-8", "replace")
            self.formatter = Jinja2ChatFormatter(template, eos_token=eos, bos_token=bos)

    def render(self, system: str | None, user: str) -> str:
        """Return the full text the model continues."""
        if self.chatml:
            head = f"<|im_start|>system\n{system}<|im_end|>\n" if system else ""
            return f"{head}<|im_start|>user\n{user}<|im_end|>\n<|im_start|>assistant\n"
        if self.formatter is not None:
            messages = [{"role": "system", "content": system}] if system else []
            messages.append({"role": "user", "content": user})
            return str(self.formatter(messages=messages).prompt)
        return f"{system}\n\n{user}\n" if system else f"{user}\n"

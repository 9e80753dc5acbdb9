"""A small text toolbox: plain Python functions that `fllm run` calls through textbox.bind.yaml.

The example of README.md ("Run a plan"): domains/examples/textbox_tools.json lists these
functions the way an agent framework would (OpenAI tool definitions), `fllm import-tools` turns
the list into textbox.yaml, and `fllm run` carries out plans made in it.
"""

from __future__ import annotations

import re


def clean_whitespace(text: str) -> str:
    """Collapse runs of spaces and line breaks into single spaces."""
    return " ".join(text.split())


def first_sentence(text: str) -> str:
    """Return the text up to its first full stop, question or exclamation mark."""
    match = re.search(r"^.*?[.!?](?=\s|$)", text.strip(), re.S)
    return match.group(0) if match else text.strip()


def shout(text: str) -> str:
    """Return the text in capital letters."""
    return text.upper()


def word_count(text: str) -> int:
    """Return the number of words."""
    return len(text.split())


def extract_links(text: str) -> list[str]:
    """Return every http(s) link in the text, in order."""
    return re.findall(r"https?://[^\s<>\"')]+", text)


def count_items(items: list) -> int:
    """Return how many items a list has."""
    return len(items)


def translate_to_french(text: str, formality: str = "neutral") -> str:
    """Stands for a web service that is down: it always fails, so fllm re-plans without it."""
    raise ConnectionError("translation service unreachable")

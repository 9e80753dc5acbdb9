"""Few-shot example files: examples separated by their 'Question:'/'Claim:' lines."""

from __future__ import annotations

from pathlib import Path

from fllm_cli.resources import data_dir, exists
from fllm_cli.textio import read_text

DEFAULT_EXAMPLES = "react_examples.txt"


def read_examples(path: str | None, shots: int | None) -> str:
    """Return the first ``shots`` examples of ``path`` (all when None) joined by blank lines."""
    if path is None or shots == 0:
        return ""
    file = Path(path)
    if not exists(file) and exists(data_dir("prompts") / file.name):
        file = data_dir("prompts") / file.name
    text = read_text(file, "examples file")
    blocks = [b.strip() for b in split_blocks(text) if b.strip()]
    if shots is not None:
        blocks = blocks[:shots]
    return "\n\n".join(blocks)


def split_blocks(text: str) -> list[str]:
    """Split on lines that start a new example."""
    blocks: list[list[str]] = []
    for line in text.splitlines():
        if line.startswith(("Question:", "Claim:")) or not blocks:
            blocks.append([])
        blocks[-1].append(line)
    return ["\n".join(b) for b in blocks]

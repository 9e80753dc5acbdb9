"""Helpers for the bench tests: task data and scripted model pools."""

from __future__ import annotations

import json
from collections.abc import Callable
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

from fllm_cli.bench.runner import ModelPool
from fllm_cli.llm.simple import ScriptedModel

TASKS = [
    {
        "id": "a",
        "task": "Given noisy image, how to return the caption?",
        "inputs": ["image"],
        "output": "text",
        "reference": ["Image Denoising", "Image Captioning"],
    },
    {
        "id": "b",
        "task": "Given blurry image, how to return the class label?",
        "inputs": ["image"],
        "output": "text",
        "reference": ["Image Deblurring", "Image Classification"],
    },
    {
        "id": "c",
        "task": "Given English text, how to generate an image?",
        "inputs": ["text"],
        "output": "image",
    },
]


def write_jsonl(path: Path, rows: list[Any]) -> str:
    """Write rows (objects, or raw strings) one per line and return the path."""
    lines = [r if isinstance(r, str) else json.dumps(r) for r in rows]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return str(path)


def scripted_pool(answer: Callable[[str, tuple[str, ...]], str]) -> ModelPool:
    """A pool giving each pair a fresh scripted model that answers with ``answer``."""
    return ModelPool(lambda _i: ScriptedModel([answer] * 200))


def first_option(_prompt: str, _options: tuple[str, ...]) -> str:
    """Always choose option 1."""
    return "1"


TIMING = ("seconds", "model_seconds")


def comparable(report: dict[str, Any]) -> dict[tuple[str, str], dict[str, Any]]:
    """Each unit's row without its timing fields, keyed by (id, strategy)."""
    out = {}
    for row in report["results"]:
        row = {**row, "stats": {k: v for k, v in row["stats"].items() if k not in TIMING}}
        if row.get("plan"):
            row["plan"] = {k: v for k, v in row["plan"].items() if k != "stats"}
        out[(str(row["id"]), row["strategy"])] = row
    return out


class Tables(HTMLParser):
    """The text of every cell, per table class: {class: [[cell, ...], ...]} (body rows only)."""

    def __init__(self, page: str) -> None:
        super().__init__()
        self.tables: dict[str, list[list[str]]] = {}
        self._table = ""
        self._in_body = False
        self._cell: list[str] | None = None
        self.feed(page)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "table":
            self._table = dict(attrs).get("class") or ""
            self.tables[self._table] = []
        elif tag == "tbody":
            self._in_body = True
        elif tag == "tr" and self._in_body:
            self.tables[self._table].append([])
        elif tag == "td":
            self._cell = []
        elif tag == "br" and self._cell is not None:
            self._cell.append(" / ")

    def handle_endtag(self, tag: str) -> None:
        if tag == "tbody":
            self._in_body = False
        elif tag == "td" and self._cell is not None and self._in_body:
            self.tables[self._table][-1].append("".join(self._cell))
            self._cell = None

    def handle_data(self, data: str) -> None:
        if self._cell is not None:
            self._cell.append(data)

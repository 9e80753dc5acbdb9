"""Helpers for the bench tests: task data and scripted model pools."""

from __future__ import annotations

import json
from collections.abc import Callable
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

"""Replay a run from a ``--trace`` file: the same answers to the same prompts, no model."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from fllm_cli.errors import TraceMismatch, UsageError
from fllm_cli.llm.base import ChoiceRequest, ChoiceResult, GenerateRequest, Generation, Model


class ReplayModel(Model):
    """Answers choice points in recorded order; a differing prompt is an error that says where."""

    def __init__(self, records: list[dict[str, Any]], path: str) -> None:
        self.records = [r for r in records if r.get("type", "choice") == "choice"]
        self.generations = [r for r in records if r.get("type") == "generate"]
        self.path = path
        self.position = 0
        self.gen_position = 0
        self.name = f"replay:{path}"

    @classmethod
    def from_file(cls, path: str) -> ReplayModel:
        """Read a JSONL trace."""
        records = []
        try:
            lines = Path(path).read_text(encoding="utf-8").splitlines()
        except OSError as exc:
            raise UsageError(f"cannot read trace '{path}': {exc.strerror}") from exc
        for number, line in enumerate(lines, 1):
            if not line.strip():
                continue
            try:
                records.append(json.loads(line))
            except json.JSONDecodeError as exc:
                raise UsageError(f"{path}:{number}: not a JSON trace record ({exc.msg})") from exc
        return cls(records, path)

    def choose(self, request: ChoiceRequest) -> ChoiceResult:
        """Return the recorded choice after checking the prompt matches."""
        if self.position >= len(self.records):
            raise TraceMismatch(
                f"{self.path}: the run asks choice {self.position + 1}, "
                f"the trace records only {len(self.records)}"
            )
        record = self.records[self.position]
        self.position += 1
        if record.get("prompt") != request.prompt:
            raise TraceMismatch(
                f"{self.path}: choice {self.position} (line of record "
                f"{record.get('choice_point', self.position)}) has a different prompt than the "
                f"recording: {_first_difference(record.get('prompt', ''), request.prompt)}"
            )
        index = int(record.get("choice", 0))
        if not 0 <= index < len(request.options):
            raise TraceMismatch(f"{self.path}: choice {self.position} is out of range")
        return ChoiceResult(index=index, raw=str(record.get("reply", "")), calls=0, cached=True)

    def generate(self, request: GenerateRequest) -> Generation:
        """Return the recorded generation."""
        if self.gen_position >= len(self.generations):
            raise TraceMismatch(f"{self.path}: the trace has no more recorded generations")
        record = self.generations[self.gen_position]
        self.gen_position += 1
        return Generation(text=str(record.get("reply", "")), calls=0, cached=True)


def _first_difference(a: str, b: str) -> str:
    for i, (x, y) in enumerate(zip(a, b)):
        if x != y:
            line = a[:i].count("\n") + 1
            was, now = a[i : i + 30], b[i : i + 30]
            return f"first difference at prompt line {line}: recorded {was!r}, now {now!r}"
    return f"recorded prompt has {len(a)} characters, now {len(b)}"

"""Replay a run from a ``--trace`` file: the same answers to the same prompts, no model.

Any command's trace works (``plan``, ``agent``, ``solve``): model calls share one record schema
(``docs/models.md``). Choices are answered from ``type: "choice"`` records in order, generations
from ``type: "generate"`` records in order; ``type: "event"`` records and choices fllm made
without asking the model (``asked: false``) are skipped. A prompt that differs from the
recording is an error naming the trace line and the first difference.
"""

from __future__ import annotations

import json
from typing import Any

from fllm_cli.errors import TraceMismatch, UsageError
from fllm_cli.llm.base import ChoiceRequest, ChoiceResult, GenerateRequest, Generation, Model
from fllm_cli.llm.options import ModelOptions
from fllm_cli.textio import read_text


class ReplayModel(Model):
    """Answers in recorded order; a differing prompt is an error that says where."""

    def __init__(self, records: list[dict[str, Any]], path: str) -> None:
        asked = [r for r in records if r.get("asked", True)]
        self.records = [r for r in asked if r.get("type", "choice") == "choice"]
        self.generations = [r for r in asked if r.get("type") == "generate"]
        self.path = path
        self.position = 0
        self.gen_position = 0
        self.name = f"replay:{path}"

    @classmethod
    def from_file(cls, path: str) -> ReplayModel:
        """Read a JSONL trace."""
        records = []
        lines = read_text(path, "trace").splitlines()
        for number, line in enumerate(lines, 1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except json.JSONDecodeError as exc:
                raise UsageError(f"{path}:{number}: not a JSON trace record ({exc.msg})") from exc
            if not isinstance(record, dict):
                raise UsageError(f"{path}:{number}: not a JSON trace record (not an object)")
            record["_line"] = number
            records.append(record)
        return cls(records, path)

    def _where(self, record: dict[str, Any]) -> str:
        line = record.get("_line")
        return f"{self.path}:{line}" if line else self.path

    def _check_prompt(self, record: dict[str, Any], what: str, prompt: str) -> None:
        if "prompt" in record and record["prompt"] != prompt:
            raise TraceMismatch(
                f"{self._where(record)}: {what} has a different prompt than the recording: "
                f"{_first_difference(str(record.get('prompt', '')), prompt)}"
            )

    def choose(self, request: ChoiceRequest) -> ChoiceResult:
        """Return the recorded choice after checking the prompt matches."""
        if self.position >= len(self.records):
            raise TraceMismatch(
                f"{self.path}: the run asks choice {self.position + 1}, "
                f"the trace records only {len(self.records)}"
            )
        record = self.records[self.position]
        self.position += 1
        self._check_prompt(record, f"choice {self.position}", request.prompt)
        index = int(record.get("choice", 0))
        if not 0 <= index < len(request.options):
            raise TraceMismatch(f"{self._where(record)}: choice {self.position} is out of range")
        return ChoiceResult(index=index, raw=str(record.get("reply", "")), calls=0, cached=True)

    def generate(self, request: GenerateRequest) -> Generation:
        """Return the recorded generation after checking the prompt matches."""
        if self.gen_position >= len(self.generations):
            raise TraceMismatch(
                f"{self.path}: the run asks generation {self.gen_position + 1}, "
                f"the trace records only {len(self.generations)}"
            )
        record = self.generations[self.gen_position]
        self.gen_position += 1
        self._check_prompt(record, f"generation {self.gen_position}", request.prompt)
        return Generation(
            text=str(record.get("reply", "")),
            calls=0,
            cached=True,
            finish_reason=record.get("finish_reason"),
        )


def factory(arg: str, options: ModelOptions) -> ReplayModel:
    """Build ``replay:TRACE.jsonl``."""
    return ReplayModel.from_file(arg)


def _first_difference(a: str, b: str) -> str:
    for i, (x, y) in enumerate(zip(a, b)):
        if x != y:
            line = a[:i].count("\n") + 1
            was, now = a[i : i + 30], b[i : i + 30]
            return f"first difference at prompt line {line}: recorded {was!r}, now {now!r}"
    return f"recorded prompt has {len(a)} characters, now {len(b)}"

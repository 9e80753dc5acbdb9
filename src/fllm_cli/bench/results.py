"""The append-only results file of ``fllm bench --results``: one line per finished unit.

A unit is one (task id, strategy, model, seed). The file is JSON Lines: a header naming the run
(``{"fllm_results": 1, "domain": ..., ...}``), then one result row per line, written and flushed
as each unit finishes, whichever executor ran it. Nothing is ever rewritten: a unit that ran
twice (a retry, or a resumed back-end failure) has two lines and the last one counts, so a
reader never counts a unit twice. A run killed mid-write leaves at most a torn last line, which
the reader skips. Several runs (other models, other strategies) may append to one file;
``fllm report`` reads them all.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from fllm_cli.bench import report as rep
from fllm_cli.bench.scoring import summarize
from fllm_cli.errors import UsageError
from fllm_cli.resources import exists
from fllm_cli.textio import read_text

RESULTS_VERSION = 1
Unit = tuple[str, str, str, Any]


def unit_key(row: dict[str, Any], model: str | None = None) -> Unit:
    """Return a row's unit: (task id, strategy, model, seed)."""
    return (str(row["id"]), str(row["strategy"]), str(row.get("model", model)), row.get("seed"))


@dataclass
class ResultsLog:
    """What a results file holds: its first header and the last row of each unit."""

    header: dict[str, Any]
    rows: dict[Unit, dict[str, Any]] = field(default_factory=dict)
    lines: int = 0
    torn: int = 0

    def for_model(self, model: str) -> list[dict[str, Any]]:
        """Return the rows of one model."""
        return [r for key, r in self.rows.items() if key[2] == model]


def is_results_file(path: str) -> bool:
    """Say whether ``path`` starts like a results file (rather than a JSON report)."""
    try:
        with open(path, encoding="utf-8") as handle:
            first = handle.readline(4096)
    except OSError:
        return False
    return first.lstrip().startswith('{"fllm_results"')


def read_results(path: str) -> ResultsLog:
    """Read a results file; raise UsageError when it is not one."""
    if not exists(path):
        raise UsageError(f"no such results file: '{path}'")
    lines = read_text(path, "results file").splitlines()
    header = _header(path, lines[0] if lines else "")
    log = ResultsLog(header)
    last = len(lines) - 1
    for number, line in enumerate(lines[1:], 2):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except ValueError:
            if number - 1 == last:  # torn by a kill mid-write: that unit simply runs again
                log.torn += 1
                continue
            raise UsageError(f"{path}:{number}: not a JSON result line") from None
        if not isinstance(row, dict) or "id" not in row or "strategy" not in row:
            raise UsageError(f"{path}:{number}: not a result row")
        log.rows[unit_key(row, header.get("model"))] = row
        log.lines += 1
    return log


def _header(path: str, line: str) -> dict[str, Any]:
    try:
        header = json.loads(line)
    except ValueError:
        header = None
    if not isinstance(header, dict) or "fllm_results" not in header:
        raise UsageError(f"'{path}' is not an fllm results file (no header line)")
    if header["fllm_results"] != RESULTS_VERSION:
        raise UsageError(
            f"'{path}' is a version {header['fllm_results']} results file; this fllm reads "
            f"version {RESULTS_VERSION}"
        )
    return header


class ResultsWriter:
    """Appends result rows to a results file, one flushed line each."""

    def __init__(self, path: str, header: dict[str, Any]) -> None:
        self.path = path
        fresh = not exists(path) or Path(path).stat().st_size == 0
        try:
            if not fresh:
                self._end_torn_line()
            self.handle: IO[str] = open(path, "a", encoding="utf-8")  # noqa: SIM115
        except OSError as exc:
            raise UsageError(f"cannot write '{path}': {exc.strerror or exc}") from None
        if fresh:
            self._write({"fllm_results": RESULTS_VERSION, **header})

    def _end_torn_line(self) -> None:
        """Drop a partial last line left by a run killed mid-write (it was never a result)."""
        with open(self.path, "rb+") as handle:
            data = handle.read()
            if data and not data.endswith(b"\n"):
                handle.truncate(data.rfind(b"\n") + 1)

    def _write(self, obj: dict[str, Any]) -> None:
        self.handle.write(json.dumps(obj, ensure_ascii=False) + "\n")
        self.handle.flush()

    def append(self, row: dict[str, Any]) -> None:
        """Append one finished unit."""
        self._write(row)

    def close(self) -> None:
        """Close the file."""
        self.handle.close()


def report_from_results(log: ResultsLog, source: str) -> dict[str, Any]:
    """Return a bench report over every unit of a results file (all its models)."""
    rows = sorted(log.rows.values(), key=lambda r: (r.get("index", 0), str(r["strategy"])))
    header = log.header
    strategies = list(
        dict.fromkeys([*header.get("strategies", []), *(r["strategy"] for r in rows)])
    )
    models = list(dict.fromkeys([str(r.get("model", header.get("model"))) for r in rows]))
    order = {s: i for i, s in enumerate(strategies)}
    rows.sort(
        key=lambda r: (
            models.index(str(r.get("model", header.get("model")))),
            r.get("index", 0),
            order[r["strategy"]],
        )
    )
    return {
        "fllm_bench": rep.REPORT_VERSION,
        "domain": header.get("domain", "?"),
        "domain_path": header.get("domain_path"),
        "tasks_file": header.get("tasks_file"),
        "results_file": source,
        "model": models[0] if len(models) == 1 else ", ".join(models),
        "models": models,
        "strategies": strategies,
        "summary": summarize(rows, strategies),
        "results": rows,
        "partial": False,
        "stopped": None,
    }

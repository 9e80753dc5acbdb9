"""The benchmark report: JSON document, resume reading, rich and Markdown tables."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from fllm_cli.errors import UsageError
from fllm_cli.textio import load_json, read_text

REPORT_VERSION = 2
# Version 1 differs only in its summary (percentages), which a resumed run recomputes.
READABLE_VERSIONS = (1, 2)

COLUMNS: tuple[tuple[str, str], ...] = (
    ("strategy", "strategy"),
    ("tasks", "tasks"),
    ("valid_rate", "% valid"),
    ("mean_llm_calls", "LLM calls"),
    ("mean_forced_moves", "forced"),
    ("mean_backtracks", "backtracks"),
    ("fallbacks", "fallbacks"),
    ("tokens", "tokens"),
    ("cost_usd", "cost $"),
    ("mean_seconds", "s/task"),
    ("p95_seconds", "p95 s"),
)
REF_COLUMNS: tuple[tuple[str, str], ...] = (
    ("with_reference", "refs"),
    ("precision", "P"),
    ("recall", "R"),
    ("f1", "F1"),
    ("exact_rate", "exact %"),
)


def load_previous(path: str) -> dict[str, Any]:
    """Read a report to resume; raise UsageError when it is not one."""
    if not Path(path).exists():
        raise UsageError(f"no such report to resume: '{path}'")
    doc = load_json(read_text(path, "report"), path, max_depth=200)
    if (
        not isinstance(doc, dict)
        or "fllm_bench" not in doc
        or not isinstance(doc.get("results"), list)
    ):
        raise UsageError(f"'{path}' is not an fllm bench report")
    if doc["fllm_bench"] not in READABLE_VERSIONS:
        raise UsageError(
            f"'{path}' is a version {doc['fllm_bench']} bench report; this fllm reads versions "
            f"{', '.join(map(str, READABLE_VERSIONS))}"
        )
    return doc


def done_pairs(results: list[dict[str, Any]]) -> set[tuple[str, str]]:
    """Return (id, strategy) of finished results; back-end failures are run again."""
    return {(str(r["id"]), r["strategy"]) for r in results if r.get("error_kind") != "backend"}


def fmt_value(key: str, value: Any) -> str:
    """Format one summary cell."""
    if value is None:
        return "–"
    if key == "cost_usd":
        return f"{value:.4f}"
    if key in ("valid_rate", "exact_rate"):
        return f"{100 * value:.1f}"  # stored as a fraction, shown as a percentage
    if key in ("precision", "recall", "f1"):
        return f"{value:.3f}"
    if key in ("mean_seconds", "p95_seconds"):
        return f"{value:.3f}"
    if isinstance(value, float):
        return f"{value:.2f}"
    return str(value)


def _columns(summary: dict[str, dict[str, Any]]) -> list[tuple[str, str]]:
    cols = list(COLUMNS)
    if any(s.get("with_reference") for s in summary.values()):
        cols += REF_COLUMNS
    return cols


def _cells(name: str, row: dict[str, Any], cols: list[tuple[str, str]]) -> list[str]:
    return [name if key == "strategy" else fmt_value(key, row.get(key)) for key, _ in cols]


def summary_rows(
    report: dict[str, Any],
) -> tuple[str, list[tuple[str, str]], list[list[str]]]:
    """Return the summary's title, its (key, label) columns and one row of cells per strategy."""
    summary = report["summary"]
    title = f"fllm bench: {report['domain']} with {report['model']}"
    if report.get("partial"):
        title += " (partial)"
    cols = _columns(summary)
    return title, cols, [_cells(name, row, cols) for name, row in summary.items()]


def markdown_table(report: dict[str, Any]) -> str:
    """Return the per-strategy summary as a Markdown table."""
    summary = report["summary"]
    cols = _columns(summary)
    lines = [
        "| " + " | ".join(label for _, label in cols) + " |",
        "|" + "|".join("---" if k == "strategy" else "---:" for k, _ in cols) + "|",
    ]
    for name, row in summary.items():
        lines.append("| " + " | ".join(_cells(name, row, cols)) + " |")
    note = f"\n{report['domain']}, model `{report['model']}`"
    if report.get("partial"):
        note += " (partial run)"
    return "\n".join(lines) + note + "\n"


def dumps(report: dict[str, Any]) -> str:
    """Return the report as indented JSON."""
    return json.dumps(report, indent=2, ensure_ascii=False) + "\n"

"""The benchmark report: JSON document, resume reading, rich and Markdown tables."""

from __future__ import annotations

import json
from typing import Any

from fllm_cli.bench.metrics import SCORERS
from fllm_cli.errors import UsageError
from fllm_cli.resources import exists
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
    if not exists(path):
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


# Rates of benchmark metrics (fractions, shown as percentages).
METRIC_RATES = frozenset(key for s in SCORERS.values() for key, _ in s.columns)
# The columns of a run scored by a benchmark's metrics: its rates replace the planner counters.
METRIC_RUN_COLUMNS = ("strategy", "tasks", "valid_rate")
METRIC_COST_COLUMNS = (
    "mean_llm_calls",
    "fallbacks",
    "tokens",
    "cost_usd",
    "mean_seconds",
    "p95_seconds",
)


def fmt_value(key: str, value: Any) -> str:
    """Format one summary cell."""
    if value is None:
        return "–"
    if key == "cost_usd":
        return f"{value:.4f}"
    if key in ("valid_rate", "exact_rate") or key in METRIC_RATES:
        return f"{100 * value:.1f}"  # stored as a fraction, shown as a percentage
    if key in ("precision", "recall", "f1"):
        return f"{value:.3f}"
    if key in ("mean_seconds", "p95_seconds"):
        return f"{value:.3f}"
    if isinstance(value, float):
        return f"{value:.2f}"
    return str(value)


def metrics_of(summary: dict[str, dict[str, Any]]) -> str | None:
    """Return the benchmark metrics a summary holds (a scorer's name), if any."""
    return next((s["metrics"] for s in summary.values() if s.get("metrics") in SCORERS), None)


def _columns(summary: dict[str, dict[str, Any]]) -> list[tuple[str, str]]:
    metrics = metrics_of(summary)
    if metrics is not None:
        labels = dict(COLUMNS)
        return [
            *((k, labels[k]) for k in METRIC_RUN_COLUMNS),
            *SCORERS[metrics].columns,
            *((k, labels[k]) for k in METRIC_COST_COLUMNS),
        ]
    cols = list(COLUMNS)
    if any(s.get("with_reference") for s in summary.values()):
        cols += REF_COLUMNS
    return cols


def breakdowns(
    report: dict[str, Any],
) -> list[tuple[str, list[tuple[str, str]], list[list[str]]]]:
    """Return the benchmark metrics per group (level, trip length...): (title, columns, rows).

    One row per (group, strategy); empty for a run without benchmark metrics.
    """
    summary = report["summary"]
    metrics = metrics_of(summary)
    if metrics is None:
        return []
    scorer = SCORERS[metrics]
    out = []
    for group in scorer.groups:
        cols = [(group, group), ("strategy", "strategy"), ("tasks", "tasks"), *scorer.columns]
        names = list(
            dict.fromkeys(g for s in summary.values() for g in (s.get(f"by_{group}") or {}))
        )
        rows = []
        for name in names:
            for strategy, row in summary.items():
                cell = (row.get(f"by_{group}") or {}).get(name)
                if cell is not None:
                    rows.append(
                        [str(name), strategy, *(fmt_value(k, cell.get(k)) for k, _ in cols[2:])]
                    )
        if rows:
            out.append((f"{metrics} metrics by {group}", cols, rows))
    return out


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
    note = f"{report['domain']}, model `{report['model']}`"
    if report.get("partial"):
        note += " (partial run)"
    lines.append(note)
    for title, group_cols, rows in breakdowns(report):
        lines += [
            "",
            f"{title}:",
            "",
            "| " + " | ".join(label for _, label in group_cols) + " |",
            "|" + "|".join("---" if i < 2 else "---:" for i in range(len(group_cols))) + "|",
            *("| " + " | ".join(cells) + " |" for cells in rows),
        ]
    return "\n".join(lines) + "\n"


def dumps(report: dict[str, Any]) -> str:
    """Return the report as indented JSON."""
    return json.dumps(report, indent=2, ensure_ascii=False) + "\n"

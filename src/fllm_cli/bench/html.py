"""The HTML bench report: one self-contained page of tables and plots, readable offline.

Plots are drawn with matplotlib (its object API, no pyplot state) and inlined as SVG with text
as paths, so the page needs no font, script, stylesheet or image from anywhere: opening it
fetches nothing. Every string that comes from a task file, a model or the command line is
HTML-escaped before it reaches the page; plot labels are cut short and kept out of
matplotlib's math mode.
"""

from __future__ import annotations

import html
import io
import re
from collections.abc import Iterable
from typing import Any

from fllm_cli.bench import report as rep
from fllm_cli.bench.metrics import SCORERS
from fllm_cli.bench.scoring import percentile, summarize_one

CSS = """
body{font-family:system-ui,-apple-system,'Segoe UI',sans-serif;margin:2rem auto;max-width:72rem;
color:#1d2430;padding:0 1rem}
h1{font-size:1.5rem;margin-bottom:.25rem}h2{font-size:1.15rem;margin-top:2rem;
border-bottom:1px solid #d5dae1;padding-bottom:.2rem}
table{border-collapse:collapse;margin:.5rem 0 1rem;font-size:.9rem}
th,td{border:1px solid #d5dae1;padding:.25rem .5rem;text-align:right}
th{background:#eef1f5}td.text,th.text{text-align:left}
.facts td{text-align:left}.muted{color:#65707f}
figure{margin:.5rem 0 1.5rem;display:inline-block;vertical-align:top}
figure svg{max-width:100%;height:auto}figcaption{font-size:.85rem;color:#65707f}
td.task{max-width:28rem;text-align:left;white-space:normal}
"""

SUMMARY_COLUMNS: tuple[tuple[str, str], ...] = (
    ("tasks", "tasks"),
    ("valid_rate", "% valid"),
    ("f1", "F1"),
    ("exact_rate", "exact %"),
    ("mean_llm_calls", "LLM calls"),
    ("mean_backtracks", "backtracks"),
    ("fallbacks", "fallbacks"),
    ("tokens", "tokens"),
    ("cost_usd", "cost $"),
    ("mean_seconds", "s/unit"),
    ("p95_seconds", "p95 s"),
)
MAX_FAILURES = 50
COLORS = ("#3b6fb6", "#e08a2c", "#4a9a5b", "#b8494f", "#7d62b3", "#8c6d4f", "#c45fa0")


def _e(value: Any) -> str:
    return html.escape(str(value), quote=True)


def _label(text: str, width: int = 28) -> str:
    """A plot label: short, and never read as matplotlib math."""
    text = " ".join(str(text).split())
    if len(text) > width:
        text = text[: width - 1] + "…"
    return text.replace("\\", "/").replace("$", r"\$")


def model_of(row: dict[str, Any], report: dict[str, Any]) -> str:
    """Return the model a result row was run with."""
    return str(row.get("model") or report.get("model", "?"))


def _groups(report: dict[str, Any]) -> list[tuple[str, str, list[dict[str, Any]]]]:
    """Return (model, strategy, rows) for each pair that has results, in report order."""
    rows = [r for r in report.get("results", []) if isinstance(r, dict) and "strategy" in r]
    models = list(dict.fromkeys(model_of(r, report) for r in rows))
    strategies = list(
        dict.fromkeys([*report.get("strategies", []), *(r["strategy"] for r in rows)])
    )
    out = []
    for model in models:
        for strategy in strategies:
            mine = [r for r in rows if r["strategy"] == strategy and model_of(r, report) == model]
            if mine:
                out.append((model, strategy, mine))
    return out


def _table(
    headers: list[str] | None, rows: Iterable[list[str]], text_columns: int = 1, cls: str = ""
) -> str:
    """Return an HTML table (no header row for ``None``); cells must already be escaped."""
    head = "".join(
        f'<th class="text">{h}</th>' if i < text_columns else f"<th>{h}</th>"
        for i, h in enumerate(headers or [])
    )
    body = "".join(
        "<tr>"
        + "".join(
            f'<td class="text">{c}</td>' if i < text_columns else f"<td>{c}</td>"
            for i, c in enumerate(row)
        )
        + "</tr>"
        for row in rows
    )
    klass = f' class="{cls}"' if cls else ""
    thead = f"<thead><tr>{head}</tr></thead>" if headers else ""
    return f"<table{klass}>{thead}<tbody>{body}</tbody></table>"


def _svg(fig: Any) -> str:
    """Return a figure as inline SVG markup (no XML prolog, no metadata, text as paths)."""
    import matplotlib

    buffer = io.StringIO()
    with matplotlib.rc_context({"svg.fonttype": "path", "svg.hashsalt": "fllm-bench"}):
        fig.savefig(
            buffer,
            format="svg",
            bbox_inches="tight",
            metadata={"Creator": None, "Date": None, "Format": None, "Type": None},
        )
    text = buffer.getvalue()
    start = text.find("<svg")
    return re.sub(r"<metadata>.*?</metadata>", "", text[start:], flags=re.S)


def _figure(width: float = 6.4, height: float = 3.2) -> tuple[Any, Any]:
    from matplotlib.figure import Figure

    fig = Figure(figsize=(width, height))
    ax = fig.add_subplot()
    ax.spines[["top", "right"]].set_visible(False)
    ax.grid(axis="y", color="#e3e7ec", linewidth=0.8)
    ax.set_axisbelow(True)
    return fig, ax


def _bars(
    title: str,
    strategies: list[str],
    models: list[str],
    values: dict[tuple[str, str], float | None],
    ylabel: str,
    top: float | None = None,
) -> str:
    """Grouped bars: one group per strategy (or level), one bar per model."""
    fig, ax = _figure(max(4.0, 1.2 * len(strategies) * max(1, len(models)) + 2), 3.2)
    width = 0.8 / max(1, len(models))
    for m, model in enumerate(models):
        xs, ys = [], []
        for s, strategy in enumerate(strategies):
            value = values.get((model, strategy))
            if value is not None:
                xs.append(s + (m - (len(models) - 1) / 2) * width)
                ys.append(value)
        bars = ax.bar(xs, ys, width=width, color=COLORS[m % len(COLORS)], label=_label(model, 40))
        ax.bar_label(bars, fmt="%.3g", fontsize=7, padding=2)
    ax.set_xticks(range(len(strategies)), [_label(s, 20) for s in strategies])
    ax.set_ylabel(ylabel)
    ax.set_title(_label(title, 80), fontsize=11)
    if top is not None:
        ax.set_ylim(0, top)
    if len(models) > 1:
        ax.legend(fontsize=8, frameon=False)
    return _svg(fig)


def _boxes(title: str, groups: list[tuple[str, list[float]]], ylabel: str) -> str:
    """One box plot per (model, strategy)."""
    fig, ax = _figure(max(4.0, 1.1 * len(groups) + 2), 3.2)
    data = [values or [0.0] for _, values in groups]
    ax.boxplot(data, showfliers=True, widths=0.5)
    ax.set_xticks(range(1, len(groups) + 1), [_label(name, 24) for name, _ in groups])
    ax.tick_params(axis="x", labelsize=8)
    ax.set_ylabel(ylabel)
    ax.set_title(_label(title, 80), fontsize=11)
    return _svg(fig)


def _figure_html(svg: str, caption: str) -> str:
    return f"<figure>{svg}<figcaption>{_e(caption)}</figcaption></figure>"


def render_html(report: dict[str, Any]) -> str:
    """Return the whole page for a bench report (from a run or a results file)."""
    groups = _groups(report)
    models = list(dict.fromkeys(m for m, _, _ in groups))
    strategies = list(dict.fromkeys(s for _, s, _ in groups))
    multi = len(models) > 1
    parts = [_head(report, models), _facts(report, models, groups)]
    parts.append("<h2>Summary by strategy and model</h2>")
    parts.append(_summary_table(groups, multi))
    if groups:
        parts.append("<h2>Validity and quality</h2>")
        summaries = {(m, s): summarize_one(rows) for m, s, rows in groups}
        valid = {k: 100 * v["valid_rate"] for k, v in summaries.items()}
        parts.append(
            _figure_html(
                _bars("Valid plans", strategies, models, valid, "% valid", top=105),
                "Share of units whose plan the verifier accepts.",
            )
        )
        f1 = {k: v["f1"] for k, v in summaries.items() if v.get("with_reference")}
        if f1:
            parts.append(
                _figure_html(
                    _bars(
                        "Plan quality against the reference",
                        strategies,
                        models,
                        f1,
                        "mean F1",
                        1.05,
                    ),
                    "Tool-set F1 against the task's reference (invalid plans score 0).",
                )
            )
        parts.append(_metrics_section(groups, summaries, multi))
        parts.append("<h2>Cost and latency</h2>")
        names = [f"{s} · {m}" if multi else s for m, s, _ in groups]
        seconds = [[float(r["stats"].get("seconds", 0.0)) for r in rows] for _, _, rows in groups]
        cost = [[float(r["stats"].get("cost_usd", 0.0)) for r in rows] for _, _, rows in groups]
        parts.append(
            _figure_html(
                _boxes("Latency per unit", list(zip(names, seconds)), "seconds"),
                "Wall time of each unit (task × strategy), as measured on its worker.",
            )
        )
        parts.append(
            _figure_html(
                _boxes("Cost per unit", list(zip(names, cost)), "USD"),
                "Money each unit spent on model calls (0 for local and random models).",
            )
        )
        parts.append(_distribution_table(names, seconds, cost))
        parts.append("<h2>By task level</h2>")
        parts.append(_levels(groups, multi))
        parts.append(_failures(groups, multi))
    parts.append("</body></html>\n")
    return "".join(parts)


def _metrics_section(
    groups: list[tuple[str, str, list[dict[str, Any]]]],
    summaries: dict[tuple[str, str], dict[str, Any]],
    multi: bool,
) -> str:
    """The benchmark's own metrics (data domains): overall, as bars, and per group."""
    name = next((v["metrics"] for v in summaries.values() if v.get("metrics") in SCORERS), None)
    if name is None:
        return ""
    scorer = SCORERS[name]
    keys = [(m, s) for m, s, _ in groups if summaries[(m, s)].get("metrics") == name]
    labels = {k: f"{k[1]} · {k[0]}" if multi else k[1] for k in keys}
    parts = [f"<h2>Benchmark metrics: {_e(name)}</h2>"]
    headers = ["strategy", "scored", *(label for _, label in scorer.columns)]
    rows = [
        [
            _e(labels[k]),
            _e(summaries[k].get("scored", 0)),
            *(_e(rep.fmt_value(key, summaries[k].get(key))) for key, _ in scorer.columns),
        ]
        for k in keys
    ]
    parts.append(_table(headers, rows, cls="metrics"))
    values: dict[tuple[str, str], float | None] = {
        (labels[k], label): 100 * float(summaries[k].get(key) or 0.0)
        for k in keys
        for key, label in scorer.columns
    }
    chart = _bars(
        f"{name} metrics",
        [label for _, label in scorer.columns],
        [labels[k] for k in keys],
        values,
        "%",
        top=105,
    )
    parts.append(
        _figure_html(chart, "Each metric per strategy, as the benchmark's evaluator defines it.")
    )
    for group in scorer.groups:
        names = list(
            dict.fromkeys(g for k in keys for g in (summaries[k].get(f"by_{group}") or {}))
        )
        if not names:
            continue
        table_rows = []
        final: dict[tuple[str, str], float | None] = {}
        last_key, last_label = scorer.columns[-1]
        for g in names:
            for k in keys:
                cell = (summaries[k].get(f"by_{group}") or {}).get(g)
                if cell is None:
                    continue
                final[(labels[k], g)] = 100 * float(cell.get(last_key) or 0.0)
                table_rows.append(
                    [
                        _e(g),
                        _e(labels[k]),
                        _e(cell.get("tasks", 0)),
                        *(_e(rep.fmt_value(key, cell.get(key))) for key, _ in scorer.columns),
                    ]
                )
        parts.append(f"<h3>By {_e(group)}</h3>")
        headers = [_e(group), "strategy", "tasks", *(label for _, label in scorer.columns)]
        parts.append(_table(headers, table_rows, text_columns=2, cls=f"by-{_e(group)}"))
        chart = _bars(
            f"{last_label} by {group}", names, [labels[k] for k in keys], final, "%", top=105
        )
        parts.append(_figure_html(chart, f"{last_label} per {group}, per strategy."))
    return "".join(parts)


def _head(report: dict[str, Any], models: list[str]) -> str:
    title = (
        f"fllm bench: {report.get('domain', '?')} with {', '.join(models) or report.get('model')}"
    )
    if report.get("partial"):
        title += " (partial)"
    return (
        '<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{_e(title)}</title><style>{CSS}</style></head><body>"
        f"<h1>{_e(title)}</h1>"
    )


def _facts(
    report: dict[str, Any], models: list[str], groups: list[tuple[str, str, list[Any]]]
) -> str:
    executor = report.get("executor") or {}
    retried = executor.get("retried") or []
    rows = [
        ["domain", _e(report.get("domain", "?"))],
        ["tasks file", _e(report.get("tasks_file") or "–")],
        ["model" + ("s" if len(models) > 1 else ""), _e(", ".join(models) or "–")],
        ["units", _e(sum(len(r) for _, _, r in groups))],
    ]
    if executor:
        workers = executor.get("workers")
        plural = "" if workers == 1 else "s"
        rows.append(["executor", _e(f"{executor.get('name')} ({workers} worker{plural})")])
        rows.append(["units retried after a worker died", _e(len(retried))])
    if report.get("wall_seconds") is not None:
        rows.append(["wall time", _e(f"{report['wall_seconds']:.1f} s")])
    if report.get("results_file"):
        rows.append(["results file", _e(report["results_file"])])
    if report.get("partial"):
        rows.append(["partial", _e(f"yes ({report.get('stopped') or 'not every unit ran'})")])
    return _table(None, rows, text_columns=2, cls="facts")


def _summary_table(groups: list[tuple[str, str, list[dict[str, Any]]]], multi: bool) -> str:
    headers = ["strategy", *(["model"] if multi else []), *(label for _, label in SUMMARY_COLUMNS)]
    rows = []
    for model, strategy, mine in groups:
        summary = summarize_one(mine)
        cells = [_e(strategy), *([_e(model)] if multi else [])]
        cells += [_e(rep.fmt_value(key, summary.get(key))) for key, _ in SUMMARY_COLUMNS]
        rows.append(cells)
    return _table(headers, rows, text_columns=2 if multi else 1, cls="summary")


def _distribution_table(
    names: list[str], seconds: list[list[float]], cost: list[list[float]]
) -> str:
    rows = []
    for name, secs, usd in zip(names, seconds, cost):
        rows.append(
            [
                _e(name),
                _e(f"{percentile(secs, 50):.3f}"),
                _e(f"{percentile(secs, 95):.3f}"),
                _e(f"{max(secs, default=0.0):.3f}"),
                _e(f"{sum(usd):.4f}"),
                _e(f"{percentile(usd, 95):.5f}"),
            ]
        )
    headers = ["strategy", "median s", "p95 s", "max s", "total $", "p95 $ per unit"]
    return _table(headers, rows, cls="distribution")


def _levels(groups: list[tuple[str, str, list[dict[str, Any]]]], multi: bool) -> str:
    levels = list(
        dict.fromkeys(str(r.get("level") or "all") for _, _, rows in groups for r in rows)
    )
    names = [f"{s} · {m}" if multi else s for m, s, _ in groups]
    valid: dict[tuple[str, str], float | None] = {}
    rows = []
    for level in levels:
        cells = [_e(level)]
        for name, (_, _, mine) in zip(names, groups):
            at = [r for r in mine if str(r.get("level") or "all") == level]
            if at:
                rate = 100 * sum(1 for r in at if r["valid"]) / len(at)
                valid[(name, level)] = rate
                cells.append(_e(f"{rate:.1f} ({len(at)})"))
            else:
                cells.append("–")
        rows.append(cells)
    table = _table(["level", *(_e(n) for n in names)], rows, cls="levels")
    chart = _bars("Valid plans by task level", levels, names, valid, "% valid", top=105)
    return table + _figure_html(
        chart, "Valid share per task level (count of units in brackets in the table)."
    )


def _failures(groups: list[tuple[str, str, list[dict[str, Any]]]], multi: bool) -> str:
    bad = [(m, s, r) for m, s, rows in groups for r in rows if not r["valid"]]
    if not bad:
        return '<h2>Failures</h2><p class="muted">Every plan is valid.</p>'
    rows = []
    for model, strategy, row in bad[:MAX_FAILURES]:
        cells = [_e(row["id"]), _e(strategy), *([_e(model)] if multi else [])]
        cells += [
            f'<span class="task">{_e(row.get("task", ""))}</span>',
            _e(row.get("error_kind") or ""),
            _e(row.get("error") or ""),
        ]
        rows.append(cells)
    more = len(bad) - MAX_FAILURES
    note = f'<p class="muted">and {more} more not shown</p>' if more > 0 else ""
    headers = ["id", "strategy", *(["model"] if multi else []), "task", "kind", "error"]
    return (
        f"<h2>Failures ({len(bad)})</h2>"
        + _table(headers, rows, text_columns=len(headers), cls="failures")
        + note
    )

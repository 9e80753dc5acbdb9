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
from collections import Counter
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
.note{font-size:.9rem;max-width:60rem}span.no-reference{cursor:help}
figure{margin:.5rem 0 1.5rem}figure svg{max-width:100%;height:auto}
figcaption{font-size:.9rem;color:#65707f;max-width:60rem}
table.failures td{vertical-align:top}span.id{font-weight:600}
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
REFERENCE_KEYS = frozenset({"f1", "exact_rate"})
MAX_FAILURES = 50  # rows of the failures table, each one error message with its count
EXAMPLES = 3  # task ids shown for one error besides the first
COLORS = ("#3b6fb6", "#e08a2c", "#4a9a5b", "#b8494f", "#7d62b3", "#8c6d4f", "#c45fa0")
MARK = "#c0392b"  # points beyond a clipped axis
# Font sizes in points. Figures are drawn at most MAX_WIDTH_IN wide, so the page (72rem) shows
# them at their natural size, never shrunk: 11 pt there is about 15 CSS pixels, as the tables.
FONT = {"title": 13.0, "label": 11.5, "tick": 11.0, "note": 10.0}
MAX_WIDTH_IN = 10.5


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


def _figure(width: float, height: float = 3.6, beside: float = 0.0) -> tuple[Any, Any]:
    """A figure ``width`` inches wide, less what ``beside`` (a legend) takes of MAX_WIDTH_IN."""
    from matplotlib.figure import Figure

    fig = Figure(figsize=(min(width, MAX_WIDTH_IN - beside), height))
    ax = fig.add_subplot()
    ax.spines[["top", "right"]].set_visible(False)
    ax.grid(axis="y", color="#e3e7ec", linewidth=0.8)
    ax.set_axisbelow(True)
    ax.tick_params(labelsize=FONT["tick"])
    return fig, ax


def _xlabels(fig: Any, ax: Any, ticks: Iterable[float], names: list[str]) -> None:
    """Label the x ticks so that they never overlap: "strategy · model" on two lines, and
    labels still wider than their slot slanted (never shrunk)."""
    labels = ["\n".join(_label(part, 24) for part in name.split(" · ")) for name in names]
    ax.set_xticks(list(ticks), labels)
    slot = (fig.get_figwidth() - 1.5) / max(1, len(labels))
    widest = max((len(line) for label in labels for line in label.split("\n")), default=0)
    if widest * 0.1 > slot:  # about 0.1 inch a character at 11 pt
        ax.tick_params(axis="x", labelrotation=30)
        for tick in ax.get_xticklabels():
            tick.set_horizontalalignment("right")


def varies(values: Iterable[float]) -> bool:
    """Say whether a plot of ``values`` would show anything: some two of them differ."""
    seen = list(values)
    return bool(seen) and max(seen) - min(seen) > 1e-12


def bars_figure(
    title: str,
    groups: list[str],
    series: list[str],
    values: dict[tuple[str, str], float | None],
    ylabel: str,
    top: float | None = None,
) -> Any:
    """Grouped bars: one group per level (or other breakdown), one bar per series (strategy)."""
    n, k = max(1, len(groups)), max(1, len(series))
    names = [_label(name, 40) for name in series]
    # The legend goes beside the plot: about 0.1 inch a character, plus its colour patch.
    legend = 0.8 + 0.1 * max(map(len, names)) if k > 1 else 0.0
    fig, ax = _figure(max(5.0, 0.5 * n * k + 0.4 * n + 2.5), beside=legend)
    width = 0.8 / k
    for m, name in enumerate(series):
        xs, ys = [], []
        for g, group in enumerate(groups):
            value = values.get((name, group))
            if value is not None:
                xs.append(g + (m - (k - 1) / 2) * width)
                ys.append(value)
        drawn = ax.bar(xs, ys, width=width, color=COLORS[m % len(COLORS)], label=names[m])
        if n * k <= 24:  # beyond that the numbers on the bars run into each other
            ax.bar_label(drawn, fmt="%.3g", fontsize=FONT["note"], padding=2)
    _xlabels(fig, ax, range(len(groups)), groups)
    ax.set_ylabel(ylabel, fontsize=FONT["label"])
    ax.set_title(_label(title, 80), fontsize=FONT["title"])
    if top is not None:
        ax.set_ylim(0, top)
    if k > 1:  # beside the plot, where it covers no bar
        ax.legend(fontsize=FONT["tick"], frameon=False, loc="upper left", bbox_to_anchor=(1, 1))
    return fig


# Latency has a long tail: one stuck unit can take a hundred times the median and squash every
# box into a line at the bottom. A log axis would keep every point in view, but it makes a
# strategy twice as slow look barely different, and people compare boxes by their height at a
# glance. So the axis stays linear and stops a little above the highest 95th percentile of any
# box, but only when the largest value stands well above it. Nothing disappears silently: a box
# with points above the axis gets a red triangle at the top edge with their count and the
# largest of them, and the table under the plots gives every box's median, p95 and maximum.
CLIP_PERCENTILE = 95
CLIP_WHEN = 1.5  # clip only when the largest value exceeds the percentile this many times
CLIP_HEADROOM = 1.15  # the axis top, over that percentile


def clip_top(series: list[list[float]]) -> float | None:
    """Return where a box plot's axis should stop, or None when every point fits well."""
    filled = [values for values in series if values]
    if not filled:
        return None
    high = max(percentile(values, CLIP_PERCENTILE) for values in filled)
    largest = max(max(values) for values in filled)
    if high <= 0 or largest <= CLIP_WHEN * high:
        return None
    return CLIP_HEADROOM * high


def boxes_figure(title: str, groups: list[tuple[str, list[float]]], ylabel: str, unit: str) -> Any:
    """One box plot per (model, strategy) on a linear axis from 0, outliers clipped and marked."""
    fig, ax = _figure(max(5.0, 1.3 * len(groups) + 2.5))
    ax.boxplot(
        [values or [0.0] for _, values in groups],
        widths=0.5,
        flierprops={"markersize": 4, "markeredgecolor": "#65707f"},
        medianprops={"color": COLORS[1], "linewidth": 2},
    )
    _xlabels(fig, ax, range(1, len(groups) + 1), [name for name, _ in groups])
    ax.set_ylabel(ylabel, fontsize=FONT["label"])
    top = clip_top([values for _, values in groups])
    if top is None:
        ax.set_ylim(bottom=0)
        ax.set_title(_label(title, 80), fontsize=FONT["title"])
        return fig
    ax.set_ylim(0, top)
    ax.set_title(_label(title, 80), fontsize=FONT["title"], pad=40)
    for i, (_, values) in enumerate(groups, start=1):
        above = [v for v in values if v > top]
        if above:
            ax.plot([i], [top], marker="^", markersize=9, color=MARK, clip_on=False)
            ax.annotate(
                _label(f"{len(above)} above", 40) + "\n" + _label(f"max {max(above):.3g} {unit}"),
                xy=(i, top),
                xytext=(0, 9),
                textcoords="offset points",
                ha="center",
                fontsize=FONT["note"],
                color=MARK,
                annotation_clip=False,
            )
    return fig


def _figure_html(fig: Any, caption: str, ident: str) -> str:
    return (
        f'<figure id="plot-{_e(ident)}">{_svg(fig)}<figcaption>{_e(caption)}</figcaption></figure>'
    )


def _note(text: str, cls: str = "note muted") -> str:
    """A short paragraph (``text`` already escaped), such as why a plot is absent."""
    return f'<p class="{cls}">{text}</p>'


def render_html(report: dict[str, Any]) -> str:
    """Return the whole page for a bench report (from a run or a results file).

    Only plots that say something are drawn: a per-strategy figure that the summary table
    already states (valid share, F1) is left out, and so is any plot whose values are all the
    same (the cost of a local model's run, a valid share that no level changes); a short note
    says so instead.
    """
    groups = _groups(report)
    models = list(dict.fromkeys(m for m, _, _ in groups))
    multi = len(models) > 1
    summaries = {(m, s): summarize_one(rows) for m, s, rows in groups}
    parts = [_head(report, models), _facts(report, models, groups)]
    parts.append("<h2>Summary by strategy and model</h2>")
    parts.append(_summary_table(groups, summaries, multi))
    if groups:
        parts.append(_metrics_section(groups, summaries, multi))
        parts.append(_latency_and_cost(groups, multi))
        parts.append(_levels(groups, multi))
        parts.append(_failures(groups, multi))
    parts.append("</body></html>\n")
    return "".join(parts)


def _latency_and_cost(groups: list[tuple[str, str, list[dict[str, Any]]]], multi: bool) -> str:
    names = [f"{s} · {m}" if multi else s for m, s, _ in groups]
    seconds = [[float(r["stats"].get("seconds", 0.0)) for r in rows] for _, _, rows in groups]
    cost = [[float(r["stats"].get("cost_usd", 0.0)) for r in rows] for _, _, rows in groups]
    parts = ["<h2>Latency and cost</h2>"]
    took = [v for values in seconds for v in values]
    if varies(took):
        caption = "Wall time of each unit (task × strategy), as measured on its worker."
        fig = boxes_figure("Latency per unit", list(zip(names, seconds)), "seconds", "s")
        parts.append(_figure_html(fig, caption + _clipped(seconds, "s"), "latency"))
    else:
        parts.append(_note(_e(f"Every unit took {took[0]:.3f} s, so there is no latency plot.")))
    spent = [v for values in cost for v in values]
    if varies(spent):
        fig = boxes_figure("Cost per unit", list(zip(names, cost)), "USD", "USD")
        caption = "Money each unit spent on model calls."
        parts.append(_figure_html(fig, caption + _clipped(cost, "USD"), "cost"))
    elif not any(spent):
        note = "No unit spent money on model calls (a local or random model): no cost plot."
        parts.append(_note(_e(note)))
    else:
        note = f"Every unit cost the same, ${spent[0]:.5f}, so there is no cost plot."
        parts.append(_note(_e(note)))
    parts.append(_distribution_table(names, seconds, cost, with_cost=any(spent)))
    return "".join(parts)


def _clipped(series: list[list[float]], unit: str) -> str:
    """The caption's sentence on a clipped axis, if it is clipped."""
    top = clip_top(series)
    if top is None:
        return ""
    return (
        f" The axis stops at {top:.3g} {unit} so that the few far above do not flatten the"
        " boxes; a red triangle counts the units above it."
    )


def _metrics_section(
    groups: list[tuple[str, str, list[dict[str, Any]]]],
    summaries: dict[tuple[str, str], dict[str, Any]],
    multi: bool,
) -> str:
    """The benchmark's own metrics (data domains): overall and per group (level, days...)."""
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
    # No bar chart of these overall rates: it would only repeat this table.
    parts.append(_table(headers, rows, cls="metrics"))
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
        series = [labels[k] for k in keys]
        if len(names) > 1 and _changes_across(final, series, names):
            fig = bars_figure(f"{last_label} by {group}", names, series, final, "%", top=105)
            parts.append(_figure_html(fig, f"{last_label} per {group}, per strategy.", group))
    return "".join(parts)


def _changes_across(
    values: dict[tuple[str, str], float | None], series: list[str], groups: list[str]
) -> bool:
    """Say whether some series takes different values across the groups (else a chart of them
    says no more than the overall summary)."""
    return any(
        varies(v for g in groups if (v := values.get((name, g))) is not None) for name in series
    )


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


NO_REFERENCE = (
    "– in F1 and exact %: no task of that row has a reference plan, so there is nothing to "
    'score its plans against. To get these scores, give task lines a "reference": the tool '
    "names of a right plan in execution order, e.g. "
    '"reference": ["Image Denoising", "Image Captioning"] (docs/bench.md, Task files).'
)


def _summary_table(
    groups: list[tuple[str, str, list[dict[str, Any]]]],
    summaries: dict[tuple[str, str], dict[str, Any]],
    multi: bool,
) -> str:
    # A benchmark with its own metrics is scored by them (their section follows), not by F1.
    scored_by_metrics = any(v.get("metrics") in SCORERS for v in summaries.values())
    columns = [
        (key, label)
        for key, label in SUMMARY_COLUMNS
        if not (scored_by_metrics and key in REFERENCE_KEYS)
    ]
    headers = ["strategy", *(["model"] if multi else []), *(label for _, label in columns)]
    rows = []
    unexplained = False
    for model, strategy, _ in groups:
        summary = summaries[(model, strategy)]
        cells = [_e(strategy), *([_e(model)] if multi else [])]
        for key, _ in columns:
            value = summary.get(key)
            if key in REFERENCE_KEYS and value is None:
                unexplained = True
                cells.append(f'<span class="no-reference" title="{_e(NO_REFERENCE)}">–*</span>')
            else:
                cells.append(_e(rep.fmt_value(key, value)))
        rows.append(cells)
    table = _table(headers, rows, text_columns=2 if multi else 1, cls="summary")
    if unexplained:
        table += _note("* " + _e(NO_REFERENCE), "note no-reference")
    return table


def _distribution_table(
    names: list[str], seconds: list[list[float]], cost: list[list[float]], with_cost: bool
) -> str:
    rows = []
    for name, secs, usd in zip(names, seconds, cost):
        cells = [
            _e(name),
            _e(f"{percentile(secs, 50):.3f}"),
            _e(f"{percentile(secs, 95):.3f}"),
            _e(f"{max(secs, default=0.0):.3f}"),
        ]
        if with_cost:
            cells += [_e(f"{sum(usd):.4f}"), _e(f"{percentile(usd, 95):.5f}")]
        rows.append(cells)
    headers = ["strategy", "median s", "p95 s", "max s"]
    if with_cost:
        headers += ["total $", "p95 $ per unit"]
    return _table(headers, rows, cls="distribution")


def _levels(groups: list[tuple[str, str, list[dict[str, Any]]]], multi: bool) -> str:
    levels = list(
        dict.fromkeys(str(r.get("level") or "all") for _, _, rows in groups for r in rows)
    )
    if len(levels) < 2:
        return ""  # one level: its row would be the summary again
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
    parts = [
        "<h2>By task level</h2>",
        _table(["level", *(_e(n) for n in names)], rows, cls="levels"),
    ]
    if _changes_across(valid, names, levels):
        fig = bars_figure("Valid plans by task level", levels, names, valid, "% valid", top=105)
        parts.append(
            _figure_html(
                fig, "Valid share per task level (units per level in the table).", "levels"
            )
        )
    else:
        note = "Each strategy's valid share is the same at every level, so there is no chart."
        parts.append(_note(_e(note)))
    return "".join(parts)


def fold_failures(
    bad: list[tuple[str, str, dict[str, Any]]],
) -> list[tuple[tuple[str, str], list[tuple[str, str, dict[str, Any]]]]]:
    """Group failed units by (kind, message), largest group first (then first seen)."""
    folds: dict[tuple[str, str], list[tuple[str, str, dict[str, Any]]]] = {}
    for model, strategy, row in bad:
        key = (str(row.get("error_kind") or ""), " ".join(str(row.get("error") or "").split()))
        folds.setdefault(key, []).append((model, strategy, row))
    return sorted(folds.items(), key=lambda item: -len(item[1]))


def _failures(groups: list[tuple[str, str, list[dict[str, Any]]]], multi: bool) -> str:
    bad = [(m, s, r) for m, s, rows in groups for r in rows if not r["valid"]]
    if not bad:
        return '<h2>Failures</h2><p class="muted">Every plan is valid.</p>'
    folds = fold_failures(bad)
    rows = []
    for (kind, error), members in folds[:MAX_FAILURES]:
        where = Counter(f"{s} · {m}" if multi else s for m, s, _ in members)
        strategies = (
            next(iter(where))
            if len(where) == 1
            else ", ".join(f"{name} ({n})" for name, n in where.items())
        )
        rows.append(
            [
                _e(len(members)),
                _e(kind),
                _e(error or "(no message)"),
                _e(strategies),
                _examples([row for _, _, row in members]),
            ]
        )
    more = len(folds) - MAX_FAILURES
    note = f'<p class="muted">and {more} other errors not shown</p>' if more > 0 else ""
    distinct = "1 distinct error" if len(folds) == 1 else f"{len(folds)} distinct errors"
    headers = ["units", "kind", "error", "strategy", "example tasks"]
    return (
        f"<h2>Failures ({len(bad)} units, {distinct})</h2>"
        + _table(headers, rows, text_columns=len(headers), cls="failures")
        + note
    )


def _examples(rows: list[dict[str, Any]]) -> str:
    """A few task ids of one kind of failure, the first with its task text."""
    ids = list(dict.fromkeys(str(r["id"]) for r in rows))
    first = rows[0]
    task = _e(first.get("task", ""))
    text = f'<span class="id">{_e(first["id"])}</span>: <span class="task">{task}</span>'
    others = ids[1 : 1 + EXAMPLES]
    if others:
        text += "<br>also " + ", ".join(_e(i) for i in others)
        if len(ids) > 1 + EXAMPLES:
            text += f" and {len(ids) - 1 - EXAMPLES} more tasks"
    return text

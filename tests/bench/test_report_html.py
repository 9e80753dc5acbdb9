"""What a reader sees on the HTML bench report, checked on made-up runs of known shape.

Plots appear only when they say something the tables do not, a few slow units do not squash
the latency axis, labels are big enough to read and do not overlap, one error repeated
hundreds of times is one row, and an empty F1 says how to get one.
(tests/bench/test_report_browser.py draws real runs' pages in Chromium.)
"""

from __future__ import annotations

import math
import re
from itertools import pairwise
from typing import Any

import pytest
from bench_helpers import Tables
from matplotlib.backends.backend_agg import FigureCanvasAgg

from fllm_cli.bench.html import (
    FONT,
    MAX_WIDTH_IN,
    bars_figure,
    boxes_figure,
    clip_top,
    render_html,
)


def unit(
    i: int,
    strategy: str = "formal",
    *,
    valid: bool = True,
    seconds: float = 0.1,
    cost: float = 0.0,
    level: str | None = None,
    error: str | None = None,
    f1: float | None = None,
    model: str | None = None,
) -> dict[str, Any]:
    """One result row as a bench run writes it."""
    row: dict[str, Any] = {
        "id": i,
        "strategy": strategy,
        "task": f"task number {i}",
        "valid": valid,
        "error": error if not valid else None,
        "error_kind": "parse" if not valid else None,
        "stats": {"seconds": seconds, "cost_usd": cost},
    }
    if level is not None:
        row["level"] = level
    if f1 is not None:
        row["scores"] = {"precision": f1, "recall": f1, "f1": f1, "exact": f1 == 1.0}
    if model is not None:
        row["model"] = model
    return row


def page_of(rows: list[dict[str, Any]]) -> str:
    strategies = list(dict.fromkeys(r["strategy"] for r in rows))
    return render_html({"domain": "d", "model": "m", "strategies": strategies, "results": rows})


def plots(page: str) -> list[str]:
    return re.findall(r'<figure id="plot-([^"]+)">', page)


def spread(n: int, low: float, high: float) -> list[float]:
    """n values evenly from low to high."""
    return [low + (high - low) * i / max(1, n - 1) for i in range(n)]


# ------------------------------------------------------------------------ plots that say something


def test_a_run_that_spent_nothing_has_no_cost_plot() -> None:
    seconds = spread(40, 0.05, 0.4)
    free = page_of([unit(i, seconds=s) for i, s in enumerate(seconds)])
    assert plots(free) == ["latency"]
    assert "no cost plot" in free
    assert Tables(free).tables["distribution"][0] == ["formal", "0.221", "0.382", "0.400"]
    paid = page_of([unit(i, seconds=s, cost=s / 100) for i, s in enumerate(seconds)])
    assert plots(paid) == ["latency", "cost"]
    assert "no cost plot" not in paid
    assert len(Tables(paid).tables["distribution"][0]) == 6  # with total $ and p95 $


def test_a_constant_latency_or_cost_draws_no_plot() -> None:
    page = page_of([unit(i, seconds=0.5, cost=0.002) for i in range(10)])
    assert plots(page) == []
    assert "Every unit took 0.500 s, so there is no latency plot." in page
    assert "Every unit cost the same, $0.00200, so there is no cost plot." in page


def test_no_chart_repeats_the_summary_table() -> None:
    rows = [unit(i, valid=i % 3 > 0, seconds=0.1 + i / 100, f1=0.5) for i in range(30)]
    rows += [unit(i, "zero-shot", valid=i % 2 > 0, seconds=0.2, f1=0.25) for i in range(30)]
    page = page_of(rows)
    # The valid share and F1 per strategy are in the summary table; no bars repeat them.
    assert plots(page) == ["latency"]
    summary = Tables(page).tables["summary"]
    assert [row[2] for row in summary] == ["66.7", "50.0"]  # % valid
    assert [row[3] for row in summary] == ["0.500", "0.250"]  # F1


def test_a_level_chart_only_when_some_strategy_changes_across_levels() -> None:
    flat = [unit(i, level="easy" if i % 2 else "hard", seconds=i / 10) for i in range(20)]
    page = page_of(flat)
    assert "levels" in Tables(page).tables and "levels" not in plots(page)
    assert "same at every level, so there is no chart" in page
    changing = [
        unit(i, level="easy" if i % 2 else "hard", valid=bool(i % 2), error="x", seconds=i / 10)
        for i in range(20)
    ]
    assert "levels" in plots(page_of(changing))
    one_level = page_of([unit(i, level="easy", seconds=i / 10) for i in range(20)])
    assert "levels" not in Tables(one_level).tables and "By task level" not in one_level


# ------------------------------------------------------------------------------- latency axis


def test_two_outliers_do_not_squash_the_latency_axis() -> None:
    bulk = spread(183, 0.1, 0.3)
    seconds = [*bulk[:50], 30.0, *bulk[50:120], 42.0, *bulk[120:]]
    fig = boxes_figure("Latency per unit", [("formal", seconds)], "seconds", "s")
    ax = fig.axes[0]
    bottom, top = ax.get_ylim()
    assert bottom == 0 and 0.3 <= top < 0.5  # the axis fits the bulk, not the 42 s unit
    quartiles = sorted(seconds)[len(seconds) // 4], sorted(seconds)[3 * len(seconds) // 4]
    assert (quartiles[1] - quartiles[0]) / top > 0.2  # the box is tall enough to read
    notes = [t.get_text() for t in ax.texts]
    assert notes == ["2 above\nmax 42 s"]  # the clipped units are counted, not hidden
    page = page_of([unit(i, seconds=s) for i, s in enumerate(seconds)])
    assert "The axis stops at 0.336 s" in page and "max s" in page


def test_without_outliers_the_axis_shows_every_point() -> None:
    seconds = spread(100, 0.1, 0.3)
    assert clip_top([seconds]) is None
    fig = boxes_figure("Latency per unit", [("formal", seconds)], "seconds", "s")
    assert fig.axes[0].get_ylim()[1] >= 0.3 and len(fig.axes[0].texts) == 0
    # A slow strategy is not an outlier: each box keeps its own 95th percentile in view.
    assert clip_top([seconds, [5 * s for s in seconds]]) is None


# ------------------------------------------------------------------------------ readable labels


def texts(fig: Any) -> list[Any]:
    ax = fig.axes[0]
    found = [ax.title, ax.yaxis.label, *ax.get_xticklabels(), *ax.get_yticklabels(), *ax.texts]
    legend = ax.get_legend()
    if legend is not None:
        found += legend.get_texts()
    return [t for t in found if t.get_text()]


def assert_readable(fig: Any) -> None:
    """Text of 10 pt or more, a figure the page shows unshrunk, tick labels apart."""
    canvas = FigureCanvasAgg(fig)
    canvas.draw()
    renderer = canvas.get_renderer()
    assert fig.get_tightbbox(renderer).width <= MAX_WIDTH_IN  # as saved, legend and all
    for text in texts(fig):
        assert text.get_fontsize() >= 10, (text.get_text(), text.get_fontsize())
    labels = [t for t in fig.axes[0].get_xticklabels() if t.get_text()]
    angle = math.radians(labels[0].get_rotation())
    if angle == 0:
        boxes = [t.get_window_extent(renderer) for t in labels]
        for left, right in pairwise(boxes):
            assert left.x1 <= right.x0 + 1, "tick labels overlap"
    else:  # slanted labels are parallel lines: their distance apart must exceed a line
        xs = [t.get_window_extent(renderer).x1 for t in labels]  # right ends, at the ticks
        line = max(t.get_fontsize() for t in labels) * fig.dpi / 72
        assert min(b - a for a, b in pairwise(xs)) * math.sin(angle) > 1.2 * line


def test_the_per_level_chart_has_labels_one_can_read() -> None:
    levels = ["image→image", "image→text", "text→image", "text→text", "image+text→text",
              "text+text→text", "image+image+text→text", "video+audio→text"]  # fmt: skip
    series = [f"{s} · {m}" for m in ("gpt-4o-mini", "qwen2.5:7b") for s in ("formal", "few-shot")]
    values: dict[tuple[str, str], float | None] = {
        (name, level): float((7 * i + 13 * j) % 100)
        for i, name in enumerate(series)
        for j, level in enumerate(levels)
    }
    fig = bars_figure("Valid plans by task level", levels, series, values, "% valid", top=105)
    assert_readable(fig)
    assert FONT["tick"] >= 11


def test_box_labels_of_many_strategy_model_pairs_do_not_overlap() -> None:
    names = [f"{s} · {m}" for m in ("gpt-4o-mini", "qwen2.5:7b") for s in ("formal", "zero-shot",
             "few-shot")]  # fmt: skip
    groups = [(name, spread(30, 0.1 * (i + 1), 0.3 * (i + 1))) for i, name in enumerate(names)]
    fig = boxes_figure("Latency per unit", groups, "seconds", "s")
    assert_readable(fig)
    assert fig.axes[0].get_xticklabels()[0].get_text() == "formal\ngpt-4o-mini"


# ----------------------------------------------------------------------------------- failures


def test_370_identical_failures_are_one_row_with_their_count() -> None:
    rows = [
        unit(i, strategy, valid=False, error="model produced no plan", seconds=i / 100)
        for strategy in ("formal", "zero-shot")
        for i in range(185)
    ]
    page = page_of(rows)
    (row,) = Tables(page).tables["failures"]
    units, kind, error, strategies, examples = row
    assert (units, kind, error) == ("370", "parse", "model produced no plan")
    assert strategies == "formal (185), zero-shot (185)"
    assert examples == "0: task number 0 / also 1, 2, 3 and 181 more tasks"
    assert "Failures (370 units, 1 distinct error)" in page


def test_different_errors_stay_apart_biggest_first() -> None:
    rows = [unit(i, valid=False, error="step 2: unknown tool") for i in range(3)]
    rows += [unit(i, valid=False, error="model  produced\nno plan") for i in range(3, 10)]
    rows += [unit(10, valid=False, error="model produced no plan"), unit(11)]
    failures = Tables(page_of(rows)).tables["failures"]
    # Messages differing only in white space are one error.
    assert [(r[0], r[2]) for r in failures] == [
        ("8", "model produced no plan"),
        ("3", "step 2: unknown tool"),
    ]
    assert failures[1][4] == "0: task number 0 / also 1, 2"


# ------------------------------------------------------------------------------ F1 without refs


def test_an_empty_f1_says_how_to_get_one() -> None:
    page = page_of([unit(i, seconds=i / 10) for i in range(5)])
    summary = Tables(page).tables["summary"]
    assert summary[0][3] == "–*"  # F1
    assert '<span class="no-reference" title="– in F1 and exact %: no task' in page
    note = re.search(r'<p class="note no-reference">(.*?)</p>', page)
    assert note is not None
    assert "reference plan" in note[1] and "&quot;reference&quot;: [&quot;Image" in note[1]
    scored = page_of([unit(i, seconds=i / 10, f1=1.0) for i in range(5)])
    assert 'class="no-reference"' not in scored and 'class="note no-reference"' not in scored
    assert Tables(scored).tables["summary"][0][3:5] == ["1.000", "100.0"]


@pytest.mark.parametrize("with_reference", [True, False])
def test_the_footnote_marks_only_rows_without_references(with_reference: bool) -> None:
    rows = [unit(i, "formal", f1=0.5 if with_reference else None) for i in range(3)]
    rows += [unit(i, "zero-shot") for i in range(3)]
    summary = Tables(page_of(rows)).tables["summary"]
    assert summary[0][3] == ("0.500" if with_reference else "–*")
    assert summary[1][3] == "–*"

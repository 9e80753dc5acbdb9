"""The HTML bench report in a real browser: headless Chromium draws the plots, logs no error.

Each page is loaded twice: ``--dump-dom`` for what the browser parsed (which plots, the folded
failures, the footnotes) and ``--screenshot`` for what it drew (a full-size, non-blank image
whose plots put ink and colour on the page that the same page without figures lacks).

`make test` installs Debian's chromium package where it can (as root, or with sudo); without a
browser these tests are skipped and say why. The browser runs offline on a local file, with
background networking off, and each page gets its own profile folder.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from bench_helpers import Tables, write_jsonl
from PIL import Image
from tests.conftest import InProc, load_tasks

from fllm_cli.bench.html import COLORS, MARK, render_html

BROWSER = next(
    (p for p in map(shutil.which, ("chromium", "chromium-browser", "google-chrome")) if p), None
)
pytestmark = [
    pytest.mark.skipif(
        BROWSER is None, reason="no Chromium: `make test` installs Debian's chromium when it can"
    ),
    pytest.mark.slow,  # a headless browser starts for each test
]
FLAGS = [
    "--headless=new",
    "--no-sandbox",  # CI runs as root, where Chromium's own sandbox refuses to start
    "--disable-gpu",
    "--disable-dev-shm-usage",
    "--no-first-run",
    "--no-default-browser-check",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--enable-logging=stderr",
    "--v=0",
]
CONSOLE = re.compile(r":CONSOLE[^\]]*\] (.*)")


def open_page(page: Path, profile: Path, *args: str) -> tuple[str, list[str]]:
    """Load ``page``; return what the browser printed and its console messages.

    ``args`` must make the browser exit once the page is loaded (``--dump-dom``,
    ``--screenshot=FILE``); headless Chromium otherwise keeps running.
    """
    assert BROWSER is not None
    done = subprocess.run(
        [BROWSER, *FLAGS, f"--user-data-dir={profile}", *args, page.resolve().as_uri()],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout, CONSOLE.findall(done.stderr)


def pixels(png: Path) -> Any:
    """A screenshot as an (height, width, 3) array of 0-255 values."""
    with Image.open(png) as image:
        return np.asarray(image.convert("RGB"), dtype=np.int16)


def colours(png: Path) -> int:
    """Count the distinct colours of a screenshot (a blank page has one)."""
    with Image.open(png) as image:
        return len(image.convert("RGB").getcolors(maxcolors=1 << 24) or [])


def inked(rgb: Any) -> int:
    """Count the pixels that are not (near) white: text, lines, marks."""
    return int((rgb.min(axis=-1) < 200).sum())


def coloured(rgb: Any) -> int:
    """Count the pixels that are clearly coloured (plot marks, not black or grey text)."""
    return int(((rgb.max(axis=-1) - rgb.min(axis=-1)) > 64).sum())


def near(rgb: Any, colour: str, tolerance: int = 40) -> int:
    """Count the pixels close to a #rrggbb colour."""
    target = np.array([int(colour[i : i + 2], 16) for i in (1, 3, 5)], dtype=np.int16)
    return int((np.abs(rgb - target).max(axis=-1) <= tolerance).sum())


def without_figures(page: Path, tmp_path: Path) -> Path:
    """The same page with its figures cut out, to tell what the plots themselves draw."""
    bare = tmp_path / f"bare-{page.name}"
    text = page.read_text(encoding="utf-8")
    bare.write_text(re.sub(r"<figure\b.*?</figure>", "", text, flags=re.S), encoding="utf-8")
    return bare


def plots_in(dom: str) -> list[str]:
    return re.findall(r'<figure id="plot-([^"]+)">', dom)


SIZE = (1280, 3000)
WINDOW = f"--window-size={SIZE[0]},{SIZE[1]}"


def test_the_console_check_sees_a_broken_page(tmp_path: Path) -> None:
    page = tmp_path / "broken.html"
    page.write_text("<p>x</p><script>console.error('boom'); missing();</script>", "utf-8")
    _, console = open_page(page, tmp_path / "profile", "--dump-dom")
    assert any("boom" in line for line in console)
    assert any("ReferenceError" in line for line in console)


def test_a_free_run_shows_latency_only_and_folds_its_failures(
    openagi: str, tmp_path: Path, fllm_inproc: InProc
) -> None:
    """The newcomer's run: a random model (costs $0), one failure message for every unit."""
    tasks = write_jsonl(tmp_path / "t.jsonl", load_tasks()[::8])  # 24 tasks, several levels
    report = tmp_path / "report.html"
    code, _, err = fllm_inproc(
        "bench", openagi, tasks, "-s", "formal,zero-shot", "-m", "random:1",
        "--format", "html", "-o", str(report),
    )  # fmt: skip
    assert code == 0, err
    dom, console = open_page(report, tmp_path / "p1", "--dump-dom")
    assert console == []
    # Parsed as SVG by the browser, not as text; the only plot that says something is latency.
    assert plots_in(dom) == ["latency"] and dom.count("<svg") == 1
    assert "no cost plot" in dom and "no chart" in dom  # said, not silently missing
    tables = Tables(dom).tables
    (failure,) = tables["failures"]  # every zero-shot unit failed the same way: one row
    assert failure[:4] == ["24", "parse", "model produced no plan", "zero-shot"]
    assert "and 20 more tasks" in failure[4]
    assert [row[3] for row in tables["summary"]] == ["–*", "–*"]  # F1, with its footnote:
    assert 'class="note no-reference"' in dom and "reference plan" in dom

    shot = tmp_path / "shot.png"
    _, console = open_page(report, tmp_path / "p2", WINDOW, f"--screenshot={shot}")
    assert console == []
    rgb = pixels(shot)
    assert rgb.shape == (SIZE[1], SIZE[0], 3)
    assert colours(shot) > 100  # text and plot, antialiased: far from a blank page
    bare = tmp_path / "bare.png"
    open_page(without_figures(report, tmp_path), tmp_path / "p3", WINDOW, f"--screenshot={bare}")
    # The latency plot draws ink of its own: boxes, whiskers, ticks and labels.
    assert inked(rgb) > inked(pixels(bare)) + 5_000, (inked(rgb), inked(pixels(bare)))


def test_a_run_with_costs_levels_and_a_stuck_unit_draws_every_plot(tmp_path: Path) -> None:
    rows = []
    for s, strategy in enumerate(("formal", "zero-shot")):
        for i in range(60):
            level = ("easy", "medium", "hard")[i % 3]
            valid = (i % 3) < (2 - s) or i % 5 == 0  # shares change with the level
            seconds = 0.2 + 0.01 * (i % 17) + s * 0.3
            rows.append({
                "id": i, "strategy": strategy, "task": f"task {i}", "level": level,
                "valid": valid, "error": None if valid else "no plan", "error_kind": "parse",
                "stats": {"seconds": 45.0 if (s, i) == (0, 7) else seconds,
                          "cost_usd": 0.0004 + 0.00001 * (i % 13)},
            })  # fmt: skip
    page = tmp_path / "report.html"
    doc = {"domain": "openagi", "model": "gpt", "strategies": ["formal", "zero-shot"]}
    page.write_text(render_html({**doc, "results": rows}), encoding="utf-8")
    dom, console = open_page(page, tmp_path / "p1", "--dump-dom")
    assert console == []
    assert plots_in(dom) == ["latency", "cost", "levels"] and dom.count("<svg") == 3
    assert "The axis stops at" in dom
    shot, bare = tmp_path / "shot.png", tmp_path / "bare.png"
    _, console = open_page(page, tmp_path / "p2", WINDOW, f"--screenshot={shot}")
    assert console == []
    open_page(without_figures(page, tmp_path), tmp_path / "p3", WINDOW, f"--screenshot={bare}")
    drawn, without = pixels(shot), pixels(bare)
    # The level chart's bars are drawn in colour; the page without figures has almost none.
    assert coloured(drawn) > 20 * max(coloured(without), 100), (coloured(drawn), coloured(without))
    assert near(drawn, COLORS[0]) > 2_000 and near(drawn, COLORS[1]) > 2_000  # both strategies
    # The 45 s unit is marked above the clipped latency axis, in its own colour.
    assert near(drawn, MARK) > 30 and near(without, MARK) == 0

"""The HTML bench report in a real browser: headless Chromium draws every plot, logs no error.

`make test` installs Debian's chromium package where it can (as root, or with sudo); without a
browser these tests are skipped and say why. The browser runs offline on a local file, with
background networking off, and each page gets its own profile folder.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest
from bench_helpers import TASKS, write_jsonl
from matplotlib.image import imread
from tests.conftest import InProc

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


def coloured(png: Path) -> int:
    """Count the pixels of a screenshot that are clearly coloured (plot marks, not text)."""
    rgb = imread(str(png))[..., :3]
    return int(((rgb.max(axis=-1) - rgb.min(axis=-1)) > 0.25).sum())


def test_the_console_check_sees_a_broken_page(tmp_path: Path) -> None:
    page = tmp_path / "broken.html"
    page.write_text("<p>x</p><script>console.error('boom'); missing();</script>", "utf-8")
    _, console = open_page(page, tmp_path / "profile", "--dump-dom")
    assert any("boom" in line for line in console)
    assert any("ReferenceError" in line for line in console)


def test_the_report_renders_its_plots_without_console_errors(
    openagi: str, tmp_path: Path, fllm_inproc: InProc
) -> None:
    tasks = write_jsonl(tmp_path / "t.jsonl", TASKS)
    report = tmp_path / "report.html"
    code, _, err = fllm_inproc(
        "bench", openagi, tasks, "-s", "formal,zero-shot", "-m", "random:1",
        "--format", "html", "-o", str(report),
    )  # fmt: skip
    assert code == 0, err
    dom, console = open_page(report, tmp_path / "p1", "--dump-dom")
    assert console == []
    assert dom.count("<svg") == 5 and dom.count("<figure") == 5  # parsed as SVG, not text
    shot, size = tmp_path / "shot.png", "--window-size=1280,3000"
    _, console = open_page(report, tmp_path / "p2", size, f"--screenshot={shot}")
    assert console == []
    # The plots are drawn: the page without its figures has (almost) no coloured pixels.
    bare = tmp_path / "bare.html"
    text = report.read_text(encoding="utf-8")
    bare.write_text(re.sub(r"<figure>.*?</figure>", "", text, flags=re.S), encoding="utf-8")
    bare_shot = tmp_path / "bare.png"
    open_page(bare, tmp_path / "p3", size, f"--screenshot={bare_shot}")
    drawn, without = coloured(shot), coloured(bare_shot)
    assert drawn > 20 * max(without, 100), (drawn, without)
    assert np.asarray(imread(str(shot))).shape[:2] == (3000, 1280)

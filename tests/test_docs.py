"""The documentation site builds without a warning, and no page is left out of it.

`make docs` (run by `make test`) builds the same site; this test keeps the check in pytest too,
so a broken link or anchor fails a plain `pytest` run. mkdocs.yml's `validation` section turns
unknown links and anchors into warnings, and `--strict` turns warnings into errors.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests.conftest import ROOT

DOCS = ROOT / "docs"
CONFIG = ROOT / "mkdocs.yml"


def _nav_pages(nav: object) -> list[str]:
    """Every page file named in a (nested) mkdocs nav."""
    if isinstance(nav, str):
        return [nav]
    if isinstance(nav, list):
        return [page for item in nav for page in _nav_pages(item)]
    if isinstance(nav, dict):
        return [page for value in nav.values() for page in _nav_pages(value)]
    return []


def test_every_docs_page_is_in_the_nav() -> None:
    config = yaml.safe_load(CONFIG.read_text(encoding="utf-8"))
    in_nav = set(_nav_pages(config["nav"]))
    pages = {p.relative_to(DOCS).as_posix() for p in DOCS.rglob("*.md")}
    assert pages - in_nav == set(), "pages missing from the nav of mkdocs.yml"
    assert in_nav - pages == set(), "nav entries with no page"


def test_the_site_builds_strict_without_warnings(tmp_path: Path) -> None:
    pytest.importorskip("mkdocs")
    proc = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--config-file", str(CONFIG),
         "--site-dir", str(tmp_path / "site")],
        cwd=ROOT, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    printed = proc.stdout + proc.stderr
    assert proc.returncode == 0, printed
    assert "WARNING" not in printed, printed
    assert (tmp_path / "site" / "index.html").is_file()


def test_readme_links_to_docs_pages_that_exist() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    targets = re.findall(r"\]\((docs/[^)#]+)", readme)
    assert targets
    assert [t for t in targets if not (ROOT / t).is_file()] == []

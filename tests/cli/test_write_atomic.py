"""Output files (reports, plans, traces) get the permissions any new file gets, and are whole.

Every output file of fllm goes through ``write_atomic``; it once made them all 0600 (the mode
of ``tempfile.mkstemp``), so a report could not be served or read by a teammate.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from fllm_cli.cli.common import write_atomic
from fllm_cli.errors import UsageError
from tests.conftest import ROOT, run_fllm

OPENAGI = str(ROOT / "domains" / "openagi.yaml")
TASKS = str(ROOT / "tests" / "data" / "openagi_tasks.jsonl")


@contextmanager
def umask(mask: int) -> Iterator[None]:
    old = os.umask(mask)
    try:
        yield
    finally:
        os.umask(old)


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


@pytest.mark.parametrize(("mask", "expected"), [(0o022, 0o644), (0o077, 0o600), (0o002, 0o664)])
def test_a_new_file_follows_the_umask(tmp_path: Path, mask: int, expected: int) -> None:
    out = tmp_path / "report.html"
    with umask(mask):
        write_atomic(out, "<p>hi</p>\n")
    assert out.read_text(encoding="utf-8") == "<p>hi</p>\n"
    assert mode(out) == expected
    assert sorted(p.name for p in tmp_path.iterdir()) == ["report.html"]  # no temporary left


def test_a_replaced_file_keeps_its_permissions(tmp_path: Path) -> None:
    out = tmp_path / "plan.json"
    out.write_text("old\n", encoding="utf-8")
    out.chmod(0o640)
    with umask(0o022):
        write_atomic(out, "new\n")
    assert out.read_text(encoding="utf-8") == "new\n" and mode(out) == 0o640


def test_a_failed_write_leaves_the_old_file_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = tmp_path / "report.json"
    out.write_text("kept\n", encoding="utf-8")
    with pytest.raises(UnicodeEncodeError):
        write_atomic(out, "\udcff not encodable")  # fails while the temporary is written
    assert out.read_text(encoding="utf-8") == "kept\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["report.json"]

    def full_disk(_src: object, _dst: object) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", full_disk)
    with pytest.raises(UsageError, match=r"cannot write .*No space left on device"):
        write_atomic(out, "new\n")
    assert out.read_text(encoding="utf-8") == "kept\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["report.json"]


def test_the_cli_writes_the_bench_report_readable(tmp_path: Path) -> None:
    out = tmp_path / "r.html"
    with umask(0o022):  # the child process inherits it
        code, _, err = run_fllm(
            "bench", OPENAGI, TASKS, "-m", "random:1", "--limit", "3",
            "--format", "html", "-o", str(out),
        )  # fmt: skip
    assert code == 0, err
    assert mode(out) == 0o644

"""Each broken spec in ``broken/`` yields exactly the diagnostics listed in its ``.expected``."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.core.cli_helpers import run_cli

BROKEN = Path(__file__).resolve().parent / "broken"
SPECS = sorted(p.name for p in BROKEN.glob("*.yaml"))
DIAGNOSTIC = re.compile(r"^\S.*?: (error|warning): ")


def diagnostic_lines(output: str) -> list[str]:
    """Return the ``path:line:col: severity: message`` lines of ``fllm validate`` output."""
    return [line for line in output.splitlines() if DIAGNOSTIC.match(line)]


def test_there_are_enough_broken_specs() -> None:
    assert len(SPECS) >= 12
    assert all((BROKEN / name).with_suffix(".expected").exists() for name in SPECS)


@pytest.mark.parametrize("name", SPECS)
def test_broken_spec_diagnostics(
    name: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(BROKEN)
    expected = (BROKEN / name).with_suffix(".expected").read_text(encoding="utf-8").splitlines()
    result = run_cli(capsys, monkeypatch, ["validate", name])
    assert diagnostic_lines(result.out) == expected
    has_error = any(": error: " in line for line in expected)
    assert result.code == (1 if has_error else 0)
    verdict = "invalid" if has_error else "ok"
    assert f"{name}: {verdict} — " in result.out
    # Every located diagnostic is followed by its source line and a caret.
    if expected and re.match(r"^\S+:\d+:\d+: ", expected[0]):
        lines = result.out.splitlines()
        first = lines.index(expected[0])
        assert lines[first + 2].strip() == "^"


def test_all_broken_specs_at_once_never_crash() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "fllm_cli", "validate", *SPECS],
        cwd=BROKEN,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 1
    assert "Traceback" not in proc.stdout + proc.stderr
    expected = []
    for name in SPECS:
        expected += (BROKEN / name).with_suffix(".expected").read_text().splitlines()
    assert diagnostic_lines(proc.stdout) == expected


def test_valid_specs_validate_cleanly(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    anbn = str(Path(__file__).resolve().parent / "specs" / "anbn.yaml")
    result = run_cli(capsys, monkeypatch, ["validate", "domains/openagi.yaml", anbn])
    assert result.code == 0
    assert diagnostic_lines(result.out) == []
    assert "domains/openagi.yaml: ok — tool domain 'openagi': 15 tools, 2 modalities" in result.out
    assert "grammar domain 'anbn': 2 productions, 2 terminals" in result.out
    quiet = run_cli(capsys, monkeypatch, ["validate", "-q", anbn])
    assert quiet.code == 0 and quiet.out == ""


def test_missing_spec_file(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.chdir(tmp_path)
    result = run_cli(capsys, monkeypatch, ["validate", "nope.yaml"])
    # A file that cannot be read is a misuse of the command, not an invalid spec.
    assert result.code == 2
    assert result.err.strip() == "error: no such spec file: 'nope.yaml'"

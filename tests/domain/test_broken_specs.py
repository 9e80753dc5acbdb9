"""Each spec in ``tests/data/broken/`` yields exactly the diagnostics in its ``.expected``."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.conftest import BROKEN, InProc, run_fllm
from tests.conftest import SPECS as VALID

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
    name: str, fllm_inproc: InProc, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(BROKEN)
    expected = (BROKEN / name).with_suffix(".expected").read_text(encoding="utf-8").splitlines()
    result = fllm_inproc("validate", name)
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


def test_all_broken_specs_at_once_never_crash(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(BROKEN)
    code, out, err = run_fllm("validate", *SPECS, timeout=120)
    assert code == 1
    assert "Traceback" not in out + err
    expected = []
    for name in SPECS:
        expected += (BROKEN / name).with_suffix(".expected").read_text().splitlines()
    assert diagnostic_lines(out) == expected


def test_valid_specs_validate_cleanly(fllm_inproc: InProc) -> None:
    anbn = str(VALID / "anbn.yaml")
    result = fllm_inproc("validate", "domains/openagi.yaml", anbn)
    assert result.code == 0
    assert diagnostic_lines(result.out) == []
    assert "domains/openagi.yaml: ok — tool domain 'openagi': 15 tools, 2 modalities" in result.out
    assert "grammar domain 'anbn': 2 productions, 2 terminals" in result.out
    quiet = fllm_inproc("validate", "-q", anbn)
    assert quiet.code == 0 and quiet.out == ""


def test_missing_spec_file(
    fllm_inproc: InProc, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.chdir(tmp_path)
    result = fllm_inproc("validate", "nope.yaml")
    # A file that cannot be read is a misuse of the command, not an invalid spec.
    assert result.code == 2
    assert result.err.strip() == "error: no such spec file: 'nope.yaml'"

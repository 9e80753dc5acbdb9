"""Every reference plan of the held-out planning sets (bench/heldout) is a valid plan for its
request's interface, so plan-quality figures are measured against plans fllm accepts."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from fllm_cli import api
from tests.conftest import bench_script

ROOT = Path(__file__).resolve().parents[1]
HELDOUT = ROOT / "bench" / "heldout"


def _sets() -> list[tuple[Path, Path]]:
    found = [(p, ROOT / "domains" / "openagi.yaml") for p in HELDOUT.glob("openagi_*.jsonl")]
    for path in HELDOUT.glob("*_requests.jsonl"):
        found.append(
            (path, HELDOUT / "domains" / f"{path.name.removesuffix('_requests.jsonl')}.yaml")
        )
    return sorted(found)


def test_the_held_out_sets_are_there() -> None:
    names = {path.name for path, _ in _sets()}
    assert {"openagi_everyday.jsonl", "audio_production_requests.jsonl"} <= names
    assert len(names) >= 6


@pytest.mark.parametrize(("requests", "domain"), _sets(), ids=lambda p: Path(p).stem)
def test_every_reference_plan_is_valid(requests: Path, domain: Path) -> None:
    rows = [json.loads(line) for line in requests.read_text().splitlines() if line.strip()]
    assert rows
    for row in rows:
        inputs = [f"{name}={kind}" for name, kind in row["inputs"].items()]
        _, verdict = api.verify_plan(domain, row["plan"], inputs=inputs, output=row["output"])
        assert verdict.valid, (row["id"], verdict)
        used = {w.removeprefix("input:") for w in row["plan"] if w.startswith("input:")}
        assert used == set(row["inputs"]), row["id"]  # every provided input is read


def _plan_quality():  # the bench script, imported as the bench runs it
    return bench_script("plan_quality")


def test_every_held_out_set_is_in_exactly_one_split() -> None:
    """A new set must be declared dev, validation or test before its figures mean anything."""
    pq = _plan_quality()
    sets = set(pq.request_sets()) - {"openagi-train"}
    declared = [name for names in pq.SPLITS.values() for name in names]
    assert sorted(declared) == sorted(set(declared))  # no set in two splits
    assert set(declared) == sets
    assert {pq.split_of(name) for name in sets} == set(pq.SPLITS)
    assert pq.split_of("a-set-nobody-declared") == "unsplit"


def test_split_means_average_their_sets_and_skip_incomplete_splits() -> None:
    pq = _plan_quality()
    report: dict[str, object] = {
        name: {"f1": 0.5 + 0.1 * i, "interface_right": 0.2 * i, "output_right": 0.3}
        for i, name in enumerate(pq.SPLITS["validation"])
    }
    means = pq.split_means(report)
    n = len(pq.SPLITS["validation"])
    assert set(means) == {"validation"}  # dev and test are not all there
    assert means["validation"]["f1"] == round(0.5 + 0.1 * (n - 1) / 2, 3)
    assert means["validation"]["interface_right"] == round(0.2 * (n - 1) / 2, 3)
    # the interface's halves: an older report without them reads as 0, not as an error
    assert means["validation"]["output_right"] == 0.3
    assert means["validation"]["inputs_right"] == 0


def test_a_run_of_some_sets_updates_the_stored_report(tmp_path: Path) -> None:
    """`--set` runs merge into the stored figures; a full run replaces them."""
    pq = _plan_quality()
    path = tmp_path / "results.json"
    names = pq.SPLITS["validation"]
    full = {n: {"f1": 0.5, "interface_right": 0.5} for n in names} | {"model": "m"}
    pq.record(path, "m|s", full, partial=False)
    pq.record(path, "m|s", {names[0]: {"f1": 1.0, "interface_right": 1.0}}, partial=True)
    stored = json.loads(path.read_text())["m|s"]
    assert stored[names[0]]["f1"] == 1.0 and stored[names[-1]]["f1"] == 0.5
    assert stored["model"] == "m"
    assert stored["splits"]["validation"]["f1"] == round(0.5 + 0.5 / len(names), 3)
    pq.record(path, "m|s", {names[0]: {"f1": 0.0, "interface_right": 0.0}}, partial=False)
    assert set(json.loads(path.read_text())["m|s"]) == {names[0]}


def test_every_synthetic_training_request_is_valid() -> None:
    """The training material of the learned reader (bench/synthetic) holds only plans fllm
    accepts, in domains apart from every measured set."""
    import importlib.util

    synthetic = ROOT / "bench" / "synthetic"
    spec = importlib.util.spec_from_file_location("synthetic_check", synthetic / "check.py")
    assert spec is not None and spec.loader is not None
    check = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(check)
    files = sorted(synthetic.glob("*_requests.jsonl"))
    assert len(files) == 220
    assert [p for path in files for p in check.check(path)] == []
    measured = {path.name.removesuffix("_requests.jsonl") for path, _ in _sets()}
    assert not measured & {path.name.removesuffix("_requests.jsonl") for path in files}


def test_measure_counts_the_interfaces_halves_apart(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each request's interface is scored as a whole and by its halves: a plan that gives the
    right inputs but another output counts for inputs_right only."""
    pq = _plan_quality()
    plan = {"word": ["Fault Finder", "input:a"], "inputs": {"a": "complaint"},
            "output": "diagnosis", "stats": {"llm_calls": 0}}  # fmt: skip
    monkeypatch.setattr(pq.api, "plan_task", lambda *a, **k: type("R", (), {"document": plan})())
    row = {"task": "t", "inputs": {"x": "complaint"}, "output": "diagnosis",
           "plan": ["Fault Finder", "input:x"]}  # fmt: skip
    rows = [row, {**row, "output": "repair plan"}, {**row, "inputs": {"x": "photo"}}]
    got = pq.measure(Path("unused.yaml"), rows, None, "meaning", quiet=True)
    assert (got["interface_right"], got["inputs_right"], got["output_right"]) == (
        round(1 / 3, 3), round(2 / 3, 3), round(2 / 3, 3),
    )  # fmt: skip

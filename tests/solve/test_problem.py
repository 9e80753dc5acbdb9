"""Problem files: shipped ones are valid and agree with the shared data; errors are located."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
import yaml

from fllm_cli.errors import SpecError
from fllm_cli.solve import is_problem_spec, load_problem, validate_problem_spec
from fllm_cli.solve.schema import check_formulation, validate

PROBLEMS = Path(__file__).resolve().parents[2] / "domains" / "problems"
NAMES = [
    "coffee",
    "workforce",
    "facility",
    "task_allocation",
    "warehouse",
    "blocksworld",
    "mystery_blocksworld",
    "movie",
    "gripper",
]


@pytest.mark.parametrize("name", NAMES)
def test_shipped_problems_are_valid(name: str) -> None:
    path = PROBLEMS / f"{name}.yaml"
    assert is_problem_spec(path) and validate_problem_spec(str(path)) == []
    problem = load_problem(path)
    assert problem.benchmark and Path(problem.benchmark).exists()


def test_data_matches_base_data() -> None:
    base = yaml.safe_load((PROBLEMS / "data" / "base_data.yaml").read_text())
    for name, key in (
        ("coffee", "capacity_in_supplier"),
        ("workforce", "availability"),
        ("facility", "transCosts"),
        ("workforce", "worker_pay"),
    ):
        namespace: dict = {}
        exec(load_problem(PROBLEMS / f"{name}.yaml").data, namespace)
        assert namespace[key] == base[name][key]
    namespace = {}
    exec(load_problem(PROBLEMS / "coffee.yaml").data, namespace)
    pairs = {(a, b): c for a, b, c in base["coffee"]["shipping_cost_from_supplier_to_roastery"]}
    assert namespace["shipping_cost_from_supplier_to_roastery"] == pairs


def test_errors_are_collected_with_locations(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text(
        "problem:\n  name: x\n  kind: multi-constrant\n  description: d\n"
        "  data: |\n    a = (\n  objectiv: 1\n"
    )
    diagnostics = validate_problem_spec(str(bad))
    text = "\n".join(d.header() for d in diagnostics)
    assert "bad.yaml:3:9: error: kind must be one of" in text
    assert "Python syntax error" in text and "did you mean 'objective'" in text
    with pytest.raises(SpecError):
        load_problem(bad)


def test_not_a_problem_file(tmp_path: Path) -> None:
    other = tmp_path / "d.yaml"
    other.write_text("domain: x\n")
    assert not is_problem_spec(other)
    assert validate_problem_spec(str(tmp_path / "missing.yaml"))[0].message.startswith("no such")


def test_schema_validator_reports_paths() -> None:
    schema = {
        "type": "object",
        "required": ["a"],
        "properties": {"a": {"type": "integer"}},
        "additionalProperties": False,
    }
    assert validate({"a": "x", "b": 1}, schema) == [
        "$.a: expected integer, got string",
        "$.b: unexpected field (allowed: a)",
    ]
    assert validate({"a": True}, schema) == ["$.a: expected integer, got boolean"]
    _, errors = check_formulation('{"objects": {}, "predicates": 1}', multi_step=True)
    assert "$: missing required field 'actions'" in errors
    _, errors = check_formulation("no json here", multi_step=False)
    assert errors == ["the reply contains no JSON object"]
    value, errors = check_formulation(
        '```json\n{"v": {"name": "x", "SMT_variable": true, '
        '"number_of_variables": 1, "data_source": null, '
        '"value": 1, "specific_requirement": null,}}\n```',
        False,
    )
    assert errors == [] and value["v"]["name"] == "x"
    assert ast.parse("x = 1")


def test_a_horizon_beyond_the_limit_is_a_located_error(tmp_path: Path) -> None:
    root = Path(__file__).resolve().parents[2] / "domains" / "problems"
    text = (root / "blocksworld.yaml").read_text(encoding="utf-8")
    spec = tmp_path / "bw.yaml"
    spec.write_text(text.replace("horizon: {max: 16}", "horizon: {max: 1000000000}"))
    for data in ("data", "helpers"):
        if (root / data).exists():
            (tmp_path / data).symlink_to(root / data)
    diagnostics = validate_problem_spec(str(spec))
    assert any("above fllm's limit of 1000" in d.message for d in diagnostics)

"""fllm import-tools: OpenAI-style tool lists become tool domains that validate."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from fllm_cli import api
from fllm_cli.errors import UsageError
from fllm_cli.toolset import read_tool_list, write_bindings, write_domain
from fllm_cli.toolset.importer import modality_of
from tests.conftest import run_fllm

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "domains" / "examples" / "textbox_tools.json"


def _fn(name: str, params: dict, required: list[str], **extra: object) -> dict:
    return {
        "type": "function",
        "function": {
            "name": name,
            "description": f"does {name}",
            "parameters": {"type": "object", "properties": params, "required": required},
            **extra,
        },
    }


@pytest.mark.parametrize(
    ("schema", "kind"),
    [
        ({"type": "string"}, "text"),
        ({"type": "string", "format": "uri"}, "url"),
        ({"type": "string", "format": "date"}, "date"),
        ({"type": "string", "contentMediaType": "image/png"}, "image"),
        ({"type": "integer"}, "number"),
        ({"type": ["number", "null"]}, "number"),
        ({"type": "boolean"}, "boolean"),
        ({"type": "array", "items": {"type": "string"}}, "list"),
        ({"type": "object"}, "json"),
        ({"oneOf": [{"type": "string"}, {"type": "integer"}]}, "json"),
        ({"type": "string", "x-fllm-type": "city"}, "city"),
    ],
)
def test_json_schema_types_become_types(schema: dict, kind: str) -> None:
    assert modality_of(schema)[0] == kind


@pytest.mark.slow
def test_inputs_settings_output_and_every_decision_are_written(tmp_path: Path) -> None:
    tools = [
        _fn(
            "weather",
            {
                "city": {"type": "string", "x-fllm-type": "city"},
                "when": {"type": "string", "format": "date"},
                "units": {"type": "string", "enum": ["c", "f"], "default": "c"},
                "verbose": {"type": "boolean"},
            },
            ["city", "when", "units"],
            **{"x-fllm-output": "forecast"},
        ),
        {"name": "geocode", "description": "place to city",  # the bare function form
         "parameters": {"type": "object", "properties": {"place": {"type": "string"}},
                        "required": ["place"]}},
        {"name": "now", "parameters": {"type": "object", "properties": {}}},  # no input
        {"name": "weather", "parameters": {}},  # a second one of that name
        {"nope": 1},
    ]  # fmt: skip
    report = read_tool_list(tools, "t.json", {"tools": {"geocode": {"output": "city"}}})
    weather, geocode = report.tools
    assert weather.inputs == [("city", "city"), ("when", "date")]
    assert weather.settings == {"units": "c", "verbose": None}
    assert (weather.output, geocode.output) == ("forecast", "city")
    assert len(report.skipped) == 3
    text = write_domain(report, "weather", "t.json")
    assert "#   units: one of fixed values, a setting (not planned)" in text
    assert "#   verbose: optional, a setting (not planned)" in text
    assert "#   returns forecast (x-fllm-output)" in text
    assert "# not imported: now: no parameter the planner can feed" in text
    spec = tmp_path / "weather.yaml"
    spec.write_text(text, encoding="utf-8")
    diagnostics, _ = api.diagnose_domain(str(spec))
    assert [d for d in diagnostics if d.severity == "error"] == []
    # geocode's city feeds weather's city: the planner chains them
    doc = api.plan_task(
        str(spec), "weather for a place", "random:1", inputs=["place=text", "when=date"],
        output="forecast",
    ).document  # fmt: skip
    assert [s["tool"] for s in doc["steps"]] == ["geocode", "weather"]
    bindings = write_bindings(report, str(spec), None)
    assert 'args: ["city", "when"]' in bindings and '{"units": "c"}' in bindings


def test_unread_constructs_are_reported_not_dropped() -> None:
    tools = [_fn("f", {"x": {"anyOf": [{"type": "string"}]}, "y": {"$ref": "#/defs/y"}},
                 ["x", "y", "z"])]  # fmt: skip
    report = read_tool_list(tools, "t.json")
    (tool,) = report.tools
    assert tool.inputs == [("x", "json"), ("y", "json"), ("z", "json")]
    assert any("anyOf not read" in p for p in report.problems)
    assert any("$ref not read" in p for p in report.problems)
    assert any("without a schema: ['z']" in p for p in report.problems)


@pytest.mark.parametrize(
    ("doc", "needle"),
    [
        ({"tools": 3}, "expected a list of tools"),
        ([{"nope": 1}], "no tool could be imported"),
        ([_fn("f", {"x": {"type": "string", "x-fllm-type": "Bad Type"}}, ["x"])], "type name"),
    ],
)
def test_bad_tool_lists_are_one_line_errors(doc: object, needle: str) -> None:
    with pytest.raises(UsageError, match=needle):
        read_tool_list(doc, "t.json")


def test_hostile_names_and_descriptions_stay_data(tmp_path: Path) -> None:
    """Quotes, line breaks and YAML syntax in names and descriptions cannot add YAML."""
    evil = 'x"\n  - name: injected\nfllm: 2 # {{ 7*7 }}'
    tools = [_fn(evil, {"t": {"type": "string", "description": evil}}, ["t"])]
    tools[0]["function"]["description"] = evil
    report = read_tool_list(tools, "t.json")
    spec = tmp_path / "evil.yaml"
    spec.write_text(write_domain(report, "evil", evil), encoding="utf-8")
    domain = api.load_domain(str(spec))
    assert [t.name for t in domain.tools] == [evil]


@pytest.mark.slow
def test_the_command_writes_a_domain_that_validates(tmp_path: Path) -> None:
    out, bind = tmp_path / "textbox.yaml", tmp_path / "textbox.bind.yaml"
    code, stdout, err = run_fllm(
        "import-tools", str(EXAMPLE), "-o", str(out), "--bindings", str(bind)
    )
    assert code == 0, err
    assert "7 tool(s), 3 type(s); it validates" in stdout
    assert run_fllm("validate", str(out)).code == 0
    # the shipped example is this importer's output (the source's path aside)

    def body(text: str) -> list[str]:
        return [line for line in text.splitlines() if "textbox_tools.json" not in line]

    assert body(out.read_text()) == body((ROOT / "domains/examples/textbox.yaml").read_text())
    code, _, err = run_fllm("import-tools", str(tmp_path / "missing.json"), "-o", str(out))
    assert code == 2 and "missing.json" in err
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"tools": "x"}))
    code, _, err = run_fllm("import-tools", str(bad), "-o", str(tmp_path / "x.yaml"))
    assert code == 2 and err.startswith("error: ") and "expected a list of tools" in err

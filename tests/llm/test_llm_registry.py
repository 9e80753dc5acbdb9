"""The back-end table: one parser of model strings, plugins, and help made from the table."""

from __future__ import annotations

import ast
import json
from importlib.metadata import EntryPoint
from pathlib import Path

import pytest
from tests.fake_backends import Priced, install_priced

from fllm_cli.errors import UsageError
from fllm_cli.llm import registry
from fllm_cli.llm.registry import BUILTINS, make_model, model_help, parse_model_spec
from fllm_cli.llm.simple import RandomModel


@pytest.mark.parametrize(
    ("spec", "parsed"),
    [
        ("local", ("local", "")),
        ("local:m.gguf", ("local", "m.gguf")),
        ("random:3", ("random", "3")),
        ("scripted:a.txt", ("scripted", "a.txt")),
        ("replay:t.jsonl", ("replay", "t.jsonl")),
        ("gpt-4o", ("litellm", "gpt-4o")),
        ("ollama/llama3:8b", ("litellm", "ollama/llama3:8b")),
        ("ft:gpt-4o-mini:org::abc", ("litellm", "ft:gpt-4o-mini:org::abc")),
        ("litellm:gpt-4o", ("litellm", "gpt-4o")),
    ],
)
def test_one_parser_of_model_strings(spec: str, parsed: tuple[str, str]) -> None:
    assert parse_model_spec(spec) == parsed


def test_unset_model_reads_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FLLM_MODEL", "random:9")
    assert parse_model_spec(None) == ("random", "9")
    monkeypatch.delenv("FLLM_MODEL")
    assert parse_model_spec(None) == ("local", "")


def test_unknown_prefix_with_a_colon_is_a_clear_error() -> None:
    with pytest.raises(UsageError) as info:
        parse_model_spec("scriptd:answers.txt")
    line = info.value.one_line()
    assert "unknown model back end 'scriptd'" in line
    assert "did you mean 'scripted'" in line
    assert "replay" in line and "provider/model" in line


def test_a_plugin_back_end_is_found_and_listed(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    install_priced(monkeypatch)
    trace = tmp_path / "t.jsonl"
    trace.write_text(json.dumps({"type": "generate", "reply": "hi"}) + "\n")
    model = make_model(f"priced:{trace}")
    assert isinstance(model, Priced)
    assert parse_model_spec("priced:x") == ("priced", "x")
    assert "priced[:ARG]" in model_help()


def test_built_ins_win_over_a_plugin_of_the_same_name(monkeypatch: pytest.MonkeyPatch) -> None:
    point = EntryPoint(name="random", value="tests.fake_backends:priced", group="fllm.models")
    monkeypatch.setattr(registry, "entry_points", lambda **_: [point])
    assert isinstance(make_model("random:1"), RandomModel)


def test_a_broken_plugin_is_a_usage_error(monkeypatch: pytest.MonkeyPatch) -> None:
    point = EntryPoint(name="broken", value="no_such_module_x:f", group="fllm.models")
    monkeypatch.setattr(registry, "entry_points", lambda **_: [point])
    with pytest.raises(UsageError, match="cannot load model back end 'broken'"):
        make_model("broken:1")


def test_help_lists_every_prefix(monkeypatch: pytest.MonkeyPatch) -> None:
    from fllm_cli.cli.options import MODEL_HELP

    for backend in BUILTINS:
        assert backend.usage in MODEL_HELP
    install_priced(monkeypatch)
    text = model_help()
    for prefix in registry.backends():
        assert prefix in text


def test_no_back_end_imports_the_registry() -> None:
    # The registry loads back ends by name; a back end importing it would close a cycle.
    package = Path(registry.__file__).parent
    for path in package.glob("*.py"):
        if path.name in ("registry.py", "__init__.py"):
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom):
                assert node.module != "fllm_cli.llm.registry", path.name
                assert node.module != "fllm_cli.llm" or all(
                    a.name != "registry" for a in node.names
                ), path.name

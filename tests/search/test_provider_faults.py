"""`fllm plan` against a misbehaving OpenAI-compatible server (``tests/stub_server.py``)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import run_fllm
from tests.stub_server import StubServer

TASK = "Given noisy grayscale image, how to return the caption in German step by step?"


def plan(stub: StubServer, openagi: str, *extra: str) -> tuple[int, str, str]:
    return run_fllm(
        "plan",
        openagi,
        TASK,
        "--search",
        "greedy",  # the model is asked at every choice point
        "--input",
        "image",
        "--output",
        "text",
        "--model",
        "openai/stub",
        "--api-base",
        stub.base,
        "--no-cache",
        "--retries",
        "2",
        "--timeout",
        "5",
        "-f",
        "json",
        *extra,
        env={"OPENAI_API_KEY": "sk-test"},
    )


@pytest.mark.slow
def test_rate_limits_and_5xx_are_retried(
    stub_server: StubServer, openagi: str, tmp_path: Path
) -> None:
    stub_server.play("429", "500", "ok:2", then="ok:1")
    code, stdout, err = plan(stub_server, openagi)
    assert code == 0, err
    doc = json.loads(stdout)
    assert doc["word"][0] == "Image Captioning"  # option 2 at the root, after two failures
    assert doc["stats"]["llm_calls"] >= 3
    assert doc["stats"]["prompt_tokens"] > 0


@pytest.mark.slow
def test_persistent_failure_is_one_clean_line(stub_server: StubServer, openagi: str) -> None:
    stub_server.play(then="500")
    code, stdout, err = plan(stub_server, openagi)
    assert code == 1
    assert stdout == ""
    assert "Traceback" not in err
    assert len(err.strip().splitlines()) == 1
    assert "gave up after 3 attempts" in err


@pytest.mark.slow
def test_nonsense_replies_are_not_presented_as_the_models_plan(
    stub_server: StubServer, openagi: str, tmp_path: Path
) -> None:
    """Every reply is nonsense: by default the run fails (exit 1) and writes no plan; with
    --allow-fallbacks the plan of defaults is still valid."""
    stub_server.play("ok:I am not sure.", "ok:", then="ok:banana 42")
    out = tmp_path / "plan.json"
    code, _, err = plan(stub_server, openagi, "-o", str(out))
    assert code == 1 and err.startswith("error: the model's replies could not be read: ")
    assert len(err.strip().splitlines()) == 1 and not out.exists()
    code, _, err = plan(stub_server, openagi, "-o", str(out), "--allow-fallbacks")
    assert code == 0, err
    doc = json.loads(out.read_text())
    assert doc["stats"]["fallbacks"] == doc["stats"]["choice_points"]
    assert run_fllm("verify", openagi, str(out), timeout=60).code == 0


@pytest.mark.slow
@pytest.mark.parametrize(
    ("status", "hint"),
    [("401", "API key"), ("404", "model name"), ("400", "refused the request")],
)
def test_client_errors_fail_at_once_with_a_hint(
    stub_server: StubServer, openagi: str, status: str, hint: str
) -> None:
    stub_server.play(then=status)
    code, stdout, err = plan(stub_server, openagi)
    assert code == 1 and stdout == ""
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1
    assert hint in err
    assert stub_server.hits == 1  # not retried: retrying cannot fix a bad key or model name

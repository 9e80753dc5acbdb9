"""LiteLLMModel against the fault-injecting OpenAI-compatible stub (``tests/stub_server.py``).

Each request takes the next scripted behaviour: 429, 500, a reply slower than the timeout,
malformed JSON, empty choices, or a normal reply. Backoff is shrunk so the tests stay quick.
"""

from __future__ import annotations

from typing import Any

import pytest
from tests.stub_server import StubServer

from fllm_cli.errors import BackendError
from fllm_cli.llm import ChoiceRequest, GenerateRequest
from fllm_cli.llm.litellm_backend import LiteLLMModel
from fllm_cli.llm.registry import ModelOptions

OPTIONS = ("Image Denoising", "Colorization", "Image Captioning")
REQUEST = ChoiceRequest(prompt="Pick one.\n1. a\n2. b\n3. c", options=OPTIONS)


def _model(stub: StubServer, retries: int = 3, timeout: float = 5.0) -> LiteLLMModel:
    options = ModelOptions(api_base=stub.base, retries=retries, timeout=timeout, cache=False)
    model = LiteLLMModel("openai/stub", options)
    model.backoff_base = 0.01
    return model


def test_plain_reply(stub_server: StubServer) -> None:
    stub_server.play("ok:2")
    result = _model(stub_server).choose(REQUEST)
    assert (result.index, result.calls, result.fallback) == (1, 1, False)
    assert result.usage.prompt_tokens == 11
    assert stub_server.requests[0]["temperature"] == 0.0


@pytest.mark.parametrize("fault", ["429", "500", "malformed"])
def test_retries_then_succeeds(stub_server: StubServer, fault: str) -> None:
    stub_server.play(fault, fault, "ok:3")
    result = _model(stub_server).choose(REQUEST)
    assert result.index == 2
    assert result.calls == 3
    assert len(stub_server.requests) == 3


@pytest.mark.slow
def test_slow_reply_times_out_and_is_retried(stub_server: StubServer) -> None:
    stub_server.play("slow:1.5", "ok:2")  # longer than the timeout
    result = _model(stub_server, timeout=0.5).choose(REQUEST)
    assert (result.index, result.calls) == (1, 2)


@pytest.mark.parametrize("fault", ["429", "500"])
def test_gives_up_with_one_line_error(stub_server: StubServer, fault: str) -> None:
    stub_server.play(then=fault)
    with pytest.raises(BackendError) as info:
        _model(stub_server, retries=2).generate(GenerateRequest(prompt="hi"))
    error = info.value
    assert error.retryable
    assert "gave up after 3 attempts" in error.message
    assert "\n" not in error.one_line()
    assert len(stub_server.requests) == 3


def test_backoff_grows(stub_server: StubServer, monkeypatch: pytest.MonkeyPatch) -> None:
    delays: list[float] = []
    monkeypatch.setattr("fllm_cli.llm.litellm_backend.time.sleep", delays.append)
    stub_server.play(then="500")
    with pytest.raises(BackendError):
        _model(stub_server, retries=3).generate(GenerateRequest(prompt="hi"))
    assert len(delays) == 3
    assert delays[0] < delays[1] < delays[2]


def test_empty_choices_never_give_an_invalid_option(stub_server: StubServer) -> None:
    stub_server.play(then="empty")
    result = _model(stub_server).choose(REQUEST)
    assert 0 <= result.index < len(OPTIONS)
    assert result.fallback


@pytest.mark.parametrize(
    "replies",
    [["ok:42", "ok:-1"], ["ok:", "ok:banana"], ["empty", "ok:0"], ["malformed", "ok:99", "ok:x"]],
)
def test_choose_always_returns_a_valid_option(stub_server: StubServer, replies: list[str]) -> None:
    stub_server.play(*replies, then="ok:nothing useful")
    result = _model(stub_server).choose(REQUEST)
    assert 0 <= result.index < len(OPTIONS)


def test_cache_makes_second_call_free(stub_server: StubServer, tmp_path: Any) -> None:
    from fllm_cli.llm.cache import ResponseCache

    model = _model(stub_server)
    model.cache = ResponseCache(tmp_path / "c.sqlite3")
    first = model.choose(REQUEST)
    second = model.choose(REQUEST)
    assert first.index == second.index
    assert (second.calls, second.cached) == (0, True)
    assert len(stub_server.requests) == 1


def test_empty_reply_is_not_cached(stub_server: StubServer, tmp_path: Any) -> None:
    from fllm_cli.llm.cache import ResponseCache

    model = _model(stub_server)
    model.cache = ResponseCache(tmp_path / "c.sqlite3")
    stub_server.play("empty", "ok:2")
    model.generate(GenerateRequest(prompt="x"))
    assert model.generate(GenerateRequest(prompt="x")).text == "2"


def test_a_hung_provider_is_asked_twice_not_once_per_retry(stub_server: StubServer) -> None:
    """A provider that never answers in time holds a call for 2 x --timeout, not 1 + retries."""
    stub_server.play(then="slow:2")
    with pytest.raises(BackendError) as info:
        _model(stub_server, retries=4, timeout=0.3).generate(GenerateRequest(prompt="hi"))
    assert len(stub_server.requests) == 2
    message = info.value.one_line()
    assert message.startswith("the provider did not answer in time")
    assert "gave up after 2 attempts" in message


@pytest.mark.parametrize(
    ("name", "text", "meaning"),
    [
        ("APIConnectionError", "litellm.APIConnectionError: OpenAIException - Connection error.",
         "cannot reach the provider: Connection error."),
        ("RateLimitError", "litellm.RateLimitError: RateLimitError: OpenAIException - Slow down",
         "the provider is limiting the request rate: Slow down"),
        ("AuthenticationError", "litellm.AuthenticationError: AuthenticationError: bad key",
         "the provider refused the API key: bad key"),
        ("Timeout", "litellm.Timeout: APITimeoutError - Request timed out.",
         "the provider did not answer in time: Request timed out."),
        ("SomethingNew", "", "the provider call failed"),
    ],
)  # fmt: skip
def test_provider_errors_are_said_in_fllms_words(name: str, text: str, meaning: str) -> None:
    from fllm_cli.llm.litellm_backend import classify

    error = classify(type(name, (Exception,), {})(text))
    assert error.message == meaning
    assert "litellm" not in error.one_line() and "Exception" not in error.message

"""LiteLLMModel against a fault-injecting OpenAI-compatible stub on 127.0.0.1.

Each request takes the next scripted behaviour: 429, 500, a reply slower than the timeout,
malformed JSON, empty choices, or a normal reply. Backoff is shrunk so the tests stay quick.
"""

from __future__ import annotations

import json
import threading
import time
from collections import deque
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from fllm_cli.errors import BackendError
from fllm_cli.llm import ChoiceRequest, GenerateRequest
from fllm_cli.llm.litellm_backend import LiteLLMModel
from fllm_cli.llm.registry import ModelOptions

OPTIONS = ("Image Denoising", "Colorization", "Image Captioning")
REQUEST = ChoiceRequest(prompt="Pick one.\n1. a\n2. b\n3. c", options=OPTIONS)


def _completion(text: str) -> dict[str, Any]:
    return {
        "id": "stub-1",
        "object": "chat.completion",
        "created": 0,
        "model": "stub",
        "choices": [
            {"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": text}}
        ],
        "usage": {"prompt_tokens": 11, "completion_tokens": 1, "total_tokens": 12},
    }


class StubServer:
    """A tiny HTTP server whose replies follow a queue of behaviours."""

    def __init__(self) -> None:
        self.script: deque[str] = deque()
        self.requests: list[dict[str, Any]] = []
        self.default = "ok:1"
        stub = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                stub.requests.append(json.loads(body or b"{}"))
                stub.respond(self, stub.script.popleft() if stub.script else stub.default)

            def log_message(self, *args: Any) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    def respond(self, handler: BaseHTTPRequestHandler, behaviour: str) -> None:
        kind, _, arg = behaviour.partition(":")
        status, body = 200, b""
        if kind == "ok":
            body = json.dumps(_completion(arg)).encode()
        elif kind in ("429", "500"):
            status = int(kind)
            body = json.dumps({"error": {"message": f"stub {kind}", "type": "x"}}).encode()
        elif kind == "slow":
            time.sleep(float(arg or 1.5))  # longer than the client's timeout
            body = json.dumps(_completion("1")).encode()
        elif kind == "malformed":
            body = b'{"id": "x", "choices": [ {"message": '
        elif kind == "empty":
            body = json.dumps({**_completion(""), "choices": []}).encode()
        try:
            handler.send_response(status)
            handler.send_header("Content-Type", "application/json")
            handler.send_header("Content-Length", str(len(body)))
            handler.end_headers()
            handler.wfile.write(body)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client gave up (timeout): expected

    def __enter__(self) -> StubServer:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def stub() -> Iterator[StubServer]:
    with StubServer() as server:
        yield server


def _model(stub: StubServer, retries: int = 3, timeout: float = 5.0) -> LiteLLMModel:
    options = ModelOptions(api_base=stub.base, retries=retries, timeout=timeout, cache=False)
    model = LiteLLMModel("openai/stub", options)
    model.backoff_base = 0.01
    return model


def test_plain_reply(stub: StubServer) -> None:
    stub.script.extend(["ok:2"])
    result = _model(stub).choose(REQUEST)
    assert (result.index, result.calls, result.fallback) == (1, 1, False)
    assert result.usage.prompt_tokens == 11
    assert stub.requests[0]["temperature"] == 0.0


@pytest.mark.parametrize("fault", ["429", "500", "malformed"])
def test_retries_then_succeeds(stub: StubServer, fault: str) -> None:
    stub.script.extend([fault, fault, "ok:3"])
    result = _model(stub).choose(REQUEST)
    assert result.index == 2
    assert result.calls == 3
    assert len(stub.requests) == 3


@pytest.mark.slow
def test_slow_reply_times_out_and_is_retried(stub: StubServer) -> None:
    stub.script.extend(["slow:1.5", "ok:2"])
    result = _model(stub, timeout=0.5).choose(REQUEST)
    assert (result.index, result.calls) == (1, 2)


@pytest.mark.parametrize("fault", ["429", "500"])
def test_gives_up_with_one_line_error(stub: StubServer, fault: str) -> None:
    stub.default = fault
    with pytest.raises(BackendError) as info:
        _model(stub, retries=2).generate(GenerateRequest(prompt="hi"))
    error = info.value
    assert error.retryable
    assert "gave up after 3 attempts" in error.message
    assert "\n" not in error.one_line()
    assert len(stub.requests) == 3


def test_backoff_grows(stub: StubServer, monkeypatch: pytest.MonkeyPatch) -> None:
    delays: list[float] = []
    monkeypatch.setattr("fllm_cli.llm.litellm_backend.time.sleep", delays.append)
    stub.default = "500"
    with pytest.raises(BackendError):
        _model(stub, retries=3).generate(GenerateRequest(prompt="hi"))
    assert len(delays) == 3
    assert delays[0] < delays[1] < delays[2]


def test_empty_choices_never_give_an_invalid_option(stub: StubServer) -> None:
    stub.default = "empty"
    result = _model(stub).choose(REQUEST)
    assert 0 <= result.index < len(OPTIONS)
    assert result.fallback


@pytest.mark.parametrize(
    "replies",
    [["ok:42", "ok:-1"], ["ok:", "ok:banana"], ["empty", "ok:0"], ["malformed", "ok:99", "ok:x"]],
)
def test_choose_always_returns_a_valid_option(stub: StubServer, replies: list[str]) -> None:
    stub.script.extend(replies)
    stub.default = "ok:nothing useful"
    result = _model(stub).choose(REQUEST)
    assert 0 <= result.index < len(OPTIONS)


def test_cache_makes_second_call_free(stub: StubServer, tmp_path: Any) -> None:
    from fllm_cli.llm.cache import ResponseCache

    model = _model(stub)
    model.cache = ResponseCache(tmp_path / "c.sqlite3")
    first = model.choose(REQUEST)
    second = model.choose(REQUEST)
    assert first.index == second.index
    assert (second.calls, second.cached) == (0, True)
    assert len(stub.requests) == 1


def test_empty_reply_is_not_cached(stub: StubServer, tmp_path: Any) -> None:
    from fllm_cli.llm.cache import ResponseCache

    model = _model(stub)
    model.cache = ResponseCache(tmp_path / "c.sqlite3")
    stub.script.extend(["empty", "ok:2"])
    model.generate(GenerateRequest(prompt="x"))
    assert model.generate(GenerateRequest(prompt="x")).text == "2"

"""`fllm plan` against a misbehaving OpenAI-compatible server on 127.0.0.1."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from tests.conftest import run_fllm

TASK = "Given noisy grayscale image, how to return the caption in German step by step?"


class Stub(ThreadingHTTPServer):
    """Serves scripted replies in order; the last one repeats."""

    script: list[str]
    hits: int = 0


def _reply(content: str) -> bytes:
    body = {
        "id": "x",
        "object": "chat.completion",
        "created": 0,
        "model": "stub",
        "choices": [
            {
                "index": 0,
                "finish_reason": "stop",
                "message": {"role": "assistant", "content": content},
            }
        ],
        "usage": {"prompt_tokens": 50, "completion_tokens": 1, "total_tokens": 51},
    }
    return json.dumps(body).encode()


class Handler(BaseHTTPRequestHandler):
    def log_message(self, *args: object) -> None:  # keep test output clean
        pass

    def do_POST(self) -> None:
        server: Stub = self.server  # type: ignore[assignment]
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        step = server.script[min(server.hits, len(server.script) - 1)]
        server.hits += 1
        if step in ("400", "401", "404", "429", "500", "503"):
            self.send_response(int(step))
            self.send_header("Content-Type", "application/json")
            self.end_headers()
            self.wfile.write(b'{"error": {"message": "scripted failure", "type": "x"}}')
            return
        payload = b"{not json" if step == "garbage-json" else _reply(step)
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)


@pytest.fixture
def stub() -> Iterator[Stub]:
    server = Stub(("127.0.0.1", 0), Handler)
    server.script = ["1"]
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.shutdown()


def plan(stub: Stub, openagi: str, *extra: str) -> tuple[int, str, str]:
    port = stub.server_address[1]
    return run_fllm(
        "plan",
        openagi,
        TASK,
        "--input",
        "image",
        "--output",
        "text",
        "--model",
        "openai/stub",
        "--api-base",
        f"http://127.0.0.1:{port}/v1",
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


def test_rate_limits_and_5xx_are_retried(stub: Stub, openagi: str, tmp_path: Path) -> None:
    stub.script = ["429", "500", "2", "1"]
    code, stdout, err = plan(stub, openagi)
    assert code == 0, err
    doc = json.loads(stdout)
    assert doc["word"][0] == "Image Captioning"  # option 2 at the root, after two failures
    assert doc["stats"]["llm_calls"] >= 3
    assert doc["stats"]["prompt_tokens"] > 0


def test_persistent_failure_is_one_clean_line(stub: Stub, openagi: str) -> None:
    stub.script = ["500"]
    code, stdout, err = plan(stub, openagi)
    assert code == 1
    assert stdout == ""
    assert "Traceback" not in err
    assert len(err.strip().splitlines()) == 1
    assert "gave up after 3 attempts" in err


def test_nonsense_replies_still_give_a_valid_plan(stub: Stub, openagi: str, tmp_path: Path) -> None:
    stub.script = ["I am not sure.", "", "banana 42"]
    out = tmp_path / "plan.json"
    code, _, err = plan(stub, openagi, "-o", str(out))
    assert code == 0, err
    doc = json.loads(out.read_text())
    assert doc["stats"]["fallbacks"] == doc["stats"]["choice_points"]
    assert run_fllm("verify", openagi, str(out), timeout=60).code == 0


@pytest.mark.parametrize(
    ("status", "hint"),
    [("401", "API key"), ("404", "model name"), ("400", "refused the request")],
)
def test_client_errors_fail_at_once_with_a_hint(
    stub: Stub, openagi: str, status: str, hint: str
) -> None:
    stub.script = [status]
    code, stdout, err = plan(stub, openagi)
    assert code == 1 and stdout == ""
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1
    assert hint in err
    assert stub.hits == 1  # not retried: retrying cannot fix a bad key or model name

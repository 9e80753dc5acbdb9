"""One fake OpenAI-compatible chat server on 127.0.0.1, shared by every test that needs one.

Each POST takes the next behaviour from a script; once the script is used up, every further
request gets the default behaviour (``"ok:1"`` unless changed). So both patterns read plainly:

* "these replies, then this one forever":
  ``stub.play("429", "500", "ok:2", then="ok:1")``
* "always this": ``stub.play(then="500")``

A behaviour is one string:

``"ok:TEXT"``
    a normal chat completion whose message content is TEXT (TEXT may be empty).
``"400"`` ... ``"599"``
    that HTTP status with a JSON error body (``{"error": {"message": ..., "type": ...}}``).
``"slow:SECS"`` or ``"slow:SECS:TEXT"``
    wait SECS seconds, then reply like ``"ok:TEXT"`` (TEXT defaults to ``"1"``); use it to push a
    client past its timeout or a run past its time budget.
``"malformed"``
    status 200 with a body cut off in the middle of the JSON.
``"empty"``
    a well-formed completion with an empty ``choices`` list.
``"json:N"``
    a normal completion whose content is the structured answer ``{"choice": N}`` (N is written
    as a number when it is one, else as a string), as a schema-constrained reply looks.
``"logprobs:TOKEN=P,TOKEN=P,..."`` or ``"logprobs:TOKEN=P,...:TEXT"``
    a completion carrying OpenAI-format log-probabilities: at the first position the sampled
    token is the first TOKEN listed and ``top_logprobs`` are all the listed tokens with
    probabilities P (given as probabilities, sent as their logarithms). The content is TEXT, or
    the first TOKEN when no TEXT is given.
``"unsupported:PARAM"``
    HTTP 400 saying the request parameter PARAM is not supported (OpenAI's wording and error
    code ``unsupported_parameter``).

``play`` rejects anything else at once, so a typo fails in the test and not in the server
thread. ``refuse(PARAM, ...)`` makes the server answer ``"unsupported:PARAM"`` to every request
whose body carries one of those parameters, without using up the script (a provider that never
accepts them); ``refuse()`` with no names accepts everything again. Every request body is kept
in ``requests`` (parsed JSON, or the raw text when it is not JSON) and ``hits`` counts them;
``base`` is the URL to pass as ``--api-base``. Every successful reply reports the same token
usage (``USAGE``). A client that hangs up before the reply is written (a timeout) is expected
and ignored. Use the ``stub_server`` fixture from
``tests/conftest.py``, or ``with StubServer() as stub: ...`` where a fixture does not fit.
"""

from __future__ import annotations

import json
import math
import threading
import time
from collections import deque
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

USAGE = {"prompt_tokens": 11, "completion_tokens": 1, "total_tokens": 12}
SLOW_TEXT = "1"  # what a "slow:SECS" reply says when no text is given


def completion(text: str) -> dict[str, Any]:
    """The body of a one-choice chat completion whose message is ``text``."""
    return {
        "id": "stub-1",
        "object": "chat.completion",
        "created": 0,
        "model": "stub",
        "choices": [
            {"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": text}}
        ],
        "usage": dict(USAGE),
    }


def logprobs_completion(tokens: list[tuple[str, float]], text: str | None = None) -> dict[str, Any]:
    """A completion whose first position has ``tokens`` (token, probability) as top log-probs.

    The first token is the one sampled; the content is ``text``, or that token.
    """
    body = completion(tokens[0][0] if text is None else text)
    top = [
        {"token": token, "logprob": math.log(p), "bytes": list(token.encode())}
        for token, p in tokens
    ]
    first = {**top[0], "top_logprobs": top}
    body["choices"][0]["logprobs"] = {"content": [first], "refusal": None}
    return body


def unsupported_error(param: str) -> dict[str, Any]:
    """OpenAI's error body for a request parameter the model does not accept."""
    return {
        "error": {
            "message": f"Unsupported parameter: '{param}' is not supported with this model.",
            "type": "invalid_request_error",
            "param": param,
            "code": "unsupported_parameter",
        }
    }


def _parse_logprobs(behaviour: str, arg: str) -> dict[str, Any]:
    spec, colon, text = arg.partition(":")
    tokens: list[tuple[str, float]] = []
    for item in spec.split(","):
        token, eq, prob = item.rpartition("=")
        try:
            p = float(prob)
        except ValueError:
            p = -1.0
        if not eq or not 0.0 < p <= 1.0:
            raise ValueError(f"bad stub behaviour {behaviour!r}: want TOKEN=P with 0 < P <= 1")
        tokens.append((token, p))
    return logprobs_completion(tokens, text if colon else None)


def _parse(behaviour: str) -> tuple[int, float, bytes]:
    """(status, delay in seconds, body) for one behaviour; ValueError for an unknown one."""
    kind, _, arg = behaviour.partition(":")
    if kind == "ok":
        return 200, 0.0, json.dumps(completion(arg)).encode()
    if kind == "slow":
        secs, _, text = arg.partition(":")
        try:
            delay = float(secs)
        except ValueError:
            raise ValueError(f"bad stub behaviour {behaviour!r}: slow needs seconds") from None
        return 200, delay, json.dumps(completion(text or SLOW_TEXT)).encode()
    if kind == "json":
        value: Any = int(arg) if arg.lstrip("-").isdigit() else arg
        return 200, 0.0, json.dumps(completion(json.dumps({"choice": value}))).encode()
    if kind == "logprobs":
        return 200, 0.0, json.dumps(_parse_logprobs(behaviour, arg)).encode()
    if kind == "unsupported" and arg:
        return 400, 0.0, json.dumps(unsupported_error(arg)).encode()
    if behaviour == "malformed":
        return 200, 0.0, b'{"id": "x", "choices": [ {"message": '
    if behaviour == "empty":
        return 200, 0.0, json.dumps({**completion(""), "choices": []}).encode()
    if behaviour.isdigit() and 400 <= int(behaviour) <= 599:
        error = {"error": {"message": f"stub {behaviour}", "type": "stub_error"}}
        return int(behaviour), 0.0, json.dumps(error).encode()
    raise ValueError(f"unknown stub behaviour {behaviour!r}")


class StubServer:
    """A scripted OpenAI-compatible server; see the module docstring for the behaviours."""

    def __init__(self, *script: str, default: str = "ok:1") -> None:
        self.script: deque[str] = deque()
        self.default = default
        self.requests: list[Any] = []
        self.refused: tuple[str, ...] = ()
        self._lock = threading.Lock()
        self.play(*script, then=default)
        stub = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                raw = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                stub._serve(self, stub._next(raw))

            def log_message(self, *args: Any) -> None:  # keep test output clean
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True  # a reply still sleeping never holds up shutdown
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def play(self, *behaviours: str, then: str | None = None) -> None:
        """Replace the script with ``behaviours``; ``then``, if given, becomes the default."""
        for behaviour in (*behaviours, *([then] if then is not None else [])):
            _parse(behaviour)
        with self._lock:
            self.script = deque(behaviours)
            if then is not None:
                self.default = then

    def refuse(self, *params: str) -> None:
        """Answer ``"unsupported:PARAM"`` to any request carrying one of ``params``."""
        with self._lock:
            self.refused = params

    @property
    def hits(self) -> int:
        """How many requests have arrived so far."""
        return len(self.requests)

    @property
    def base(self) -> str:
        """The ``/v1`` URL of this server, for ``--api-base`` or ``ModelOptions.api_base``."""
        return f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    def _next(self, raw: bytes) -> str:
        """Record one request body and take the behaviour that answers it."""
        try:
            body: Any = json.loads(raw or b"{}")
        except ValueError:
            body = raw.decode(errors="replace")
        with self._lock:
            self.requests.append(body)
            if isinstance(body, dict):
                for param in self.refused:
                    if param in body:
                        return f"unsupported:{param}"
            return self.script.popleft() if self.script else self.default

    def _serve(self, handler: BaseHTTPRequestHandler, behaviour: str) -> None:
        status, delay, body = _parse(behaviour)
        if delay:
            time.sleep(delay)
        try:
            handler.send_response(status)
            handler.send_header("Content-Type", "application/json")
            handler.send_header("Content-Length", str(len(body)))
            handler.end_headers()
            handler.wfile.write(body)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client stopped waiting (its timeout): nothing to answer

    def start(self) -> StubServer:
        self.thread.start()
        return self

    def close(self) -> None:
        """Stop serving and free the port; replies still sleeping are abandoned."""
        if self.thread.is_alive():
            self.httpd.shutdown()
            self.thread.join(timeout=5)
        self.httpd.server_close()

    def __enter__(self) -> StubServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()

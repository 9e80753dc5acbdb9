"""LiteLLM back end: any provider LiteLLM knows, with retries and clean one-line errors.

A choice is asked in the strongest way the provider allows (``ModelOptions.choice_mode``):

* ``schema``: ``response_format`` with a JSON schema whose ``choice`` is an enum of the option
  numbers, so the reply is ``{"choice": N}``;
* ``bias``: ``logit_bias`` lets only the option numbers' tokens be the one reply token (models
  with a known OpenAI tokenizer, every number one token);
* ``logprobs``: the probability of each option number's token at the first reply position;
* ``text``: the reply parsed for an option number (:func:`~fllm_cli.llm.base.parse_choice`).

``auto`` takes the first of schema, bias, logprobs that LiteLLM says the model supports, else
text. A provider that refuses the parameter (a 400 naming it or calling it unsupported) is asked
again at once without it, and that mode is not used again by this model object: ``auto`` moves
on to the next mode, an explicit mode to text. A reply that names no option is asked again with
a short correction and a higher temperature (+0.3 a time, at most 1.0), up to ``retries`` times;
then the first option is taken and the result is marked as a fallback. The mode that produced
the answer is in :attr:`ChoiceResult.mode` and in every exchange.
"""

from __future__ import annotations

import json
import math
import os
import random
import re
import threading
import time
from dataclasses import dataclass, field
from typing import Any

from fllm_cli.errors import BackendError, ContextOverflow, UsageError
from fllm_cli.llm.base import (
    CORRECTION,
    ChoiceRequest,
    ChoiceResult,
    GenerateRequest,
    Generation,
    TextModel,
    Usage,
    parse_choice,
)
from fllm_cli.llm.cache import cache_for
from fllm_cli.llm.options import CHOICE_MODES, ModelOptions

_litellm: Any = None


def _import_litellm() -> Any:
    """Import LiteLLM lazily and offline (local cost map, no telemetry, no banners)."""
    global _litellm
    if _litellm is None:
        os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
        os.environ.setdefault("LITELLM_LOG", "ERROR")
        import litellm

        litellm.suppress_debug_info = True
        litellm.telemetry = False
        litellm.drop_params = True
        _litellm = litellm
    return _litellm


_RETRYABLE = (
    "RateLimitError",
    "Timeout",
    "APIConnectionError",
    "InternalServerError",
    "ServiceUnavailableError",
    "APIError",
    "JSONDecodeError",
)
_HINTS = {
    "AuthenticationError": "set the provider's API key, e.g. OPENAI_API_KEY",
    "NotFoundError": "check the model name; LiteLLM wants provider/model, e.g. ollama/llama3",
    "BadRequestError": "the provider refused the request; check --model and --api-base",
    "PermissionDeniedError": "the key has no access to this model",
    "ContextWindowExceededError": "the prompt is too long for this model",
}
# What each provider failure means, in fllm's words (the library's class names and wrapper
# prefixes mean nothing to a user); the provider's own first line follows, cleaned.
_MEANING = (
    ("ContextWindowExceeded", "the prompt is too long for the model's context window"),
    ("AuthenticationError", "the provider refused the API key"),
    ("PermissionDeniedError", "the API key has no access to this model"),
    ("NotFoundError", "the provider does not know this model or address"),
    ("BadRequestError", "the provider refused the request"),
    ("RateLimitError", "the provider is limiting the request rate"),
    ("Timeout", "the provider did not answer in time"),
    ("APIConnectionError", "cannot reach the provider"),
    ("ServiceUnavailableError", "the provider is unavailable"),
    ("InternalServerError", "the provider failed"),
    ("JSONDecodeError", "the provider's reply is not valid JSON"),
    ("APIError", "the provider failed"),
)
# Library class names and wrapper prefixes: "litellm.APIConnectionError: OpenAIException - ".
_WRAPPER = re.compile(r"^(?:(?:litellm\.)?\w*(?:Error|Exception|Timeout)\b\s*[:-]?\s*-?\s*)+")


def provider_detail(exc: BaseException) -> str:
    """Return the provider's own first line without library class names (at most 200 chars)."""
    first = (str(exc).strip().splitlines() or [""])[0]
    first = _WRAPPER.sub("", first.replace("litellm.", "")).strip()
    return first[:200] + ("..." if len(first) > 200 else "")


def classify(exc: BaseException) -> BackendError:
    """Map a provider exception to a BackendError in fllm's words, saying whether a retry
    may help (``timed_out`` marks a request that got no answer in time)."""
    kind = type(exc).__name__
    status = getattr(exc, "status_code", None)
    meaning = next((text for name, text in _MEANING if name in kind), None)
    if meaning is None:
        meaning = (
            f"the provider answered HTTP {status}"
            if isinstance(status, int)
            else ("the provider call failed")
        )
    detail = provider_detail(exc)
    message = f"{meaning}: {detail}" if detail and detail.lower() != meaning else meaning
    if "ContextWindowExceeded" in kind:
        return ContextOverflow(message, hint=_HINTS["ContextWindowExceededError"])
    for name, hint in _HINTS.items():
        if name in kind:
            return BackendError(message, retryable=False, hint=hint)
    retryable = any(name in kind for name in _RETRYABLE) or (
        isinstance(status, int) and (status == 429 or status >= 500)
    )
    error = BackendError(message, retryable=retryable)
    error.timed_out = "Timeout" in kind  # type: ignore[attr-defined]
    return error


# A provider that did not answer within --timeout is retried once: one that hangs would
# otherwise hold every model call for --timeout x (1 + --retries).
TIMEOUT_RETRIES = 1


# A 400/422 that says a request parameter is not accepted (OpenAI, vLLM, LiteLLM...).
_REFUSAL = re.compile(
    r"unsupported|not supported|does not support|unrecognized|unknown (?:parameter|field|argument)"
    r"|extra (?:inputs|fields)|not (?:allowed|permitted)"
    r"|response_format|json_schema|logprobs|logit_bias",
    re.IGNORECASE,
)
# Any status, naming a parameter that was sent: llama-cpp-python's server answers a
# ``response_format`` it cannot validate with a 500 "validation error ... Input should be".
_INVALID = re.compile(
    r"validation|invalid|input should|unsupported|not supported|unrecognized|extra",
    re.IGNORECASE,
)


def refuses_parameter(exc: BaseException, sent: tuple[str, ...] = ()) -> bool:
    """Tell whether ``exc`` is a provider refusing a request parameter (not a retryable fault).

    Either a 400/422 that says so, or any error naming one of the ``sent`` parameters as
    invalid.
    """
    kind = type(exc).__name__
    if "ContextWindow" in kind:
        return False
    message = str(exc)
    status = getattr(exc, "status_code", None)
    client = any(
        name in kind for name in ("BadRequest", "UnprocessableEntity", "UnsupportedParams")
    )
    if (client or status in (400, 422)) and _REFUSAL.search(message):
        return True
    return any(name in message for name in sent) and bool(_INVALID.search(message))


class _Refused(Exception):
    """The provider refused the choice mode's parameter; ``calls`` requests were spent."""

    def __init__(self, message: str, calls: int) -> None:
        super().__init__(message)
        self.message = message
        self.calls = calls


MODE_ORDER = ("schema", "bias", "logprobs")  # what ``auto`` tries, best first; text is last
TEMPERATURE_STEP = 0.3  # added per re-ask of a reply that named no option
TEMPERATURE_CAP = 1.0
OFFLINE_ENCODINGS = ("cl100k_base", "o200k_base")  # bundled with LiteLLM
MAX_BIASED = 300  # at most this many logit_bias entries (providers cap them)
_MAX_TOKENS = {"schema": 24, "bias": 1}  # the other modes use choice_max_tokens


def retry_temperature(base: float, attempt: int) -> float:
    """Return the temperature of attempt ``attempt`` (0 is the first) of one choice."""
    if attempt == 0:
        return base
    return max(base, min(TEMPERATURE_CAP, base + TEMPERATURE_STEP * attempt))


def choice_schema(n: int) -> dict[str, Any]:
    """Return the ``response_format`` whose only valid replies are ``{"choice": 1..n}``."""
    return {
        "type": "json_schema",
        "json_schema": {
            "name": "choice",
            "schema": {
                "type": "object",
                "properties": {"choice": {"type": "integer", "enum": list(range(1, n + 1))}},
                "required": ["choice"],
                "additionalProperties": False,
            },
            "strict": True,
        },
    }


def top_logprobs_for(n: int) -> int:
    """How many alternatives to ask for at each position (providers allow at most 20)."""
    return max(5, min(20, n))


@dataclass
class _Answer:
    """One request of a choice: the option read (or None), and how."""

    index: int | None
    raw: str
    asked: str  # the mode of the request
    mode: str  # how the answer was read (the asked mode, or text when the provider ignored it)
    temperature: float
    calls: int = 0
    cached: bool = False
    usage: Usage = field(default_factory=Usage)
    probs: dict[str, float] | None = None

    def exchange(self, prompt: str) -> dict[str, Any]:
        record: dict[str, Any] = {
            "prompt": prompt,
            "reply": self.raw,
            "cached": self.cached,
            "asked": self.asked,
            "mode": self.mode,
            "temperature": self.temperature,
        }
        if self.probs:
            record["probs"] = self.probs
        return record


@dataclass(frozen=True)
class _Support:
    """What LiteLLM says the model accepts."""

    schema: bool = False
    bias: bool = False
    logprobs: bool = False
    encoding: str | None = None  # the tiktoken encoding of the model, when known

    def accepts(self, mode: str) -> bool:
        """Return whether the model accepts choice ``mode`` (one of MODE_ORDER)."""
        return {"schema": self.schema, "bias": self.bias, "logprobs": self.logprobs}[mode]


class LiteLLMModel(TextModel):
    """A chat model reached through LiteLLM; temperature 0 by default."""

    reads_requests = True  # proposes a plan's interface and tools (search/proposal.py)

    def __init__(self, name: str, options: ModelOptions, cache: Any = None) -> None:
        if options.choice_mode not in CHOICE_MODES:
            raise UsageError(
                f"unknown choice mode '{options.choice_mode}' (choose {', '.join(CHOICE_MODES)})"
            )
        self.name = name
        self.options = options
        self.cache = cache
        self.backoff_base = 0.5
        self.refused: set[str] = set()  # choice modes the provider refused during this run
        self._support: _Support | None = None
        self._bias_tokens: dict[int, dict[str, int] | None] = {}
        self._lock = threading.Lock()

    # ------------------------------------------------------------------ requests

    def _kwargs(
        self,
        prompt: str,
        *,
        temperature: float,
        max_tokens: int,
        system: str | None = None,
        stop: tuple[str, ...] = (),
        extra: dict[str, Any] | None = None,
    ) -> dict[str, Any]:
        messages = []
        if system:
            messages.append({"role": "system", "content": system})
        messages.append({"role": "user", "content": prompt})
        kwargs: dict[str, Any] = {
            "model": self.name,
            "messages": messages,
            "temperature": temperature,
            "max_tokens": max_tokens,
            "timeout": self.options.timeout,
            "num_retries": 0,
            # The OpenAI SDK retries on its own too; retries are ours alone (counted, backed off).
            "max_retries": 0,
        }
        if stop:
            kwargs["stop"] = list(stop)[:4] if "openai" in self.name else list(stop)
        if self.options.api_base:
            kwargs["api_base"] = self.options.api_base
            kwargs.setdefault("api_key", os.environ.get("OPENAI_API_KEY") or "sk-no-key")
        kwargs.update(extra or {})
        return kwargs

    def _call(self, request: GenerateRequest, extra: dict[str, Any] | None = None) -> Any:
        kwargs = self._kwargs(
            request.prompt,
            temperature=self.options.temperature,
            max_tokens=request.max_tokens,
            system=request.system,
            stop=request.stop,
            extra=extra,
        )
        return _import_litellm().completion(**kwargs)

    def _reply_format(self, request: GenerateRequest) -> dict[str, Any] | None:
        """Return the ``response_format`` for a request that wants JSON of a schema, when the
        provider takes one (LiteLLM says so, or ``--choice-mode schema`` insists) and has not
        refused it during this run."""
        if request.schema is None or "schema" in self.refused:
            return None
        wanted = self.options.choice_mode
        if wanted not in (None, "auto", "schema"):
            return None
        if wanted != "schema" and not self.support().schema:
            return None
        name = re.sub(r"[^A-Za-z0-9_-]", "_", request.kind)[:64] or "reply"
        return {"type": "json_schema", "json_schema": {"name": name, "schema": request.schema}}

    def _send(self, call: Any, refusable: tuple[str, ...] = ()) -> tuple[Any, int]:
        """Run ``call()`` with fllm's retries; return the response and the requests made.

        A refusal of one of the ``refusable`` parameters raises :class:`_Refused` at once.
        """
        attempt = 0
        while True:
            try:
                return call(), attempt + 1
            except Exception as exc:
                if refusable and refuses_parameter(exc, refusable):
                    raise _Refused(classify(exc).message, attempt + 1) from None
                error = classify(exc)
                limit = self.options.retries
                if getattr(error, "timed_out", False):
                    limit = min(limit, TIMEOUT_RETRIES)
                if not error.retryable or attempt >= limit:
                    if error.retryable:
                        error.message += f" (gave up after {attempt + 1} attempts)"
                    raise error from None
                delay = self.backoff_base * (2**attempt) * (1 + random.random() * 0.25)
                time.sleep(min(delay, 30.0))
                attempt += 1

    def _complete_uncached(self, request: GenerateRequest) -> Generation:
        start = time.perf_counter()
        spent = 0
        reply_format = self._reply_format(request)
        while True:
            extra = {"response_format": reply_format} if reply_format else None
            refusable = ("response_format", "json_schema") if reply_format else ()
            try:
                response, calls = self._send(lambda e=extra: self._call(request, e), refusable)
                break
            except _Refused as refused:  # asked again as plain text, and not again this run
                with self._lock:
                    self.refused.add("schema")
                spent += refused.calls
                reply_format = None
        calls += spent
        text, finish = _text_of(response)
        usage = _usage_of(response, _import_litellm())
        return Generation(
            text=text,
            calls=calls,
            usage=usage,
            seconds=time.perf_counter() - start,
            finish_reason=finish,
        )

    # ------------------------------------------------------------------ choosing

    def support(self) -> _Support:
        """Return what LiteLLM says this model accepts (asked once, offline)."""
        with self._lock:
            if self._support is None:
                self._support = _probe_support(self.name)
            return self._support

    def bias_tokens(self, n: int) -> dict[str, int] | None:
        """Return the ``logit_bias`` allowing only the tokens ``"1"``..``"n"``, or None."""
        with self._lock:
            if n in self._bias_tokens:
                return self._bias_tokens[n]
        encoding = self.support().encoding
        tokens = _number_tokens(encoding, n) if encoding and 0 < n <= MAX_BIASED else None
        with self._lock:
            self._bias_tokens[n] = tokens
        return tokens

    def choice_mode(self, n: int) -> str:
        """Return the mode the next choice among ``n`` options is asked in."""
        wanted = self.options.choice_mode
        with self._lock:
            refused = set(self.refused)
        if wanted != "auto":
            if wanted in refused or (wanted == "bias" and self.bias_tokens(n) is None):
                return "text"
            return wanted
        support = self.support()
        for mode in MODE_ORDER:
            if mode in refused or not support.accepts(mode):
                continue
            if mode == "bias" and self.bias_tokens(n) is None:
                continue
            return mode
        return "text"

    def _mode_params(self, mode: str, n: int) -> dict[str, Any]:
        if mode == "schema":
            return {"response_format": choice_schema(n)}
        if mode == "logprobs":
            return {"logprobs": True, "top_logprobs": top_logprobs_for(n)}
        if mode == "bias":
            return {"logit_bias": dict(self.bias_tokens(n) or {})}
        return {}

    def choose(self, request: ChoiceRequest) -> ChoiceResult:
        """Ask in the best mode; re-ask a reply naming no option, warmer; else the first option."""
        start = time.perf_counter()
        n = len(request.options)
        result = ChoiceResult(index=0, mode="text")
        if n == 0:
            result.fallback = True
            return result
        prompt = request.prompt
        for attempt in range(1 + max(0, self.options.retries)):
            temperature = retry_temperature(self.options.temperature, attempt)
            answer = self._ask_any_mode(prompt, request.options, temperature, result)
            result.calls += answer.calls
            result.cached = answer.cached if attempt == 0 else (result.cached and answer.cached)
            result.usage.add(answer.usage)
            result.exchanges.append(answer.exchange(prompt))
            result.raw = answer.raw
            result.mode = answer.mode
            if answer.index is not None:
                result.index = answer.index
                result.seconds = time.perf_counter() - start
                return result
            prompt = request.prompt + CORRECTION.format(reply=answer.raw[:200], n=n)
        result.index = 0
        result.fallback = True
        result.seconds = time.perf_counter() - start
        return result

    def _ask_any_mode(
        self, prompt: str, options: tuple[str, ...], temperature: float, result: ChoiceResult
    ) -> _Answer:
        """Ask once; a refused mode is remembered and the question asked again without it."""
        while True:
            mode = self.choice_mode(len(options))
            try:
                return self._ask(prompt, options, mode, temperature)
            except _Refused as refused:
                with self._lock:
                    self.refused.add(mode)
                result.calls += refused.calls
                result.exchanges.append(
                    {
                        "prompt": prompt,
                        "reply": "",
                        "cached": False,
                        "asked": mode,
                        "refused": refused.message,
                    }
                )

    def _ask(self, prompt: str, options: tuple[str, ...], mode: str, temperature: float) -> _Answer:
        """One choice request in ``mode``, through the cache; raises _Refused."""
        n = len(options)
        max_tokens = _MAX_TOKENS.get(mode, self.choice_max_tokens)
        key_params: dict[str, Any] = {  # text mode: the key generate() used for choices
            "temperature": temperature,
            "max_tokens": max_tokens,
            "stop": [],
            "system": None,
            "api_base": self.options.api_base,
        }
        if mode != "text":
            key_params.update(choice_mode=mode, options=n)
        if self.cache is not None:
            hit = self.cache.get(self.name, prompt, key_params)
            if hit is not None:
                index, structured = read_reply(hit, options)
                how = mode if structured or mode == "bias" else "text"
                return _Answer(index, hit, mode, how, temperature, calls=0, cached=True)
        extra = self._mode_params(mode, n)
        kwargs = self._kwargs(prompt, temperature=temperature, max_tokens=max_tokens, extra=extra)
        sent = (*extra, "json_schema") if "response_format" in extra else tuple(extra)
        litellm = _import_litellm()
        response, calls = self._send(lambda: litellm.completion(**kwargs), refusable=sent)
        text, _finish = _text_of(response)
        answer = _Answer(
            None,
            text,
            mode,
            "text",
            temperature,
            calls=calls,
            usage=_usage_of(response, litellm),
        )
        index, structured = read_reply(text, options)
        stored = text
        if mode == "logprobs":
            probs, first = option_probs(response, n)
            answer.probs = {str(k): round(p, 6) for k, p in sorted(probs.items())} or None
            chosen = pick_by_probs(probs, first, index)
            if chosen is not None:
                index, answer.mode = chosen, "logprobs"
                stored = json.dumps({"choice": chosen + 1})
        elif index is not None and (structured or mode == "bias"):
            answer.mode = mode
        answer.index = index
        if self.cache is not None and stored:  # an empty reply is a hiccup, not an answer
            self.cache.put(self.name, prompt, key_params, stored)
        return answer

    def generate(self, request: GenerateRequest) -> Generation:
        """Generate text, through the response cache when one is attached."""
        if self.cache is not None:
            key_params = {
                "temperature": self.options.temperature,
                "max_tokens": request.max_tokens,
                "stop": list(request.stop),
                "system": request.system,
                "api_base": self.options.api_base,
            }
            if self._reply_format(request) is not None:
                key_params["schema"] = request.schema
            hit = self.cache.get(self.name, request.prompt, key_params)
            if hit is not None:
                return Generation(text=hit, calls=0, cached=True)
            gen = self._complete_uncached(request)
            if gen.text:  # an empty reply is a provider hiccup, not an answer worth keeping
                self.cache.put(self.name, request.prompt, key_params, gen.text)
            return gen
        return self._complete_uncached(request)


def factory(name: str, options: ModelOptions) -> LiteLLMModel:
    """Build the back end for a LiteLLM model string (the ``litellm`` row of the registry)."""
    return LiteLLMModel(name, options, cache=cache_for(options))


def _text_of(response: Any) -> tuple[str, str | None]:
    try:
        choice = response.choices[0]
    except (AttributeError, IndexError, TypeError):
        return "", "empty"
    message = getattr(choice, "message", None)
    content = getattr(message, "content", None) if message is not None else None
    return (content or ""), getattr(choice, "finish_reason", None)


def _usage_of(response: Any, litellm: Any) -> Usage:
    usage = getattr(response, "usage", None)
    prompt = int(getattr(usage, "prompt_tokens", 0) or 0)
    completion = int(getattr(usage, "completion_tokens", 0) or 0)
    try:
        cost = float(litellm.completion_cost(completion_response=response) or 0.0)
    except Exception:
        cost = 0.0
    return Usage(prompt_tokens=prompt, completion_tokens=completion, cost_usd=cost)


def _probe_support(name: str) -> _Support:
    """Ask LiteLLM (offline) which choice parameters ``name`` accepts."""
    litellm = _import_litellm()
    try:
        model, provider, *_ = litellm.get_llm_provider(name)
    except Exception:
        return _Support()
    try:
        schema = bool(litellm.supports_response_schema(model=name))
    except Exception:
        schema = False
    try:
        params = set(
            litellm.get_supported_openai_params(model=model, custom_llm_provider=provider) or ()
        )
    except Exception:
        params = set()
    encoding = None
    if provider in ("openai", "azure") and "logit_bias" in params:
        try:
            import tiktoken

            encoding = tiktoken.encoding_name_for_model(model)
        except Exception:
            encoding = None
        if encoding not in OFFLINE_ENCODINGS:
            encoding = None
    return _Support(
        schema=schema and "response_format" in params,
        bias=encoding is not None,
        logprobs={"logprobs", "top_logprobs"} <= params,
        encoding=encoding,
    )


def _number_tokens(encoding: str, n: int) -> dict[str, int] | None:
    """Return ``{token id: 100}`` for the numbers 1..n, or None unless each is one token."""
    if encoding not in OFFLINE_ENCODINGS:
        return None
    try:
        # LiteLLM points tiktoken at the encodings it bundles, so nothing is downloaded.
        import litellm.litellm_core_utils.default_encoding  # noqa: F401
        import tiktoken

        enc = tiktoken.get_encoding(encoding)
    except Exception:
        return None
    bias: dict[str, int] = {}
    for number in range(1, n + 1):
        ids = enc.encode(str(number))
        if len(ids) != 1:
            return None
        bias[str(ids[0])] = 100
    return bias


_FENCE = re.compile(r"^```(?:json)?\s*|\s*```$")


def read_reply(text: str, options: tuple[str, ...]) -> tuple[int | None, bool]:
    """Return the 0-based option a reply names and whether it was a ``{"choice": N}`` object.

    A JSON object is read only through its ``choice`` (an out-of-range one names nothing); any
    other text goes through :func:`parse_choice`.
    """
    n = len(options)
    body = _FENCE.sub("", text.strip())
    if body.startswith("{"):
        try:
            data = json.loads(body)
        except ValueError:
            data = None
        if isinstance(data, dict) and "choice" in data:
            value = data["choice"]
            if isinstance(value, str) and value.strip().isdigit():
                value = int(value.strip())
            if isinstance(value, int) and not isinstance(value, bool) and 1 <= value <= n:
                return value - 1, True
            return None, True
    return parse_choice(text, options), False


def _get(obj: Any, name: str) -> Any:
    return obj.get(name) if isinstance(obj, dict) else getattr(obj, name, None)


def option_probs(response: Any, n: int) -> tuple[dict[int, float], str | None]:
    """Return ``{option number: probability}`` at the first reply position, and its token.

    Tokens that differ only by spaces (``"2"``, ``" 2"``) add up; other tokens are ignored.
    """
    try:
        content = _get(_get(response.choices[0], "logprobs"), "content")
        first = content[0]
    except (AttributeError, IndexError, KeyError, TypeError):
        return {}, None
    token = _get(first, "token")
    seen: dict[str, float] = {}
    for entry in [first, *(_get(first, "top_logprobs") or [])]:
        text, logprob = _get(entry, "token"), _get(entry, "logprob")
        if isinstance(text, str) and isinstance(logprob, int | float) and text not in seen:
            seen[text] = math.exp(logprob)
    probs: dict[int, float] = {}
    for text, p in seen.items():
        word = text.strip()
        if word.isdigit() and 1 <= int(word) <= n:
            probs[int(word)] = probs.get(int(word), 0.0) + p
    return probs, token if isinstance(token, str) else None


def pick_by_probs(probs: dict[int, float], first: str | None, text_index: int | None) -> int | None:
    """Return the 0-based option the first-position probabilities choose, or None.

    They decide when the reply starts with a number, or when its text names no option; a reply
    that starts with a word and names an option later is read as text. A first digit that the
    text continues into a valid number (``"1"`` then ``"2"``: 12) is read as that number.
    """
    if not probs:
        return None
    starts_with_number = first is not None and first.strip().isdigit()
    if not starts_with_number and text_index is not None:
        return None
    best = max(probs, key=lambda k: (probs[k], -k))
    if (
        text_index is not None
        and first is not None
        and first.strip() == str(best)
        and str(text_index + 1).startswith(str(best))
    ):
        return text_index
    return best - 1

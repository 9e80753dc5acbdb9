"""LiteLLM back end: any provider LiteLLM knows, with retries and clean one-line errors."""

from __future__ import annotations

import os
import random
import time
from typing import Any

from fllm_cli.errors import BackendError, ContextOverflow
from fllm_cli.llm.base import GenerateRequest, Generation, TextModel, Usage
from fllm_cli.llm.cache import cache_for
from fllm_cli.llm.options import ModelOptions

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


def classify(exc: BaseException) -> BackendError:
    """Map a provider exception to a BackendError saying whether a retry may help."""
    kind = type(exc).__name__
    first = (str(exc).strip().splitlines() or [kind])[0]
    first = first.replace("litellm.", "")[:300]
    if "ContextWindowExceeded" in kind:
        return ContextOverflow(f"{kind}: {first}", hint=_HINTS["ContextWindowExceededError"])
    for name, hint in _HINTS.items():
        if name in kind:
            return BackendError(f"{kind}: {first}", retryable=False, hint=hint)
    status = getattr(exc, "status_code", None)
    retryable = any(name in kind for name in _RETRYABLE) or (
        isinstance(status, int) and (status == 429 or status >= 500)
    )
    return BackendError(f"{kind}: {first}", retryable=retryable)


class LiteLLMModel(TextModel):
    """A chat model reached through LiteLLM; temperature 0 by default."""

    def __init__(self, name: str, options: ModelOptions, cache: Any = None) -> None:
        self.name = name
        self.options = options
        self.cache = cache
        self.backoff_base = 0.5

    def _call(self, request: GenerateRequest) -> Any:
        litellm = _import_litellm()
        messages = []
        if request.system:
            messages.append({"role": "system", "content": request.system})
        messages.append({"role": "user", "content": request.prompt})
        kwargs: dict[str, Any] = {
            "model": self.name,
            "messages": messages,
            "temperature": self.options.temperature,
            "max_tokens": request.max_tokens,
            "timeout": self.options.timeout,
            "num_retries": 0,
            # The OpenAI SDK retries on its own too; retries are ours alone (counted, backed off).
            "max_retries": 0,
        }
        if request.stop:
            kwargs["stop"] = list(request.stop)[:4] if "openai" in self.name else list(request.stop)
        if self.options.api_base:
            kwargs["api_base"] = self.options.api_base
            kwargs.setdefault("api_key", os.environ.get("OPENAI_API_KEY") or "sk-no-key")
        return litellm.completion(**kwargs)

    def _complete_uncached(self, request: GenerateRequest) -> Generation:
        start = time.perf_counter()
        attempt = 0
        while True:
            try:
                response = self._call(request)
                break
            except Exception as exc:
                error = classify(exc)
                if not error.retryable or attempt >= self.options.retries:
                    if error.retryable:
                        error.message += f" (gave up after {attempt + 1} attempts)"
                    raise error from None
                delay = self.backoff_base * (2**attempt) * (1 + random.random() * 0.25)
                time.sleep(min(delay, 30.0))
                attempt += 1
        text, finish = _text_of(response)
        usage = _usage_of(response, _import_litellm())
        return Generation(
            text=text,
            calls=attempt + 1,
            usage=usage,
            seconds=time.perf_counter() - start,
            finish_reason=finish,
        )

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

"""Turn a ``--model`` string into a back end.

* unset: ``$FLLM_MODEL``, else the embedded local model;
* ``random`` / ``random:SEED``: uniform choice (no model);
* ``scripted:FILE``: answers read from a file, one per line;
* ``replay:TRACE.jsonl``: answers recorded with ``--trace``;
* ``local`` / ``local:PATH.gguf``: a GGUF model run in process;
* anything else: a LiteLLM model string (``gpt-4o``, ``ollama/llama3``, ``openai/NAME``...).

Real models answer through the on-disk reply cache (``llm/cache.py``) unless
``ModelOptions.cache`` is off or ``$FLLM_NO_CACHE`` is set.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

from fllm_cli.errors import UsageError
from fllm_cli.llm.base import Model

DEFAULT_MODEL = "local"


@dataclass(frozen=True)
class ModelOptions:
    """Settings shared by the back ends that call a real model."""

    api_base: str | None = None
    temperature: float = 0.0
    timeout: float = 60.0
    retries: int = 4
    cache: bool = True
    max_cost: float | None = None


def resolve_model_name(spec: str | None) -> str:
    """Return the model string in force: the flag, then ``$FLLM_MODEL``, then the default."""
    if spec:
        return spec
    return os.environ.get("FLLM_MODEL") or DEFAULT_MODEL


def make_model(spec: str | None, options: ModelOptions | None = None) -> Model:
    """Build the back end named by ``spec``."""
    options = options or ModelOptions()
    name = resolve_model_name(spec).strip()
    if not name:
        raise UsageError("--model is empty")
    kind, _, arg = name.partition(":")
    if kind == "random":
        from fllm_cli.llm.simple import RandomModel

        if arg and not arg.lstrip("-").isdigit():
            raise UsageError(f"random seed must be an integer, got '{arg}'")
        return RandomModel(int(arg) if arg else None)
    if kind == "scripted":
        from fllm_cli.llm.simple import ScriptedModel

        return ScriptedModel.from_file(arg)
    if kind == "replay":
        from fllm_cli.llm.replay import ReplayModel

        return ReplayModel.from_file(arg)
    if kind == "local":
        from fllm_cli.llm.local import make_local_model

        return make_local_model(arg or None, options, cache=_cache_for(options))
    from fllm_cli.llm.litellm_backend import LiteLLMModel

    return LiteLLMModel(name, options, cache=_cache_for(options))


def _cache_for(options: ModelOptions) -> Any:
    """Return the shared on-disk reply cache, or None when ``options.cache`` is off."""
    if not options.cache or os.environ.get("FLLM_NO_CACHE"):
        return None
    from fllm_cli.llm.cache import open_cache

    return open_cache()

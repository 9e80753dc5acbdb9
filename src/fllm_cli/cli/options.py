"""Model options shared by every command that calls a model, declared once."""

from __future__ import annotations

from typing import Annotated

import typer

from fllm_cli.llm.registry import ModelOptions

MODEL_HELP = (
    "Model: a LiteLLM string (gpt-4o, anthropic/..., ollama/llama3, openai/NAME with --api-base), "
    "local[:PATH.gguf] (embedded, the default), random[:SEED], scripted:FILE, replay:TRACE.jsonl. "
    "Default: $FLLM_MODEL, else local."
)

# Optional[...] rather than "X | None": typer reads these annotations at run time on 3.10.
ModelOpt = Annotated[str | None, typer.Option("--model", "-m", help=MODEL_HELP)]
ApiBaseOpt = Annotated[
    str | None,
    typer.Option("--api-base", help="Base URL of an OpenAI-compatible server."),
]
TemperatureOpt = Annotated[
    float, typer.Option("--temperature", min=0.0, max=2.0, help="Sampling temperature.")
]
TimeoutOpt = Annotated[float, typer.Option("--timeout", min=0.1, help="Seconds per model request.")]
RetriesOpt = Annotated[
    int, typer.Option("--retries", min=0, help="Retries on rate limits, timeouts and 5xx.")
]
NoCacheOpt = Annotated[bool, typer.Option("--no-cache", help="Bypass the response cache.")]


def model_options(
    api_base: str | None,
    temperature: float,
    timeout: float,
    retries: int,
    no_cache: bool,
    max_cost: float | None = None,
) -> ModelOptions:
    """Bundle the shared flags."""
    return ModelOptions(
        api_base=api_base,
        temperature=temperature,
        timeout=timeout,
        retries=retries,
        cache=not no_cache,
        max_cost=max_cost,
    )

"""The options every command shares, declared once: model flags, output files, formats, quiet.

The vocabulary is documented in ``docs/cli.md``: ``-o/--out FILE`` is always an output file
(written atomically), ``-f/--format`` always picks how the result is printed (``rich`` is the
human view, ``json`` the machine one), ``-q/--quiet`` prints nothing but errors, and each budget
is named after what it counts.
"""

from __future__ import annotations

import os
from typing import Annotated, Any, TypeVar

import typer

from fllm_cli.cli.common import stderr_console
from fllm_cli.errors import UsageError
from fllm_cli.llm.options import CHOICE_MODES, ModelOptions
from fllm_cli.llm.registry import model_help

# Generated from the back-end table (built-ins and ``fllm.models`` plugins).
MODEL_HELP = model_help()

T = TypeVar("T")

# The defaults of the model flags, in one place.
DEFAULT_TEMPERATURE = 0.0
DEFAULT_TIMEOUT = 60.0
DEFAULT_RETRIES = 4

DataOpt = Annotated[
    str | None,
    typer.Option("--data", metavar="FILE", help="The task's data (JSON), for data domains."),
]
ConstraintsOpt = Annotated[
    str | None,
    typer.Option(
        "--constraints",
        metavar="FILE",
        help="The request's values (JSON) instead of reading them from the task text.",
    ),
]
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
ChoiceModeOpt = Annotated[
    str | None,
    typer.Option(
        "--choice-mode",
        metavar="MODE",
        help="How an API model is asked to choose: "
        + " | ".join(CHOICE_MODES)
        + " (default: $FLLM_CHOICE_MODE, else auto, the best the provider supports).",
    ),
]
NoCacheOpt = Annotated[bool, typer.Option("--no-cache", help="Bypass the response cache.")]
QuietOpt = Annotated[
    bool, typer.Option("--quiet", "-q", help="Print nothing but errors; the exit code tells.")
]
OutOpt = Annotated[
    str | None,
    typer.Option("--out", "-o", metavar="FILE", help="Also write the result to FILE (atomically)."),
]
MaxCostOpt = Annotated[
    float | None,
    typer.Option(
        "--max-cost",
        min=0.0,
        metavar="USD",
        help="Money budget of the run; no model call starts once it is spent.",
    ),
]
MaxSecondsOpt = Annotated[
    float | None,
    typer.Option(
        "--max-seconds",
        "--time-limit",
        min=1.0,
        help="Wall-clock budget of the run; no model call starts after it (exit 3). The"
        " search itself is bounded by work, so a run within it gives the same plan every time.",
    ),
]


def format_option(choices: tuple[str, ...], default: str = "rich") -> Any:
    """Return the ``-f/--format`` option for a command printing one of ``choices``."""
    return typer.Option(default, "--format", "-f", help=" | ".join(choices) + ".")


def check_format(
    value: str, choices: tuple[str, ...], aliases: dict[str, str] | None = None
) -> str:
    """Return the canonical format name, or raise a usage error naming the choices."""
    value = (aliases or {}).get(value, value)
    if value not in choices:
        raise UsageError(f"unknown --format '{value}' (choose {', '.join(choices)})")
    return value


def renamed(new_value: T, old_value: T | None, new: str, old: str, quiet: bool = False) -> T:
    """Merge a renamed option with its hidden old spelling (kept for one release)."""
    if old_value is None:
        return new_value
    if not quiet:
        stderr_console().print(
            f"note: {old} is now {new}; the old name will be removed", highlight=False
        )
    return old_value


def model_options(
    api_base: str | None,
    temperature: float,
    timeout: float,
    retries: int,
    no_cache: bool,
    max_cost: float | None = None,
    choice_mode: str | None = None,
) -> ModelOptions:
    """Bundle the shared flags; ``choice_mode`` unset is ``$FLLM_CHOICE_MODE``, else auto."""
    if api_base is not None and not api_base.strip():
        raise UsageError("--api-base is empty")
    mode = (choice_mode or os.environ.get("FLLM_CHOICE_MODE") or "auto").strip().lower()
    if mode not in CHOICE_MODES:
        where = "--choice-mode" if choice_mode else "$FLLM_CHOICE_MODE"
        raise UsageError(f"unknown {where} '{mode}' (choose {', '.join(CHOICE_MODES)})")
    return ModelOptions(
        api_base=api_base,
        temperature=temperature,
        timeout=timeout,
        retries=retries,
        cache=not no_cache,
        max_cost=max_cost,
        choice_mode=mode,
    )

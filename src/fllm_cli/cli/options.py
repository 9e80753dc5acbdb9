"""The options every command shares, declared once: model flags, output files, formats, quiet.

The vocabulary is documented in ``docs/cli.md``: ``-o/--out FILE`` is always an output file
(written atomically), ``-f/--format`` always picks how the result is printed (``rich`` is the
human view, ``json`` the machine one), ``-q/--quiet`` prints nothing but errors, and each budget
is named after what it counts.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from dataclasses import dataclass, fields
from typing import Annotated, Any, TypeVar

import typer

from fllm_cli import api
from fllm_cli.api import model_options  # the flags' checks live in the api
from fllm_cli.cli.common import stderr_console
from fllm_cli.errors import UsageError

# Generated from the back-end table (built-ins and ``fllm.models`` plugins).
MODEL_HELP = api.model_help()

T = TypeVar("T")

# The defaults of the model flags, in one place.
DEFAULT_TEMPERATURE = 0.0
DEFAULT_TIMEOUT = 60.0
DEFAULT_RETRIES = 4

INPUT_HELP = (
    "A task input: MODALITY or NAME=MODALITY (repeatable), e.g. --input image --input query=text."
)
OUTPUT_HELP = "The modality the task must produce, e.g. --output text."

DataOpt = Annotated[
    str | None,
    typer.Option("--data", metavar="FILE", help="The task's data (JSON), for data domains."),
]
ConstraintsOpt = Annotated[
    str | None,
    typer.Option(
        "--constraints",
        metavar="FILE",
        help="The request's values (JSON), not read from the text.",
    ),
]
ModelOpt = Annotated[
    str | None,
    typer.Option(
        "--model",
        "-m",
        help="The model, e.g. gpt-4o or random:1 (default: $FLLM_MODEL, else local); every"
        " kind, and the model flags: fllm --help.",
    ),
]

# How a command talks to an API model. Every command that calls a model takes these flags; they
# are described once, in `fllm --help` (MODEL_FLAGS_HELP), so that each command's help fits a
# screen.
ApiBaseOpt = Annotated[
    str | None,
    typer.Option("--api-base", hidden=True, help="Base URL of an OpenAI-compatible server."),
]
TemperatureOpt = Annotated[
    float,
    typer.Option("--temperature", min=0.0, max=2.0, hidden=True, help="Sampling temperature."),
]
TimeoutOpt = Annotated[
    float, typer.Option("--timeout", min=0.1, hidden=True, help="Seconds per model request.")
]
RetriesOpt = Annotated[
    int,
    typer.Option("--retries", min=0, hidden=True, help="Retries on rate limits, timeouts and 5xx."),
]
CHOICE_MODE_HELP = (
    "how an API model is asked to choose: "
    + " | ".join(api.CHOICE_MODES)
    + " (default: $FLLM_CHOICE_MODE, else auto, the best the provider supports)"
)
ChoiceModeOpt = Annotated[
    str | None,
    typer.Option(
        "--choice-mode", metavar="MODE", hidden=True, help=CHOICE_MODE_HELP.capitalize() + "."
    ),
]
NoCacheOpt = Annotated[
    bool, typer.Option("--no-cache", hidden=True, help="Bypass the response cache.")
]
MODEL_FLAGS_HELP = (
    "Model flags of every command that calls a model: --api-base URL (an OpenAI-compatible "
    f"server); --temperature NUMBER (0 to 2, default {DEFAULT_TEMPERATURE}); --timeout SECONDS "
    f"(per request, default {DEFAULT_TIMEOUT}); --retries N (on rate limits, timeouts and 5xx, "
    f"default {DEFAULT_RETRIES}); --no-cache (bypass the response cache); --choice-mode MODE "
    f"({CHOICE_MODE_HELP})."
)
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
        help="Money budget; no model call starts once it is spent.",
    ),
]
MaxSecondsOpt = Annotated[
    float | None,
    typer.Option(
        "--max-seconds",
        min=1.0,
        help="Wall-clock budget; no model call starts after it (exit 3). The search is bounded"
        " by work: within it, a run gives the same plan every time.",
    ),
]

# The old name of --max-seconds (fllm plan), still read, no longer shown.
TimeLimitOpt = Annotated[float | None, typer.Option("--time-limit", min=1.0, hidden=True)]


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


# -- option groups: flags several commands take, declared once ---------------------------------
#
# A command takes a group as one parameter (``flags: ModelFlags``) and is decorated with
# ``@flag_groups``; typer then sees the group's options in that parameter's place, in the order
# the group lists them, and the command gets them bundled.

F = TypeVar("F", bound=Callable[..., Any])


@dataclass(frozen=True)
class ModelFlags:
    """How a command talks to an API model (``--model`` itself stays a command's own)."""

    api_base: ApiBaseOpt = None
    temperature: TemperatureOpt = DEFAULT_TEMPERATURE
    timeout: TimeoutOpt = DEFAULT_TIMEOUT
    retries: RetriesOpt = DEFAULT_RETRIES
    no_cache: NoCacheOpt = False
    choice_mode: ChoiceModeOpt = None

    def options(self, max_cost: float | None = None) -> api.ModelOptions:
        """Return the model options these flags (and a money budget) give."""
        return model_options(
            self.api_base,
            self.temperature,
            self.timeout,
            self.retries,
            self.no_cache,
            max_cost,
            self.choice_mode,
        )


DEFAULT_SOLVE_SECONDS = 300.0


@dataclass(frozen=True)
class SolveFlags:
    """The budgets of one LLMFP solve (``fllm solve`` and ``fllm solve-bench``)."""

    attempts: Annotated[
        int,
        typer.Option(
            "--max-attempts",
            min=1,
            help="Runs of generated code per round (a runtime error sends the traceback back).",
        ),
    ] = 5
    rounds: Annotated[int, typer.Option("--max-rounds", min=1, help="Self-assessment rounds.")] = 5
    code_timeout: Annotated[
        float,
        typer.Option(
            "--code-timeout", min=0.5, help="Wall-clock seconds per run of generated code."
        ),
    ] = 30.0
    memory_mb: Annotated[
        int, typer.Option("--memory-mb", min=64, help="Memory limit of the sandbox (MB).")
    ] = 1024
    horizon: Annotated[
        int | None,
        typer.Option(
            "--max-horizon",
            min=1,
            max=1000,
            help="Largest plan length tried (multi-step; default from the problem file).",
        ),
    ] = None
    old_horizon: Annotated[
        int | None, typer.Option("--max-steps", min=1, max=1000, hidden=True)
    ] = None
    seconds: Annotated[
        float,
        typer.Option(
            "--max-seconds",
            min=1.0,
            help="Wall-clock budget of one query; no stage starts after it (exit 3).",
        ),
    ] = DEFAULT_SOLVE_SECONDS
    unisolated: Annotated[
        bool,
        typer.Option(
            "--unisolated",
            help="Run generated code even where the kernel cannot isolate it "
            "(see docs/security.md).",
        ),
    ] = False

    def settings(self, quiet: bool) -> api.SolveSettings:
        """Return the solve's settings (the old --max-steps spelling noted unless ``quiet``)."""
        horizon = renamed(self.horizon, self.old_horizon, "--max-horizon", "--max-steps", quiet)
        return api.solve_settings(
            attempts=self.attempts,
            rounds=self.rounds,
            code_timeout=self.code_timeout,
            memory_mb=self.memory_mb,
            horizon=horizon,
            seconds=self.seconds,
            unisolated=self.unisolated,
        )


GROUPS: tuple[type, ...] = (ModelFlags, SolveFlags)


def flag_groups(command: F) -> F:
    """Show typer each group parameter of ``command`` as its options; pass them bundled."""
    signature = inspect.signature(command, eval_str=True)
    shown: list[inspect.Parameter] = []
    groups: dict[str, tuple[type, list[str]]] = {}
    for param in signature.parameters.values():
        if param.annotation not in GROUPS:
            shown.append(param)
            continue
        group = param.annotation
        hints = inspect.get_annotations(group, eval_str=True)
        names = []
        for field in fields(group):
            name = f"{param.name}_{field.name}"  # never a command's own parameter name
            names.append(name)
            shown.append(
                inspect.Parameter(
                    name, param.kind, default=field.default, annotation=hints[field.name]
                )
            )
        groups[param.name] = (group, names)

    @functools.wraps(command)
    def run(*args: Any, **kwargs: Any) -> Any:
        for param, (group, names) in groups.items():
            prefix = len(param) + 1
            kwargs[param] = group(**{n[prefix:]: kwargs.pop(n) for n in names})
        return command(*args, **kwargs)

    new = signature.replace(parameters=shown)
    run.__signature__ = new  # type: ignore[attr-defined]
    run.__annotations__ = {p.name: p.annotation for p in shown}
    return run  # type: ignore[return-value]

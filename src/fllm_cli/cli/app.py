"""The ``fllm`` command."""

from __future__ import annotations

import importlib
import importlib.util
import os
import sys

import click
import typer

from fllm_cli import __version__
from fllm_cli.cli.common import report_error, stderr_console
from fllm_cli.errors import FllmError

app = typer.Typer(
    name="fllm",
    help=(
        "Controllable LLM planning: state the rules a plan must follow as a grammar or automaton, "
        "and fllm makes a model plan inside them, so every plan it returns is valid."
    ),
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    rich_markup_mode="rich",
    context_settings={"help_option_names": ["-h", "--help"]},
)

# Each module defines ``register(app)``; modules are listed in the order commands appear.
COMMAND_MODULES = (
    "fllm_cli.cli.plan",
    "fllm_cli.cli.core",
    "fllm_cli.cli.bench",
    "fllm_cli.cli.agent",
    "fllm_cli.cli.solve",
)


def _version(value: bool) -> None:
    if value:
        typer.echo(f"fllm {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: bool = typer.Option(
        False, "--version", callback=_version, is_eager=True, help="Print the version and exit."
    ),
) -> None:
    """Controllable LLM planning."""


for _name in COMMAND_MODULES:
    if importlib.util.find_spec(_name) is not None:
        importlib.import_module(_name).register(app)


def main(argv: list[str] | None = None) -> None:
    """Run the CLI; every FllmError becomes a one-line message and an exit code."""
    try:
        result = app(args=argv, standalone_mode=False)
    except FllmError as error:
        sys.exit(report_error(error))
    except click.exceptions.Abort:
        stderr_console().print("[red]interrupted[/]")
        sys.exit(130)
    except KeyboardInterrupt:
        stderr_console().print("[red]interrupted[/]")
        sys.exit(130)
    except click.exceptions.Exit as exc:
        sys.exit(exc.exit_code)
    except click.ClickException as exc:
        exc.show()
        sys.exit(exc.exit_code)
    except BrokenPipeError:
        sys.exit(0)
    except Exception as exc:
        if os.environ.get("FLLM_DEBUG"):
            raise
        where = ""
        tb = exc.__traceback__
        while tb is not None and tb.tb_next is not None:
            tb = tb.tb_next
        if tb is not None:
            where = f" at {os.path.basename(tb.tb_frame.f_code.co_filename)}:{tb.tb_lineno}"
        stderr_console().print(
            f"[bold red]internal error:[/] {type(exc).__name__}: {exc}{where} "
            "(a bug in fllm; set FLLM_DEBUG=1 for the traceback and please report it)",
            markup=True,
            highlight=False,
            soft_wrap=True,
        )
        sys.exit(70)
    sys.exit(result if isinstance(result, int) else 0)

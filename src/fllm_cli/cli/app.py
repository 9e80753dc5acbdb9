"""The ``fllm`` command."""

from __future__ import annotations

import importlib
import importlib.util
import os
import sys
from typing import Any

import typer
from rich.markup import escape

from fllm_cli import __version__
from fllm_cli.cli import manhelp
from fllm_cli.cli.common import report_error, report_usage, stderr_console
from fllm_cli.cli.options import MODEL_FLAGS_HELP, MODEL_HELP
from fllm_cli.errors import FllmError


def _new_app() -> typer.Typer:
    manhelp.install()
    app = typer.Typer(
        name="fllm",
        help=(
            "Controllable LLM planning: state the rules a plan must follow as a grammar or "
            "automaton, and fllm makes a model plan inside them, so every plan it returns is valid."
            "\n\nShell completion: run 'fllm --install-completion' once (bash, zsh, fish or "
            "PowerShell), then press Tab after fllm for commands, options and files."
        ),
        epilog=escape(MODEL_HELP) + "\n\n" + escape(MODEL_FLAGS_HELP),
        no_args_is_help=True,
        add_completion=True,
        pretty_exceptions_enable=False,
        rich_markup_mode="rich",
        context_settings={"help_option_names": ["-h", "--help"]},
    )
    app.callback()(_root)
    return app


# Each command module defines ``register(app)``. The table says which module registers which
# command, in the order commands appear in --help.
COMMANDS = {
    "plan": "fllm_cli.cli.plan",
    "validate": "fllm_cli.cli.core",
    "render-pda": "fllm_cli.cli.core",
    "verify": "fllm_cli.cli.core",
    "bench": "fllm_cli.cli.bench",
    "report": "fllm_cli.cli.report",
    "agent": "fllm_cli.cli.agent",
    "check-trace": "fllm_cli.cli.agent",
    "solve": "fllm_cli.cli.solve",
    "solve-bench": "fllm_cli.cli.solve",
    "import-tools": "fllm_cli.cli.tools",
    "run": "fllm_cli.cli.tools",
    "mcp": "fllm_cli.cli.serve",
}
COMMAND_MODULES = tuple(dict.fromkeys(COMMANDS.values()))


def _version(value: bool) -> None:
    if value:
        typer.echo(f"fllm {__version__}")
        raise typer.Exit()


def _root(
    version: bool = typer.Option(
        False, "--version", callback=_version, is_eager=True, help="Print the version and exit."
    ),
) -> None:
    """Controllable LLM planning."""


def build_app(argv: list[str] | None = None) -> typer.Typer:
    """Return the CLI with the commands ``argv`` needs.

    When the first word of ``argv`` names a command, only the module of that command is
    imported: `fllm plan` does not pay at start-up for the agent runtime, the solver pipeline or
    the benchmark code. Anything else (``--help``, a misspelt command, no ``argv``) gets every
    command, so help and "did you mean" see them all.
    """
    words = [a for a in argv or [] if not a.startswith("-")]
    first = words[0] if words else None
    wanted = (COMMANDS[first],) if first in COMMANDS else COMMAND_MODULES
    app = _new_app()
    for name in wanted:
        if importlib.util.find_spec(name) is not None:
            importlib.import_module(name).register(app)
    return app


def _family(exc: BaseException) -> set[str]:
    """Return the class names in ``exc``'s ancestry.

    typer has carried click's exceptions under several module paths (click itself, and since
    0.29 its own copy), so the funnel recognises them by name, not by one import.
    """
    return {cls.__name__ for cls in type(exc).__mro__}


def _given_value(exc: Any, argv: list[str]) -> str | None:
    """Return the value the user gave to the option a BadParameter is about, if we can see it."""
    opts = getattr(getattr(exc, "param", None), "opts", None) or []
    for index, token in enumerate(argv):
        for opt in opts:
            if token == opt and index + 1 < len(argv):
                return argv[index + 1]
            if opt.startswith("--") and token.startswith(opt + "="):
                return token[len(opt) + 1 :]
    return None


def usage_line(exc: Any, argv: list[str] | None = None) -> str:
    """Return one line for a command-line misuse, naming the command and pointing to --help."""
    ctx = getattr(exc, "ctx", None)
    command = getattr(ctx, "command_path", None) or "fllm"
    try:
        message = exc.format_message()
    except Exception:
        message = str(exc)
    message = " ".join(str(message).split()).rstrip(".")
    message = message.replace(" (Possible options:", " (possible options:")
    value = _given_value(exc, argv if argv is not None else sys.argv[1:])
    if value is not None and repr(value) not in message and f"'{value}'" not in message:
        message += f" (got {value!r})"
    if message[:1].isupper() and message[1:2].islower():
        message = message[0].lower() + message[1:]
    return f"{command}: {message} (see '{command} --help')"


def _internal(exc: BaseException) -> int:
    if os.environ.get("FLLM_DEBUG"):
        raise exc
    where = ""
    tb = exc.__traceback__
    while tb is not None and tb.tb_next is not None:
        tb = tb.tb_next
    if tb is not None:
        where = f" at {os.path.basename(tb.tb_frame.f_code.co_filename)}:{tb.tb_lineno}"
    stderr_console().print(
        f"[bold red]internal error:[/] {type(exc).__name__}: {escape(str(exc))}{where} "
        "(a bug in fllm; set FLLM_DEBUG=1 for the traceback and please report it)",
        markup=True,
        highlight=False,
        soft_wrap=True,
    )
    return 70


def _click_outcome(exc: BaseException, argv: list[str]) -> int | None:
    """Map an exception of click's family to an exit code (after printing), else None."""
    names = _family(exc)
    if "NoArgsIsHelpError" in names:
        # A bare command: its help is what the user needs; still a misuse, so exit 2. (Rich help
        # is printed while the exception is made; plain help comes back as its message.)
        text = str(getattr(exc, "message", "") or "")
        if text.strip():
            sys.stderr.write(text.rstrip("\n") + "\n")
        return 2
    if "UsageError" in names:
        report_usage(usage_line(exc, argv))
        return 2
    if "Abort" in names:
        stderr_console().print("[red]interrupted[/]")
        return 130
    if "Exit" in names and hasattr(exc, "exit_code"):
        return int(exc.exit_code or 0)
    if "ClickException" in names:
        report_usage(" ".join(str(getattr(exc, "message", exc)).split()))
        return int(getattr(exc, "exit_code", 1) or 1)
    return None


def main(argv: list[str] | None = None) -> None:
    """Run the CLI; every error becomes a one-line message and an exit code."""
    args = sys.argv[1:] if argv is None else argv
    try:
        result = build_app(args)(args=args, standalone_mode=False, prog_name="fllm")
    except FllmError as error:
        sys.exit(report_error(error))
    except KeyboardInterrupt:
        stderr_console().print("[red]interrupted[/]")
        sys.exit(130)
    except BrokenPipeError:
        _quiet_broken_pipe()
        sys.exit(0)
    except Exception as exc:
        code = _click_outcome(exc, args)
        sys.exit(code if code is not None else _internal(exc))
    sys.exit(result if isinstance(result, int) else 0)


def _quiet_broken_pipe() -> None:
    """Stop Python from complaining again when it flushes a closed stdout at exit."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass

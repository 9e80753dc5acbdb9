"""Option groups: flags several commands share are declared once and reach a command bundled."""

from __future__ import annotations

import typer
from typer.testing import CliRunner

from fllm_cli.cli.options import ModelFlags, SolveFlags, flag_groups


def _app() -> tuple[typer.Typer, list[object]]:
    seen: list[object] = []
    app = typer.Typer()

    @app.command()
    @flag_groups
    def command(
        name: str = typer.Argument(...),
        flags: ModelFlags = ModelFlags(),
        budgets: SolveFlags = SolveFlags(),
        quiet: bool = typer.Option(False, "--quiet"),
    ) -> None:
        seen.extend([name, flags, budgets, quiet])

    return app, seen


def test_a_group_is_its_options_in_its_place_and_comes_back_bundled() -> None:
    app, seen = _app()
    result = CliRunner().invoke(
        app, ["x", "--temperature", "0.5", "--no-cache", "--max-rounds", "2", "--quiet"]
    )
    assert result.exit_code == 0, result.output
    name, flags, budgets, quiet = seen
    assert name == "x" and quiet is True
    assert flags == ModelFlags(temperature=0.5, no_cache=True)
    assert budgets == SolveFlags(rounds=2)
    options = flags.options(max_cost=1.0)  # type: ignore[attr-defined]
    assert options.temperature == 0.5 and not options.cache and options.max_cost == 1.0


def test_a_group_keeps_the_ranges_of_its_options() -> None:
    app, _ = _app()
    result = CliRunner().invoke(app, ["x", "--temperature", "3"])
    assert result.exit_code == 2


def test_defaults_are_the_groups_own() -> None:
    app, seen = _app()
    assert CliRunner().invoke(app, ["x"]).exit_code == 0
    assert seen[1] == ModelFlags() and seen[2] == SolveFlags()

"""Live progress on stderr for every command that calls a model.

On a terminal one line shows the stage, model calls, tokens and elapsed time, refreshed while
the model works; off a terminal (a pipe, a file, CI) nothing is printed, so scripts see only
results and errors.
"""

from __future__ import annotations

from types import TracebackType
from typing import Any

from rich.markup import escape
from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

from fllm_cli import api
from fllm_cli.cli.common import stderr_console


class LiveStatus:
    """A one-line status display; every method is a no-op when it is not shown."""

    def __init__(self, label: str, enabled: bool = True) -> None:
        console = stderr_console()
        self.shown = enabled and console.is_terminal
        self.label = label
        self._detail = ""
        self._progress: Progress | None = None
        self._task: Any = None
        if self.shown:
            self._progress = Progress(
                SpinnerColumn(),
                TextColumn("{task.description}"),
                TextColumn("[dim]{task.fields[counts]}[/]"),
                TimeElapsedColumn(),
                console=console,
                transient=True,
            )
            self._task = self._progress.add_task(label, total=None, counts="")

    def __enter__(self) -> LiveStatus:
        if self._progress is not None:
            self._progress.start()
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        value: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self._progress is not None:
            self._progress.stop()

    def stage(self, text: str) -> None:
        """Show what the run is doing now."""
        self._detail = text
        if self._progress is not None:
            self._progress.update(self._task, description=f"{self.label}: {escape(text)}")

    def calls(self, tally: api.CallTally) -> None:
        """Show the model calls, tokens and spend so far (the stage comes from the request)."""
        if self._progress is None:
            return
        counts = f"{tally.calls} model calls, {tally.tokens} tokens"
        if tally.cost_usd:
            counts += f", ${tally.cost_usd:.4f}"
        self._progress.update(
            self._task,
            description=f"{self.label}: {escape(self._detail or tally.stage)}",
            counts=counts,
        )

    def observe(
        self,
        model: str | api.Model | None,
        options: api.ModelOptions | None = None,
        max_seconds: float | None = None,
        max_cost: float | None = None,
    ) -> api.RunMeter:
        """Return the run's meter around ``model``: it updates this display at each call."""
        return api.metered_model(
            model, options, on_call=self.calls, max_seconds=max_seconds, max_cost=max_cost
        )

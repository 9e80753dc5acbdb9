"""Error hierarchy: the core raises these, the CLI turns them into one-line messages."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from fllm_cli.diagnostics import Diagnostic, Location


class FllmError(Exception):
    """Root of every error a user may see; never shown with a traceback."""

    exit_code = 1
    # What a run produced before it failed (steps so far, usage), for a partial output file.
    partial: dict[str, Any] | None = None

    def __init__(
        self, message: str, *, hint: str | None = None, location: Location | None = None
    ) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint
        self.location = location

    def one_line(self) -> str:
        """Return ``path:line:col: message (hint)`` on a single line."""
        where = f"{self.location}: " if self.location is not None else ""
        text = f"{where}{self.message}"
        if self.hint:
            text += f" (hint: {self.hint})"
        return " ".join(text.split("\n"))


class UsageError(FllmError):
    """Bad command-line flags or arguments."""

    exit_code = 2


class SpecError(FllmError):
    """A spec file has errors; carries every diagnostic found."""

    def __init__(self, diagnostics: Sequence[Diagnostic], message: str | None = None) -> None:
        errors = [d for d in diagnostics if d.severity == "error"]
        first = errors[0] if errors else (diagnostics[0] if diagnostics else None)
        text = message or (first.message if first else "invalid spec")
        if len(errors) > 1:
            text += f" (and {len(errors) - 1} more error(s); run `fllm validate` for all)"
        super().__init__(text, location=first.location if first else None)
        self.diagnostics = list(diagnostics)


class PlanFileError(FllmError):
    """A plan file cannot be read or parsed."""


class NoPlanError(FllmError):
    """No valid plan exists for the task, or none was found within the budget."""


class BudgetExceeded(FllmError):
    """A planning budget (LLM calls, backtracks, steps, cost) ran out."""


class TimeBudgetExceeded(BudgetExceeded):
    """A run's wall-clock budget ran out; ``stage`` says where it was."""

    exit_code = 3

    def __init__(self, message: str, *, hint: str | None = None, stage: str = "") -> None:
        super().__init__(message, hint=hint)
        self.stage = stage


class IncompleteRun(FllmError):
    """A run ended without what was asked for (no answer, no solver result); output is kept."""


class BackendError(FllmError):
    """A model provider failed; ``retryable`` says whether retrying may help."""

    def __init__(self, message: str, *, retryable: bool = False, hint: str | None = None) -> None:
        super().__init__(message, hint=hint)
        self.retryable = retryable


class ContextOverflow(BackendError):
    """The prompt no longer fits the model's context window."""


class TraceMismatch(FllmError):
    """A replayed run asked a prompt that differs from the recording."""


class SandboxUnavailable(FllmError):
    """The machine cannot isolate generated code (seccomp or Landlock missing) and the caller
    did not opt in to running it without that isolation."""

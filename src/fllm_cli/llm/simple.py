"""Back ends that need no model: seeded random choice and a scripted queue for tests."""

from __future__ import annotations

import random
from collections import deque
from collections.abc import Callable, Iterable
from typing import Any, Union

from fllm_cli.errors import BackendError, UsageError
from fllm_cli.llm.base import (
    ChoiceRequest,
    ChoiceResult,
    GenerateRequest,
    Generation,
    Model,
    TextModel,
)
from fllm_cli.llm.options import ModelOptions
from fllm_cli.textio import read_text


class RandomModel(Model):
    """Uniform choice among the offered options; a baseline and a test tool."""

    def __init__(self, seed: int | None = None) -> None:
        self.seed = seed
        self.rng = random.Random(seed)
        self.name = "random" if seed is None else f"random:{seed}"

    def choose(self, request: ChoiceRequest) -> ChoiceResult:
        """Pick uniformly at random."""
        return ChoiceResult(index=self.rng.randrange(len(request.options)))

    def generate(self, request: GenerateRequest) -> Generation:
        """Generate nothing: callers force what the formal model requires."""
        return Generation(text="", calls=0)


Answer = Union[str, int, Callable[[str, tuple[str, ...]], str]]  # noqa: UP007


class ScriptedModel(TextModel):
    """Answers from a queue, parsed like a real reply; records every prompt it is asked.

    An answer may be a string (the raw reply), an int (shorthand for that number as text) or a
    callable ``(prompt, options) -> reply``.
    """

    def __init__(self, answers: Iterable[Answer] = (), name: str = "scripted") -> None:
        self.answers: deque[Answer] = deque(answers)
        self.name = name
        self.prompts: list[str] = []
        self.history: list[dict[str, Any]] = []
        self._options: tuple[str, ...] = ()

    def choose(self, request: ChoiceRequest) -> ChoiceResult:
        """Parse the next scripted answer as a reply to this choice."""
        self._options = request.options
        return super().choose(request)

    def generate(self, request: GenerateRequest) -> Generation:
        """Return the next scripted answer as text."""
        self.prompts.append(request.prompt)
        if not self.answers:
            raise BackendError(
                f"scripted model ran out of answers after {len(self.prompts) - 1} replies"
            )
        answer = self.answers.popleft()
        if callable(answer):
            text = answer(request.prompt, self._options)
        else:
            text = str(answer)
        for stop in request.stop:
            if stop and stop in text:
                text = text[: text.index(stop)]
        self.history.append({"prompt": request.prompt, "reply": text, "kind": request.kind})
        return Generation(text=text, calls=1)

    @classmethod
    def from_file(cls, path: str) -> ScriptedModel:
        """Read answers, one per line, from ``path`` (the ``scripted:FILE`` model)."""
        lines = read_text(path, "file of scripted answers").splitlines()
        return cls([line for line in lines if line.strip()], name=f"scripted:{path}")


def random_factory(arg: str, options: ModelOptions) -> RandomModel:
    """Build ``random`` / ``random:SEED``."""
    if arg and not arg.lstrip("-").isdigit():
        raise UsageError(f"random seed must be an integer, got '{arg}'")
    return RandomModel(int(arg) if arg else None)


def scripted_factory(arg: str, options: ModelOptions) -> ScriptedModel:
    """Build ``scripted:FILE``."""
    return ScriptedModel.from_file(arg)

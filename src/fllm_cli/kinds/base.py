"""The interface every domain kind implements.

A *kind* (tool chains, grammars, hand-written automata, …) knows how to check a domain of its
kind, compile it for one task, and describe the result. Everything above this package — the
library API, the command line, the benchmark — talks to a :class:`Compiled` domain and never
asks which kind it is. Adding a kind means one new module here and one entry in the registry.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any, ClassVar

from fllm_cli.automaton.pda import PDA, Config
from fllm_cli.diagnostics import Diagnostic
from fllm_cli.domain.model import Domain, Task
from fllm_cli.errors import UsageError
from fllm_cli.grammar.cfg import Grammar
from fllm_cli.verify import Verdict


class Compiled(ABC):
    """A domain compiled for one task: its automaton, look-ahead, prompts and plan documents."""

    grammar: Grammar | None = None  # the task grammar, for kinds built from one

    def __init__(
        self, domain: Domain, task: Task, pda: PDA, lookahead: Any, variables: dict[str, str]
    ) -> None:
        self.domain = domain
        self.task = task
        self.pda = pda
        self.lookahead = lookahead
        self.vars = dict(variables)

    @abstractmethod
    def prompter(self) -> Any:
        """Return the object that turns choice points into prompts (``search`` uses it)."""

    @abstractmethod
    def verify(self, word: list[str]) -> Verdict:
        """Decide whether ``word`` is a valid plan of this task."""

    @abstractmethod
    def document(
        self, final: Config, model: str, stats: dict[str, Any] | None = None
    ) -> tuple[dict[str, Any], Any]:
        """Return the plan document of an accepting configuration and its derivation (or None)."""

    @abstractmethod
    def verified_document(self, verdict: Verdict, model: str = "") -> dict[str, Any]:
        """Return the plan document of a word that ``verify`` accepted."""

    @abstractmethod
    def steps(self, verdict: Verdict) -> list[str]:
        """Return the execution-order lines of a valid plan."""

    @abstractmethod
    def no_plan(self) -> tuple[str, str | None]:
        """Return (message, hint) for a task that no plan can satisfy."""


class Kind(ABC):
    """How one kind of domain is checked and compiled."""

    name: ClassVar[str]
    # True when a task has an interface (named inputs, one output) and plans are tool calls on
    # them; the interface can then be asked of the model before planning.
    has_interface: ClassVar[bool] = False
    # True when each task brings its own data (``--data``): plans are made by ``plan_data``.
    takes_data: ClassVar[bool] = False

    @abstractmethod
    def check(self, domain: Domain) -> list[Diagnostic]:
        """Return every problem of a parsed domain of this kind (structure, then analyses)."""

    @abstractmethod
    def summary(self, domain: Domain) -> str:
        """Return a one-line description for ``fllm validate``."""

    @abstractmethod
    def compile(
        self,
        domain: Domain,
        task: str,
        inputs: list[str],
        output: str | None,
        variables: dict[str, str],
    ) -> Compiled:
        """Compile the domain for one task."""

    def refuse_interface(self, domain: Domain, inputs: list[str], output: str | None) -> None:
        """Raise a usage error when a kind without a task interface is given one."""
        if inputs or output:
            raise UsageError(
                f"'{domain.name}' is {self.name_with_article} domain: --input/--output do not apply"
            )

    @property
    def name_with_article(self) -> str:
        return f"{'an' if self.name[0] in 'aeiou' else 'a'} {self.name}"

    def overview(self, domain: Domain, variables: dict[str, str]) -> PDA:
        """Return the automaton to show when no task is given (``fllm render-pda``)."""
        return self.compile(domain, "", [], None, variables).pda

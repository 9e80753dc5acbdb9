"""The interface every domain kind implements.

A *kind* (tool chains, grammars, hand-written automata, …) knows how to check a domain of its
kind, compile it for one task, and describe the result. Everything above this package — the
library API, the command line, the benchmark — talks to a :class:`Compiled` domain and never
asks which kind it is. Adding a kind means one new module here and one row in the table of
kinds (:data:`fllm_cli.domain.kinds.KINDS`), which tells the loader the kind's own sections.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any, ClassVar

from fllm_cli.automaton.pda import PDA, Config
from fllm_cli.diagnostics import Diagnostic
from fllm_cli.domain.check import check_templates
from fllm_cli.domain.model import Domain, Task
from fllm_cli.domain.templates import template_for
from fllm_cli.domain.variables import resolve_vars
from fllm_cli.errors import NoPlanError, UsageError
from fllm_cli.grammar.cfg import Grammar
from fllm_cli.llm.base import ChoiceResult, Model
from fllm_cli.llm.meter import ModelStats, RunMeter
from fllm_cli.prompts import render
from fllm_cli.search.beam import BeamSearch
from fllm_cli.search.interface import infer_interface
from fllm_cli.search.planner import Budgets, Event, Planner, PlanStats
from fllm_cli.search.proposal import propose
from fllm_cli.search.relevance import Relevance
from fllm_cli.search.strategy import STRATEGIES, Strategy, credit
from fllm_cli.verify import Verdict

Records = list[dict[str, Any]]

# How the plan JSON ("why") and --explain say a plan was ranked by evidence against tools only.
LEAST_OPPOSED = "nothing in the request points at a tool: the plan the evidence opposes least"


@dataclass
class PlanResult:
    """A plan and how it was made."""

    document: dict[str, Any]
    derivation: Any  # the derivation tree (grammar-based kinds) or None
    stats: PlanStats
    trace: Records = field(default_factory=list)


@dataclass
class PlanJob:
    """What a caller asks of one planning run, in terms every kind understands.

    ``inputs``/``output`` name the task's interface (kinds that have one; asked of the model
    when both are missing), ``variables`` the scenario values, ``data`` the task's own data and
    ``request`` the request's values given instead of read from the text (data-bound kinds).
    Choice records go to ``records`` as they happen, so a caller keeps them when planning fails.
    """

    task: str
    inputs: list[str] = field(default_factory=list)
    output: str | None = None
    variables: dict[str, str] | None = None
    data: Any = None
    request: dict[str, Any] | None = None
    budgets: Budgets | None = None
    on_event: Event | None = None
    records: Records = field(default_factory=list)
    strategy: Strategy = STRATEGIES["meaning"]  # how plans are decided (search/strategy.py)


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

    def check_document(self, doc: dict[str, Any], verdict: Verdict) -> Verdict:
        """Check what a valid plan's document adds to its word (notes); the kinds without
        such text accept the verdict as it is."""
        return verdict

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

    def check_planned(self, word: list[str], derivation: Any) -> str | None:
        """Check a plan the search produced, independently of the search; return what is
        wrong, or None."""
        verdict = self.verify(word)
        return None if verdict.valid else verdict.reason

    def check_solvable(self) -> None:
        """Refuse a task with no valid plan before any model call, saying why."""
        if self.lookahead.word_exists():
            return
        message, hint = self.no_plan()
        raise NoPlanError(message, hint=hint)

    def evidence(self, strategy: Strategy) -> tuple[Relevance, frozenset[str]] | None:
        """Return how the request scores the plan symbols by ``strategy``'s signals, and which
        symbols are scored, for plan-level search; None for kinds that do not describe their
        symbols (and for strategies that plan step by step)."""
        return None

    def plan_judge(self) -> Callable[[list[str]], float] | None:
        """Return what a complete plan's shape costs in plan-level search (None: nothing)."""
        return None

    def describe_candidates(self, candidates: list[tuple[str, ...]]) -> tuple[str, list[str]]:
        """Return the prompt and option texts of a choice among complete plans."""
        options = [", ".join(c) if c else "(no steps)" for c in candidates]
        prompt = render(
            template_for(self.domain, "candidates"),
            {
                "task": self.task.text,
                "domain": self.domain.name,
                "intro": self.domain.intro,
                "question": "Which set of steps does the task need?",
                "choices": options,
                "chosen": [],
            },
            self.domain.prompt_dirs,
        )
        return prompt, options

    def plan(
        self,
        model: Model,
        budgets: Budgets | None = None,
        on_event: Event | None = None,
        records: Records | None = None,
        strategy: Strategy = STRATEGIES["greedy"],
    ) -> PlanResult:
        """Search the automaton with ``model`` choosing; return the verified plan.

        A plan-level ``strategy`` scores whole plans by the request's evidence and asks the
        model only among ties (:mod:`fllm_cli.search.beam`); kinds without evidence, and
        requests whose evidence says nothing for or against any symbol, are planned step by
        step as in the paper.
        """
        self.check_solvable()
        trace: Records = [] if records is None else records
        budgets = budgets or Budgets()
        final, stats, used = None, PlanStats(), "greedy"
        evidence = self.evidence(strategy) if strategy.plan_level else None
        if evidence is not None:
            meter = RunMeter.wrap(model).fork(max_cost=budgets.max_cost, records=trace, stats=stats)
            beam = BeamSearch(
                self.pda, self.lookahead, evidence[0], evidence[1], budgets, stats=stats,
                judge=self.plan_judge(),
            )  # fmt: skip
            final = beam.run(meter, self.describe_candidates)
            used = strategy.name if final is not None else "greedy"
        if final is None:
            # The same stats object: the record of the run holds the beam's work, then this.
            planner = Planner(
                self.pda, self.lookahead, model, self.prompter(), budgets, on_event,
                trace=trace, stats=stats,
            )  # fmt: skip
            final = planner.run()
        doc, derivation = self.document(final, model.name, stats.as_dict())
        doc["search"] = used
        if evidence is not None and used != "greedy":
            # What made each step relevant (plan JSON "why"; `fllm plan --explain`).
            doc["why"] = {"steps": credit(evidence[0], evidence[1], final.word_list())}
            if evidence[0].silent:  # ranked by evidence against tools only (search/beam.py)
                doc["why"]["plan"] = LEAST_OPPOSED
        wrong = self.check_planned(doc["word"], derivation)
        if wrong is not None:  # a bug, never a user's problem: refuse to present it as valid
            raise NoPlanError(f"internal error: planned word failed verification: {wrong}")
        meter = RunMeter.wrap(model).fork(max_cost=budgets.max_cost, records=trace, stats=stats)
        if self.finish(doc, final, meter, budgets):
            doc["stats"] = stats.as_dict()
        return PlanResult(doc, derivation, stats, trace)

    def finish(self, doc: dict[str, Any], final: Config, meter: RunMeter, budgets: Budgets) -> bool:
        """Complete a found plan's document with model-written text (notes); True if it asked.

        The plan itself is fixed by then: what is written here never changes its validity.
        """
        return False


class Kind(ABC):
    """How one kind of domain is checked and compiled."""

    name: ClassVar[str]
    # True when a task has an interface (named inputs, one output) and plans are tool calls on
    # them; the interface can then be asked of the model before planning.
    has_interface: ClassVar[bool] = False
    # True when each task brings its own data (``--data``): plans are made by ``plan_data``.
    takes_data: ClassVar[bool] = False

    def check(self, domain: Domain) -> list[Diagnostic]:
        """Return every problem of a parsed domain of this kind: its structure, then what
        compiling it finds (where the structure allows), then its prompt templates."""
        found = self.check_structure(domain)
        return found + self.analyses(domain, found) + check_templates(domain)

    def check_structure(self, domain: Domain) -> list[Diagnostic]:
        """Return the problems of the domain's structure, found without compiling it."""
        return []

    def analyses(self, domain: Domain, structure: list[Diagnostic]) -> list[Diagnostic]:
        """Return what compiling the domain finds (can a plan exist, ...); ``structure`` holds
        the structure's problems, which may leave nothing to compile."""
        return []

    @abstractmethod
    def summary(self, domain: Domain) -> str:
        """Return a one-line description for ``fllm validate``."""

    def compile(
        self,
        domain: Domain,
        task: str,
        inputs: list[str],
        output: str | None,
        variables: dict[str, str],
    ) -> Compiled:
        """Compile the domain for one task. This is for kinds without a task interface: they
        refuse one and compile from the task's text (:meth:`compile_text`); the others
        override it."""
        self.refuse_interface(domain, inputs, output)
        return self.compile_text(domain, task, variables)

    def compile_text(self, domain: Domain, task: str, variables: dict[str, str]) -> Compiled:
        """Compile a domain whose tasks are only a text (kinds without a task interface)."""
        raise NotImplementedError(f"the {self.name} kind compiles with compile()")

    def plan_task(self, domain: Domain, job: PlanJob, model: Model) -> PlanResult:
        """Plan one task from its text: ask for the interface when the kind has one, compile,
        search. The interface question's calls count in the plan's stats."""
        if job.data is not None or job.request is not None:
            raise UsageError(
                f"--data and --constraints apply to data domains; '{domain.name}' is "
                f"{self.name_with_article} domain"
            )
        inputs, output = list(job.inputs), job.output
        asked: list[ChoiceResult] = []
        reading: dict[str, Any] = {"how": "given"}
        strategy, proposed, proposal_calls = job.strategy, None, 0
        before = ModelStats()  # what the model calls before the search cost
        if self.has_interface and strategy.plan_level and getattr(model, "reads_requests", False):
            # A capable model reads the request once; its proposal becomes evidence.
            meter = RunMeter.wrap(model).fork(records=job.records, stats=before)
            proposed, proposal_calls = propose(domain, job.task, meter)
            if proposed is not None:
                strategy = replace(strategy, proposal=proposed)
        if self.has_interface:
            if not inputs and output is None:
                inputs, output, asked = infer_interface(
                    domain, job.task, model, job.records, strategy, reading
                )
            elif not inputs or output is None:
                raise UsageError(
                    "give both --input and --output, or neither (then the model is asked)"
                )
        variables = resolve_vars(domain, job.variables)
        compiled = self.compile(domain, job.task, inputs, output, variables)
        result = compiled.plan(model, job.budgets, job.on_event, job.records, strategy)
        if self.has_interface:
            result.document.setdefault("why", {})["interface"] = reading
        if proposal_calls:
            result.document.setdefault("why", {})["model"] = (
                proposed.as_dict() if proposed is not None else "no usable proposal"
            )
        for r in asked:
            before.charge(r.calls, r.usage, r.cached, r.fallback, r.seconds, asked=True)
        stats = result.document["stats"]
        before.add_into(stats)
        stats["choice_points"] += len(asked)
        return result

    def check_with_data(
        self, domain: Domain, plan: Any, data: Any, request: dict[str, Any] | None
    ) -> dict[str, Any]:
        """Check a plan written by anyone against the task's data (data-bound kinds)."""
        raise UsageError(
            f"--data applies to data domains; '{domain.name}' is {self.name_with_article} domain"
        )

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

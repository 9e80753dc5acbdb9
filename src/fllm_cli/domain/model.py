"""Typed domain model. Every record keeps the location it was read from."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from fllm_cli.content import Language
from fllm_cli.diagnostics import Location


@dataclass(frozen=True)
class Production:
    """``lhs → rhs``; an empty rhs is ε. Read from a grammar domain, used by the CFG model."""

    lhs: str
    rhs: tuple[str, ...]
    description: str = ""

    def __str__(self) -> str:
        body = " ".join(_quote(s) for s in self.rhs) if self.rhs else "ε"
        return f"{self.lhs} → {body}"


def _quote(symbol: str) -> str:
    return f"'{symbol}'" if " " in symbol else symbol


NOWHERE = Location("")


@dataclass(frozen=True)
class Modality:
    """A data type flowing between tools ("image", "text")."""

    name: str
    phrase: str
    description: str = ""
    loc: Location = NOWHERE


@dataclass(frozen=True)
class Tool:
    """A tool: ordered input modalities, one output modality, a use limit (None = unlimited)."""

    name: str
    description: str
    inputs: tuple[str, ...]
    output: str
    max_uses: int | None = 1
    loc: Location = NOWHERE


@dataclass(frozen=True)
class TaskInterface:
    """Which modalities a task may provide as inputs and ask for as output."""

    inputs: tuple[str, ...]
    outputs: tuple[str, ...]
    max_inputs: int | None = None
    loc: Location = NOWHERE


@dataclass(frozen=True)
class Limits:
    """Planning limits declared by the domain."""

    max_uses: int | None = 1
    max_plan_steps: int | None = None
    allow_empty_plan: bool = False
    use_every_input: bool = True  # a plan must read each task input at least once


@dataclass(frozen=True)
class SymbolInfo:
    """Prompt text and limit of a grammar symbol."""

    name: str
    phrase: str = ""
    description: str = ""
    max_uses: int | None = None
    loc: Location = NOWHERE


@dataclass(frozen=True)
class SetSpec:
    """A set-valued nonterminal: it derives any subset of ``elements`` (one yes/no per element)."""

    name: str
    elements: tuple[str, ...]
    phrase: str = ""
    question: str = ""
    step: str = ""
    loc: Location = NOWHERE


@dataclass(frozen=True)
class GrammarSpec:
    """An explicit grammar: start symbol, symbols with their texts, productions."""

    start: str
    nonterminals: tuple[SymbolInfo, ...]
    terminals: tuple[SymbolInfo, ...]
    productions: tuple[Production, ...]
    production_locs: tuple[Location, ...] = ()
    loc: Location = NOWHERE
    sets: tuple[SetSpec, ...] = ()


@dataclass(frozen=True)
class VarSpec:
    """A scenario variable filled with ``--var NAME=VALUE``."""

    name: str
    description: str = ""
    default: str | None = None
    loc: Location = NOWHERE


Binding = tuple[tuple[str, object], ...]


@dataclass(frozen=True)
class Text:
    """A Jinja text rendered at prompt time with its family binding and the scenario vars."""

    source: str
    binding: Binding = ()
    loc: Location = NOWHERE


@dataclass(frozen=True)
class StateSpec:
    """A state of an explicit automaton with its question and optional template."""

    name: str
    question: Text | None = None
    template: str | None = None
    loc: Location = NOWHERE


@dataclass(frozen=True)
class NoteSpec:
    """Free text the model writes for a step once the plan is found, in a content language.

    ``ask`` is the instruction (a template like ``step``); ``language`` was spelt as
    ``--answer`` is (a named language, ``regex:``, ``json-schema:``, ``gbnf:``, or a bare
    regex) and is kept parsed, so generating and checking notes do not read it again.
    """

    ask: Text
    language: Language
    max_tokens: int = 60
    loc: Location = NOWHERE


@dataclass(frozen=True)
class TransitionSpec:
    """``(read, pop; push)``; ``pop`` None = any symbol, ``push`` None = leave the top alone."""

    source: str
    target: str
    read: str | None
    pop: str | None
    push: tuple[str, ...] | None
    count: str | None = None
    option: Text | None = None
    step: tuple[tuple[str, Text], ...] = ()
    note: NoteSpec | None = None
    loc: Location = NOWHERE


@dataclass(frozen=True)
class CounterSpec:
    """How often the transitions counting into this counter may (max) and must (min) fire."""

    name: str
    min: int = 0
    max: int | None = None
    loc: Location = NOWHERE


@dataclass(frozen=True)
class AutomatonSpec:
    """An explicit automaton, families already expanded."""

    states: tuple[StateSpec, ...]
    start: str
    accept: tuple[str, ...]
    accept_stack: tuple[str, ...]
    stack_alphabet: tuple[str, ...]
    initial_stack: tuple[str, ...]
    transitions: tuple[TransitionSpec, ...]
    counters: tuple[CounterSpec, ...] = ()
    order: Literal["forward", "reverse"] = "forward"
    loc: Location = NOWHERE

    def state(self, name: str) -> StateSpec | None:
        """Return the state called ``name``."""
        return next((s for s in self.states if s.name == name), None)


@dataclass(frozen=True)
class Domain:
    """A validated domain spec."""

    path: str
    name: str
    description: str
    kind: str  # a row of fllm_cli.domain.kinds.KINDS
    modalities: tuple[Modality, ...] = ()
    tools: tuple[Tool, ...] = ()
    task: TaskInterface | None = None
    grammar: GrammarSpec | None = None
    automaton: AutomatonSpec | None = None
    vars: tuple[VarSpec, ...] = ()
    limits: Limits = field(default_factory=Limits)
    prompts: dict[str, str] = field(default_factory=dict)
    prompt_dirs: tuple[str, ...] = ()
    prompt_locs: dict[str, Location] = field(default_factory=dict)
    intro: str = ""
    # Located YAML nodes of the kind's own sections (its row in fllm_cli.domain.kinds), which
    # the kind's module reads itself (the data kind's 'request', ...).
    sections: dict[str, Any] = field(default_factory=dict)

    def modality(self, name: str) -> Modality | None:
        """Return the modality called ``name``."""
        return next((m for m in self.modalities if m.name == name), None)

    def tool(self, name: str) -> Tool | None:
        """Return the tool called ``name``."""
        return next((t for t in self.tools if t.name == name), None)


@dataclass(frozen=True)
class Task:
    """A concrete task: its text, named inputs (name, modality) and output modality."""

    text: str
    inputs: tuple[tuple[str, str], ...]
    output: str

    def input_terminal(self, name: str) -> str:
        """Return the terminal that stands for input ``name``."""
        return f"input:{name}"

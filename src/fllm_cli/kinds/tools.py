"""Tool domains: tools with typed inputs and one output, chained into a plan (OpenAGI)."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import replace

from fllm_cli.automaton.lookahead import GrammarLookahead
from fllm_cli.automaton.pda import PDA, pda_from_grammar
from fllm_cli.diagnostics import Diagnostic, Location
from fllm_cli.diagnostics import article as _a
from fllm_cli.domain.check import check_tool_structure, has_errors
from fllm_cli.domain.model import Domain, Task
from fllm_cli.grammar.compile import default_task, make_task, tool_grammar
from fllm_cli.kinds.base import Kind
from fllm_cli.kinds.grammar_based import GrammarCompiled
from fllm_cli.kinds.tool_witness import Witnesses, tool_verdicts
from fllm_cli.search.interface import plan_shape_cost, tool_evidence
from fllm_cli.search.relevance import Relevance
from fllm_cli.search.strategy import Strategy


class ToolCompiled(GrammarCompiled):
    """A tool domain compiled for a task's inputs and output."""

    def evidence(self, strategy: Strategy) -> tuple[Relevance, frozenset[str]] | None:
        """Score the tools (their names and descriptions) by the request."""
        found = tool_evidence(self.domain, self.task.text, strategy)
        return None if found is None else (found, frozenset(t.name for t in self.domain.tools))

    def plan_judge(self) -> Callable[[list[str]], float]:
        """What a plan's shape costs: a tool fed the same input in two slots of one type, a
        tool that makes a type its plan had already left (search/interface.py)."""
        return plan_shape_cost(self.domain)

    def no_plan(self) -> tuple[str, str | None]:
        """Say which interface has no plan."""
        t = self.task
        given = ", ".join(f"{n} ({m})" for n, m in t.inputs)
        return (
            f"no valid plan can produce {_a(t.output)} {t.output} output from {given} "
            f"with the tools of '{self.domain.name}' and their use limits",
            "check --input/--output, or the tools' max_uses",
        )


class ToolKind(Kind):
    """``kind: tools``: the paper's tool grammar, one production per tool."""

    name = "tools"
    has_interface = True

    check_structure = staticmethod(check_tool_structure)

    def analyses(self, domain: Domain, structure: list[Diagnostic]) -> list[Diagnostic]:
        """The plan analyses, only when the structure is sound."""
        return [] if has_errors(structure) else tool_plan_analyses(domain)

    def summary(self, domain: Domain) -> str:
        """Tools and modalities."""
        return (
            f"tool domain '{domain.name}': {len(domain.tools)} tools, "
            f"{len(domain.modalities)} modalities"
        )

    def compile(
        self,
        domain: Domain,
        task: str,
        inputs: list[str],
        output: str | None,
        variables: dict[str, str],
    ) -> ToolCompiled:
        """Build the task grammar for the given inputs and output."""
        the_task = make_task(domain, task, list(inputs), output)
        return ToolCompiled(domain, the_task, tool_grammar(domain, the_task), variables)

    def overview(self, domain: Domain, variables: dict[str, str]) -> PDA:
        """Without a task: one input of each allowed modality, a start symbol over the outputs."""
        return pda_from_grammar(tool_grammar(domain, default_task(domain)))


# Wall-clock bound of validate's plan analyses: on a large or tangled domain they stop, say so,
# and give no verdict on what they did not reach (each search also has a node budget).
ANALYSIS_SECONDS = 3.0


def _stopped(where: Location) -> Diagnostic:
    return Diagnostic(
        "warning",
        f"plan analyses stopped after {ANALYSIS_SECONDS:g} s (a large domain): outputs and tools "
        "not reached were not checked for plans",
        where,
    )


def tool_plan_analyses(domain: Domain) -> list[Diagnostic]:
    """Under the task interface: which outputs have plans, which tools can ever be used."""
    iface = domain.task
    mods = tuple(m.name for m in domain.modalities)
    ins = iface.inputs if iface and iface.inputs else mods
    outs = iface.outputs if iface and iface.outputs else mods
    where = iface.loc if iface else Location(domain.path, 1, 1)
    out: list[Diagnostic] = []
    usable: set[str] = set()
    any_plan = False
    deadline = time.monotonic() + ANALYSIS_SECONDS
    # Every modality the interface allows is offered at once here, as inputs a plan may use:
    # a real task gives some of them, and only those must be used.
    domain = replace(domain, limits=replace(domain.limits, use_every_input=False))
    witnesses = Witnesses(domain, frozenset(ins))
    for output in outs:
        if time.monotonic() > deadline:
            return [*out, _stopped(where)]
        # Cheapest trees settle most questions in linear time (kinds/tool_witness.py); a
        # search decides only what a witness that breaks a limit leaves open.
        exists, verdicts = tool_verdicts(witnesses, output, frozenset(usable))
        look: GrammarLookahead | None = None

        def search(output: str = output) -> GrammarLookahead:
            task = Task("", tuple((m, m) for m in ins), output)
            # A smaller budget keeps validate quick; an exhausted search only spares a warning.
            grammar = tool_grammar(domain, task)
            return GrammarLookahead(pda_from_grammar(grammar), node_budget=20_000)

        if exists is None:
            look = search()
            exists = look.word_exists()
        if not exists:
            out.append(
                Diagnostic(
                    "warning",
                    f"no plan can produce {_a(output)} {output} output "
                    f"from {', '.join(ins)} inputs",
                    where,
                )
            )
            continue
        any_plan = True
        for tool in domain.tools:
            verdict = verdicts.get(tool.name)
            if tool.name in usable or verdict is False:
                continue
            if verdict is True:
                usable.add(tool.name)
                continue
            if time.monotonic() > deadline:
                return [*out, _stopped(where)]
            look = look or search()
            if look.word_exists(frozenset({tool.name})) or look.exhausted_last:
                usable.add(tool.name)  # an exhausted search proves nothing: no warning
    if not any_plan:
        return [
            *out,
            Diagnostic("error", "no plan exists for any task of the task interface", where),
        ]
    return out + [
        Diagnostic(
            "warning",
            f"tool '{tool.name}' can never occur in a plan of the task interface",
            tool.loc,
        )
        for tool in domain.tools
        if tool.name not in usable
    ]

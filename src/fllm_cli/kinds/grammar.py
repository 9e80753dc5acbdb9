"""Grammar domains: an explicit CFG (with set-valued choices) whose words are the plans."""

from __future__ import annotations

from typing import Any

from fllm_cli.automaton.lookahead import GrammarLookahead
from fllm_cli.automaton.pda import pda_from_grammar
from fllm_cli.diagnostics import Diagnostic, Severity
from fllm_cli.domain.check import check_grammar_structure
from fllm_cli.domain.model import Domain, Task
from fllm_cli.grammar.cfg import Grammar
from fllm_cli.grammar.compile import explicit_grammar, set_links
from fllm_cli.kinds.base import Kind
from fllm_cli.kinds.grammar_based import GrammarCompiled
from fllm_cli.plan.grammar_steps import execution_steps
from fllm_cli.plan.model import Derivation


class GrammarDomainCompiled(GrammarCompiled):
    """A grammar domain: its steps come from the step texts of productions and sets."""

    def document_of(
        self, derivation: Derivation, model: str = "", stats: dict[str, Any] | None = None
    ) -> dict[str, Any]:
        """Return the plan document; steps are the domain's step texts in execution order."""
        doc = super().document_of(derivation, model, stats)
        if not doc["steps"] and self.domain.grammar is not None:
            doc["steps"] = execution_steps(derivation, set_links(self.domain.grammar))
        return doc

    def no_plan(self) -> tuple[str, str | None]:
        """The grammar's limits leave no word."""
        return f"the grammar of '{self.domain.name}' accepts no plan under its limits", None


class GrammarKind(Kind):
    """``kind: grammar``."""

    name = "grammar"

    check_structure = staticmethod(check_grammar_structure)

    def analyses(self, domain: Domain, structure: list[Diagnostic]) -> list[Diagnostic]:
        """Productivity, reachability and the use limits."""
        if domain.grammar is None:
            return []
        return grammar_analyses(domain, explicit_grammar(domain))

    def summary(self, domain: Domain) -> str:
        """Productions and terminals."""
        g = domain.grammar
        productions = len(g.productions) if g else 0
        terminals = len(g.terminals) if g else 0
        return f"grammar domain '{domain.name}': {productions} productions, {terminals} terminals"

    def compile_text(
        self, domain: Domain, task: str, variables: dict[str, str]
    ) -> GrammarDomainCompiled:
        """Compile the explicit grammar; a grammar domain takes no task interface."""
        return GrammarDomainCompiled(
            domain, Task(task, (), ""), explicit_grammar(domain), variables
        )


def grammar_analyses(domain: Domain, grammar: Grammar) -> list[Diagnostic]:
    """Unproductive and unreachable symbols, limits that leave no word, ignored limits."""
    spec = domain.grammar
    assert spec is not None  # callers check
    out: list[Diagnostic] = []
    locs = {s.name: s.loc for s in (*spec.nonterminals, *spec.terminals)}
    for n in grammar.nonterminals:
        if n not in grammar.productive:
            sev: Severity = "error" if n == grammar.start else "warning"
            message = f"nonterminal '{n}' derives no terminal word (unproductive)"
            out.append(Diagnostic(sev, message, locs.get(n, spec.loc)))
    used = {s for p in grammar.productions for s in p.rhs}
    for name in (*grammar.nonterminals, *(t.name for t in grammar.terminals)):
        if name not in grammar.reachable:
            symbol = "terminal" if grammar.is_terminal(name) else "nonterminal"
            detail = (
                "is never used"
                if name not in used and name != grammar.start
                else "is unreachable from the start symbol"
            )
            out.append(
                Diagnostic("warning", f"{symbol} '{name}' {detail}", locs.get(name, spec.loc))
            )
    if grammar.start in grammar.productive:
        look = GrammarLookahead(pda_from_grammar(grammar))
        if not look.word_exists():
            out.append(Diagnostic("error", "no word satisfies the use limits", spec.loc))
    if domain.limits.max_plan_steps is not None:
        out.append(
            Diagnostic(
                "warning",
                "limits.max_plan_steps has no effect on a grammar domain (its terminals are not "
                "tool steps); limit terminals with max_uses instead",
                spec.loc,
            )
        )
    return out

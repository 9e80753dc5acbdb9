"""What tool and grammar domains share: a task grammar compiled to a pushdown automaton."""

from __future__ import annotations

from typing import Any

from fllm_cli.automaton.lookahead import GrammarLookahead
from fllm_cli.automaton.pda import Config, pda_from_grammar
from fllm_cli.domain.model import Domain, Task
from fllm_cli.grammar.cfg import Grammar
from fllm_cli.kinds.base import Compiled
from fllm_cli.plan.document import build_document, step_lines
from fllm_cli.plan.model import Derivation
from fllm_cli.search.prompting import Prompter
from fllm_cli.verify import REPARSE_UP_TO, Verdict, check_derivation, verify_word


class GrammarCompiled(Compiled):
    """A domain whose plans are the words of a context-free grammar."""

    def __init__(
        self, domain: Domain, task: Task, grammar: Grammar, variables: dict[str, str]
    ) -> None:
        pda = pda_from_grammar(grammar)
        super().__init__(domain, task, pda, GrammarLookahead(pda), variables)
        self.grammar = grammar

    def prompter(self) -> Prompter:
        """Return the grammar prompter (which tool's which input is being filled)."""
        return Prompter(self.domain, self.grammar_, self.pda, self.task, self.vars)

    @property
    def grammar_(self) -> Grammar:
        assert self.grammar is not None  # set in __init__, never None for this class
        return self.grammar

    def verify(self, word: list[str]) -> Verdict:
        """Run the word on the PDA; a valid word comes back with its derivation tree."""
        return verify_word(self.pda, word)

    def check_planned(self, word: list[str], derivation: Any) -> str | None:
        """Check the derivation tree (linear); re-parse the word too when it is short."""
        wrong = check_derivation(derivation)
        if wrong is None and len(word) <= REPARSE_UP_TO:
            verdict = self.verify(word)
            wrong = None if verdict.valid else verdict.reason
        return wrong

    def document(
        self, final: Config, model: str, stats: dict[str, Any] | None = None
    ) -> tuple[dict[str, Any], Derivation]:
        """Return the plan document and derivation of an accepting configuration."""
        derivation = Derivation.from_config(self.grammar_, final)
        return self.document_of(derivation, model, stats), derivation

    def document_of(
        self, derivation: Derivation, model: str = "", stats: dict[str, Any] | None = None
    ) -> dict[str, Any]:
        """Return the plan document of a derivation."""
        doc = build_document(self.domain, self.task, derivation, model, stats)
        if self.vars:
            doc["vars"] = dict(self.vars)
        return doc

    def verified_document(self, verdict: Verdict, model: str = "") -> dict[str, Any]:
        """Return the plan document of a verified word."""
        if verdict.derivation is None:
            raise ValueError("only a valid verdict has a plan document")
        return self.document_of(verdict.derivation, model)

    def steps(self, verdict: Verdict) -> list[str]:
        """Return the execution order of a verified word."""
        if verdict.derivation is None:
            return []
        return step_lines(self.document_of(verdict.derivation), self.task)

"""Automaton domains: a hand-written pushdown automaton with per-state questions."""

from __future__ import annotations

from typing import Any

from fllm_cli.automaton.explicit import (
    ExplicitLookahead,
    ExplicitPDA,
    pda_from_spec,
    verify_explicit,
)
from fllm_cli.automaton.pda import Config
from fllm_cli.diagnostics import Diagnostic
from fllm_cli.domain.check import check_automaton_structure, has_errors
from fllm_cli.domain.model import Domain, Task
from fllm_cli.errors import FllmError, UsageError
from fllm_cli.kinds.base import Compiled, Kind
from fllm_cli.llm.meter import RunMeter
from fllm_cli.plan.document import FORMAT_VERSION, step_lines
from fllm_cli.search.automaton_prompting import (
    AutomatonPrompter,
    plan_steps,
    recorded_moves,
    render_intro,
    step_text,
)
from fllm_cli.search.notes import write_note
from fllm_cli.search.planner import Budgets
from fllm_cli.verify import Verdict


class AutomatonCompiled(Compiled):
    """An explicit automaton with the scenario variables filled in."""

    def __init__(self, domain: Domain, task: str, pda: ExplicitPDA, variables: dict[str, str]):
        super().__init__(domain, Task(task, (), ""), pda, ExplicitLookahead(pda), variables)
        self.epda = pda

    def prompter(self) -> AutomatonPrompter:
        """Return the prompter that asks each state's own question."""
        return AutomatonPrompter(self.domain, self.epda, self.task.text, self.vars)

    def verify(self, word: list[str]) -> Verdict:
        """Run the word on the automaton."""
        v = verify_explicit(self.epda, word)
        return Verdict(v.valid, None, v.position, v.reason, v.config)

    def document(
        self, final: Config, model: str, stats: dict[str, Any] | None = None
    ) -> tuple[dict[str, Any], None]:
        """Return the plan document of an accepted run (there is no derivation tree)."""
        doc: dict[str, Any] = {
            "fllm_plan": FORMAT_VERSION,
            "domain": self.domain.name,
            "domain_path": self.domain.path,
            "task": self.task.text,
            "vars": dict(self.vars),
            "inputs": {},
            "output": "",
            "model": model,
            "valid": True,
            "word": final.word_list(),
            "final_state": final.state,
            "steps": self._records(final),
        }
        if stats is not None:
            doc["stats"] = stats
        return doc, None

    def finish(self, doc: dict[str, Any], final: Config, meter: RunMeter, budgets: Budgets) -> bool:
        """Write the notes the domain asks for, each in its content language (see NoteSpec)."""
        spec = self.domain.automaton
        assert spec is not None
        moves = recorded_moves(spec, self.epda, final, self.vars)
        lines = step_lines({"steps": [record for record, _ in moves]}, self.task)
        intro = render_intro(self.domain, self.vars)
        asked = False
        stopped: str | None = None  # why no further note is asked for
        for (record, index), step in zip(moves, doc["steps"]):
            note = spec.transitions[index].note
            if note is None:
                continue
            calls = budgets.max_llm_calls
            left = None if calls is None else calls - meter.stats.llm_calls
            if stopped is None and left is not None and left <= 0:
                stopped = "no model calls were left (--max-llm-calls)"
            if stopped is not None:
                step["note_error"] = f"not written: {stopped}"
                continue
            asked = True
            try:
                text, error = write_note(
                    meter, note, spec.transitions[index].source, self.vars,
                    {"intro": intro, "task": self.task.text,
                     "steps": lines, "number": record["id"], "step": step_text(record)},
                    calls_left=left,
                )  # fmt: skip
            except FllmError as exc:
                # The plan is found and checked: a failing back end or a spent budget costs
                # the notes, never the plan.
                stopped = exc.message
                step["note_error"] = f"not written: {stopped}"
                continue
            if error is None:
                step["note"] = text
            else:
                step["note_error"] = error
        return asked

    def check_document(self, doc: dict[str, Any], verdict: Verdict) -> Verdict:
        """Check each step's note against its transition's language; name the first outside."""
        spec = self.domain.automaton
        steps = doc.get("steps")
        if spec is None or verdict.config is None or not isinstance(steps, list):
            return verdict
        moves = recorded_moves(spec, self.epda, verdict.config, self.vars)
        for (record, index), step in zip(moves, steps):
            note = spec.transitions[index].note
            if note is None or not isinstance(step, dict) or "note" not in step:
                continue
            language = note.language
            text = step["note"]
            problem = language.check(text) if isinstance(text, str) else "it is not text"
            if problem is not None:
                reason = f"the note of step {record['id']} is not {language.describe()}: {problem}"
                return Verdict(False, None, verdict.config.n_word, reason, None)
        return verdict

    def verified_document(self, verdict: Verdict, model: str = "") -> dict[str, Any]:
        """Return the plan document of a verified word."""
        if verdict.config is None:
            raise ValueError("only a valid verdict has a plan document")
        return self.document(verdict.config, model)[0]

    def _records(self, config: Config) -> list[dict[str, Any]]:
        assert self.domain.automaton is not None  # an automaton domain always has one
        return plan_steps(self.domain.automaton, self.epda, config, self.vars)

    def steps(self, verdict: Verdict) -> list[str]:
        """Return the recorded steps of the accepted run."""
        if verdict.config is None:
            return []
        return step_lines({"steps": self._records(verdict.config)}, self.task)

    def no_plan(self) -> tuple[str, str | None]:
        """The automaton accepts nothing under its limits."""
        return f"the automaton of '{self.domain.name}' accepts no plan under its limits", None


class AutomatonKind(Kind):
    """``kind: automaton``."""

    name = "automaton"

    check_structure = staticmethod(check_automaton_structure)

    def analyses(self, domain: Domain, structure: list[Diagnostic]) -> list[Diagnostic]:
        """Does it accept any word, and is every state reachable?"""
        return [] if has_errors(structure) or domain.automaton is None else _analyses(domain)

    def summary(self, domain: Domain) -> str:
        """States and transitions."""
        spec = domain.automaton
        states = len(spec.states) if spec else 0
        transitions = len(spec.transitions) if spec else 0
        return f"automaton domain '{domain.name}': {states} states, {transitions} transitions"

    def compile_text(
        self, domain: Domain, task: str, variables: dict[str, str]
    ) -> AutomatonCompiled:
        """Build the automaton; it takes no task interface."""
        if domain.automaton is None:
            raise UsageError(f"'{domain.name}' declares no automaton")
        return AutomatonCompiled(domain, task, pda_from_spec(domain.automaton), variables)


def _analyses(domain: Domain) -> list[Diagnostic]:
    spec = domain.automaton
    assert spec is not None  # checked by the caller
    out: list[Diagnostic] = []
    pda = pda_from_spec(spec)
    if not ExplicitLookahead(pda).word_exists():
        out.append(Diagnostic("error", "the automaton accepts no word", spec.loc))
    reached = {pda.start} | {t.target for t in pda.transitions}
    out += [
        Diagnostic("warning", f"state '{s.name}' is unreachable", s.loc)
        for s in spec.states
        if s.name not in reached
    ]
    return out

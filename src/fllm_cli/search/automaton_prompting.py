"""Prompts and plan documents for explicit automata: per-state questions, per-move options."""

from __future__ import annotations

from typing import Any

from fllm_cli.automaton.explicit import ExplicitPDA
from fllm_cli.automaton.pda import Config, Cons
from fllm_cli.domain.automaton import render_text
from fllm_cli.domain.model import AutomatonSpec, Domain
from fllm_cli.domain.templates import template_for
from fllm_cli.prompts import render, render_string
from fllm_cli.search.prompting import WINDOW, Option, earlier_steps


def render_intro(domain: Domain, variables: dict[str, str]) -> str:
    """Return the domain's intro with the scenario variables filled in."""
    if not domain.intro:
        return ""
    return render_string(domain.intro, variables, f"{domain.path}: intro").strip()


def step_record(spec: AutomatonSpec, index: int, variables: dict[str, str]) -> dict[str, str]:
    """Return the rendered ``step`` fields of transition ``index`` ({} if it records none)."""
    t = spec.transitions[index]
    return {key: render_text(text, variables, t.source) for key, text in t.step}


def numbered(number: int, record: dict[str, Any]) -> dict[str, Any]:
    """Return a step record with its number first, as :func:`plan_steps` lists it."""
    return {"id": number, **record}


def step_text(record: dict[str, Any]) -> str:
    """Return the one-line text of a step record."""
    if "text" in record:
        return str(record["text"])
    return ", ".join(f"{k}: {v}" for k, v in record.items())


def plan_steps(
    spec: AutomatonSpec, pda: ExplicitPDA, config: Config, variables: dict[str, str]
) -> list[dict[str, Any]]:
    """Return the recorded steps of a configuration's path, in the domain's display order."""
    return [record for record, _ in recorded_moves(spec, pda, config, variables)]


def recorded_moves(
    spec: AutomatonSpec, pda: ExplicitPDA, config: Config, variables: dict[str, str]
) -> list[tuple[dict[str, Any], int]]:
    """Return (step record, transition index) for each recorded step, in display order."""
    pairs = []
    for index in pda.path(config):
        record = step_record(spec, index, variables)
        if record:
            pairs.append(({**record, "input": pda.transitions[index].read}, index))
    if spec.order == "reverse":
        pairs.reverse()
    return [({"id": i, **r}, index) for i, (r, index) in enumerate(pairs, 1)]


class StepIndex:
    """The recorded steps of the run last prompted for, kept up to date move by move.

    Like :class:`~fllm_cli.search.prompting.Branch`: a configuration's transitions form a
    persistent list, so the index walks back only to the first cell it already holds, drops
    the moves beyond it (a backtrack) and renders the step of each new move once.
    """

    def __init__(self, spec: AutomatonSpec, pda: ExplicitPDA, variables: dict[str, str]) -> None:
        self.spec = spec
        self.pda = pda
        self.vars = variables
        self.cells: list[Cons] = []
        self.records: list[dict[str, Any]] = []  # the recorded steps, in the order of the run
        self.owners: list[int] = []  # the move that recorded each step
        self.visits = 0  # moves processed in all

    def sync(self, config: Config) -> None:
        """Make the index describe ``config``'s run."""
        new: list[tuple[Cons, int]] = []
        cell: Cons = config.nodes
        k = config.n_nodes - 1
        while cell is not None and not (k < len(self.cells) and self.cells[k] is cell):
            new.append((cell, int(cell[0])))  # type: ignore[call-overload]
            cell = cell[1]
            k -= 1
        size = k + 1
        del self.cells[size:]
        while self.owners and self.owners[-1] >= size:
            self.owners.pop()
            self.records.pop()
        for added, index in reversed(new):
            self.visits += 1
            record = step_record(self.spec, index, self.vars)
            if record:
                self.owners.append(len(self.cells))
                self.records.append({**record, "input": self.pda.transitions[index].read})
            self.cells.append(added)

    def shown(self, window: int) -> list[str]:
        """Return the texts of the last ``window`` steps in display order (numbered as in
        :func:`plan_steps`), with one entry that counts the earlier ones."""
        total = len(self.records)
        hidden = max(0, total - window)
        note = [earlier_steps(hidden)] if hidden else []
        if self.spec.order == "reverse":
            recent = reversed(self.records[hidden:])
            return [step_text(numbered(i, r)) for i, r in enumerate(recent, 1)] + note
        shown = self.records[hidden:]
        return note + [step_text(numbered(i, r)) for i, r in enumerate(shown, hidden + 1)]


class AutomatonPrompter:
    """Renders choice prompts for an explicit automaton."""

    def __init__(
        self, domain: Domain, pda: ExplicitPDA, task: str, variables: dict[str, str]
    ) -> None:
        assert domain.automaton is not None
        self.domain = domain
        self.spec = domain.automaton
        self.pda = pda
        self.task = task
        self.vars = variables
        self.intro = render_intro(domain, variables)
        self.default = template_for(domain, "choice")
        self.window = WINDOW
        self.index = StepIndex(self.spec, pda, variables)

    def context(self, config: Config, moves: list[int]) -> dict[str, Any]:
        """Return the template variables of a choice point."""
        state = self.spec.state(config.state)
        question = render_text(state.question if state else None, self.vars, config.state)
        self.index.sync(config)
        steps = self.index.shown(self.window)
        choices = []
        for m in moves:
            t = self.spec.transitions[m]
            text = render_text(t.option, self.vars, t.source) or t.read or f"go to {t.target}"
            choices.append(Option(text, t.read or "ε", t.target))
        return {
            "task": self.task,
            "domain": self.domain.name,
            "intro": self.intro,
            "progress": steps,
            "steps": steps,
            "question": question,
            "state": config.state,
            "choices": choices,
            "first": config.n_nodes == 0,
            "vars": dict(self.vars),
            "target": question,
            "symbol": config.top.symbol if config.top else "",
            "phrase": "",
            "parent": None,
            "parent_step": "",
            "slot": 0,
            "inputs": [],
            "output": "",
        }

    def render(self, config: Config, moves: list[int]) -> tuple[str, tuple[str, ...]]:
        """Return the prompt and the option texts."""
        ctx = self.context(config, moves)
        state = self.spec.state(config.state)
        template = state.template if state and state.template else self.default
        prompt = render(template, ctx, self.domain.prompt_dirs)
        return prompt, tuple(str(o) for o in ctx["choices"])

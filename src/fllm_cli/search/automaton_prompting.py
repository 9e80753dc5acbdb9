"""Prompts and plan documents for explicit automata: per-state questions, per-move options."""

from __future__ import annotations

from typing import Any

from fllm_cli.automaton.explicit import ExplicitPDA
from fllm_cli.automaton.pda import Config
from fllm_cli.domain.automaton import render_text
from fllm_cli.domain.model import AutomatonSpec, Domain, template_for
from fllm_cli.prompts import render, render_string
from fllm_cli.search.prompting import Option


def render_intro(domain: Domain, variables: dict[str, str]) -> str:
    """Return the domain's intro with the scenario variables filled in."""
    if not domain.intro:
        return ""
    return render_string(domain.intro, variables, f"{domain.path}: intro").strip()


def step_record(spec: AutomatonSpec, index: int, variables: dict[str, str]) -> dict[str, str]:
    """Return the rendered ``step`` fields of transition ``index`` ({} if it records none)."""
    t = spec.transitions[index]
    return {key: render_text(text, variables, t.source) for key, text in t.step}


def step_text(record: dict[str, str]) -> str:
    """Return the one-line text of a step record."""
    if "text" in record:
        return record["text"]
    return ", ".join(f"{k}: {v}" for k, v in record.items())


def plan_steps(
    spec: AutomatonSpec, pda: ExplicitPDA, config: Config, variables: dict[str, str]
) -> list[dict[str, Any]]:
    """Return the recorded steps of a configuration's path, in the domain's display order."""
    records = []
    for index in pda.path(config):
        record = step_record(spec, index, variables)
        if record:
            records.append({**record, "input": pda.transitions[index].read})
    if spec.order == "reverse":
        records.reverse()
    return [{"id": i, **r} for i, r in enumerate(records, 1)]


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

    def context(self, config: Config, moves: list[int]) -> dict[str, Any]:
        """Return the template variables of a choice point."""
        state = self.spec.state(config.state)
        question = render_text(state.question if state else None, self.vars, config.state)
        steps = [step_text(s) for s in plan_steps(self.spec, self.pda, config, self.vars)]
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

"""Turn a choice point into a prompt: task, progress so far, numbered feasible choices."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from fllm_cli.automaton.pda import PDA, Config, StackItem
from fllm_cli.domain.model import Domain, Task, template_for
from fllm_cli.grammar.cfg import Grammar
from fllm_cli.grammar.compile import set_links
from fllm_cli.plan.grammar_steps import (
    chosen_elements,
    parent_step_of,
    progress_steps,
    set_question,
)
from fllm_cli.prompts import render, render_string

ORDINALS = ("first", "second", "third", "fourth", "fifth", "sixth")


@dataclass(frozen=True)
class Option:
    """One numbered choice as a template sees it (``{{ choice }}`` prints its text)."""

    text: str
    name: str
    description: str = ""

    def __str__(self) -> str:
        return self.text


def head_terminal(g: Grammar, production: int) -> str | None:
    """Return the terminal a production starts with, if any."""
    rhs = g.productions[production].rhs
    return rhs[0] if rhs and g.is_terminal(rhs[0]) else None


def slot_text(g: Grammar, config: Config, item: StackItem) -> str:
    """Describe what a stack item stands for: 'the input image of "Colorization"'."""
    phrase = g.phrase(item.symbol)
    if item.parent < 0:
        return f"the final output ({phrase})"
    nodes = config.node_list()
    prod = g.productions[nodes[item.parent].production]
    head = head_terminal(g, nodes[item.parent].production)
    owner = head if head is not None else g.phrase(prod.lhs)
    inputs = [s for s in prod.rhs if not g.is_terminal(s)]
    if len(inputs) <= 1:
        return f'the input {phrase} of "{owner}"'
    k = sum(1 for s in prod.rhs[: item.slot] if not g.is_terminal(s))
    nth = ORDINALS[k] if k < len(ORDINALS) else f"#{k + 1}"
    return f'the {nth} input ({phrase}) of "{owner}"'


def option_for(g: Grammar, pda: PDA, transition: int) -> Option:
    """Return how a move is offered: 'the output of Colorization', "the task's input image"."""
    t = pda.transitions[transition]
    if t.production is None:
        name = t.read or "ε"
        return Option(g.phrase(name), name)
    p = g.productions[t.production]
    head = head_terminal(g, t.production)
    if head is not None:
        term = g.terminal[head]
        if term.kind == "tool":
            return Option(f"the output of {head}", head, term.description)
        if term.kind == "input":
            return Option(f"the task's {term.phrase}", head, term.description)
        return Option(p.description or term.phrase or head, head, term.description)
    body = ", ".join(g.phrase(s) for s in p.rhs) or "nothing"
    return Option(p.description or body, str(p), p.description)


def progress_lines(g: Grammar, config: Config) -> list[str]:
    """Return 'Step n: Use X;' lines for the tools chosen so far, then the open step."""
    lines: list[str] = []
    nodes = config.node_list()
    k = 0
    for node in nodes:
        head = head_terminal(g, node.production)
        if head is None or g.terminal[head].kind == "input":
            continue
        label = "Step n" if k == 0 else f"Step (n-{k})"
        use = f"Use {head}" if g.terminal[head].kind == "tool" else g.phrase(head)
        if k and node.parent >= 0:
            parent_head = head_terminal(g, nodes[node.parent].production)
            if parent_head is not None:
                use += f" (its output feeds {parent_head})"
        lines.append(f"{label}: {use};")
        k += 1
    lines.append(("Step n" if k == 0 else f"Step (n-{k})") + ": ?")
    return lines


class Prompter:
    """Renders choice prompts for one domain and task."""

    def __init__(
        self,
        domain: Domain,
        grammar: Grammar,
        pda: PDA,
        task: Task,
        variables: dict[str, str] | None = None,
    ) -> None:
        self.domain = domain
        self.grammar = grammar
        self.pda = pda
        self.task = task
        self.vars = dict(variables or {})
        self.template = template_for(domain, "choice")
        self.links = set_links(domain.grammar) if domain.grammar is not None else {}
        self.intro = domain.intro
        if domain.vars and domain.intro:
            self.intro = render_string(domain.intro, self.vars, f"{domain.path}: intro").strip()

    def _set_choice(self, config: Config, moves: list[int]) -> tuple[str, list[Option]] | None:
        """Return (question, yes/no options) when the top of the stack decides a set element."""
        top = config.top
        link = self.links.get(top.symbol) if top is not None else None
        if link is None or top is None:
            return None
        s, k = link
        element = s.elements[k]
        nodes = config.node_list()
        g = self.grammar
        if k == 0:
            chosen: list[str] = []
            parent_step = parent_step_of(g, nodes, top.parent)
        else:
            root = top.parent  # walk up the chain to the node that opened the set
            while self.links[g.productions[nodes[root].production].lhs][1] != 0:
                root = nodes[root].parent
            chosen = chosen_elements(g, self.links, nodes, root)
            parent_step = parent_step_of(g, nodes, nodes[root].parent)
        options = []
        for m in moves:
            rhs = self.grammar.productions[self.pda.transitions[m].production or 0].rhs
            yes = bool(rhs) and self.grammar.is_terminal(rhs[0])
            text = f"Yes, include {element}." if yes else f"No, leave out {element}."
            options.append(Option(text, rhs[0] if yes else "no", element))
        return set_question(s, element, chosen, parent_step), options

    def context(self, config: Config, moves: list[int]) -> dict[str, Any]:
        """Return the template variables for a choice point (see docs/spec.md)."""
        g = self.grammar
        top = config.top
        assert top is not None
        parent = None
        nodes = config.node_list()
        if top.parent >= 0:
            parent = head_terminal(g, nodes[top.parent].production)
        parent_step = parent_step_of(g, nodes, top.parent)
        choices = [option_for(g, self.pda, m) for m in moves]
        question = ""
        set_choice = self._set_choice(config, moves)
        if set_choice is not None:
            question, choices = set_choice
        return {
            "task": self.task.text,
            "domain": self.domain.name,
            "intro": self.intro,
            "progress": progress_lines(g, config),
            "target": slot_text(g, config, top),
            "symbol": top.symbol,
            "phrase": g.phrase(top.symbol),
            "parent": parent,
            "slot": top.slot,
            "choices": choices,
            "first": config.n_nodes == 0,
            "inputs": [name for name, _ in self.task.inputs],
            "output": self.task.output,
            "question": question,
            "state": config.state,
            "steps": progress_steps(g, self.links, nodes),
            "parent_step": parent_step,
            "vars": dict(self.vars),
        }

    def render(self, config: Config, moves: list[int]) -> tuple[str, tuple[str, ...]]:
        """Return the prompt and the option texts."""
        ctx = self.context(config, moves)
        prompt = render(self.template, ctx, self.domain.prompt_dirs)
        return prompt, tuple(str(o) for o in ctx["choices"])

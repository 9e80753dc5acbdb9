"""Turn a choice point into a prompt: task, progress so far, numbered feasible choices."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from fllm_cli.automaton.pda import PDA, Config, Cons, Node, StackItem
from fllm_cli.domain.model import Domain, Task
from fllm_cli.domain.templates import template_for
from fllm_cli.grammar.cfg import Grammar
from fllm_cli.grammar.compile import set_links
from fllm_cli.plan.grammar_steps import set_question, set_step_text
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


def slot_text(g: Grammar, config: Config, item: StackItem, branch: Branch | None = None) -> str:
    """Describe what a stack item stands for: 'the input image of "Colorization"'.

    ``branch``, synced to ``config``, saves listing the configuration's nodes.
    """
    phrase = g.phrase(item.symbol)
    if item.parent < 0:
        return f"the final output ({phrase})"
    if branch is None:
        branch = Branch(g, {})
        branch.sync(config)
    production = branch.nodes[item.parent].production
    prod = g.productions[production]
    head = head_terminal(g, production)
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
        if term.role == "tool":
            return Option(f"the output of {head}", head, term.description)
        if term.role == "input":
            return Option(f"the task's {term.phrase}", head, term.description)
        return Option(p.description or term.phrase or head, head, term.description)
    body = ", ".join(g.phrase(s) for s in p.rhs) or "nothing"
    return Option(p.description or body, str(p), p.description)


# How many progress entries a prompt shows: the most recent ones, after one line that counts
# the earlier ones. Plans of real domains stay far below it; a long plan would otherwise make
# every prompt (and the work of building it) grow with the plan.
WINDOW = 50


def step_label(k: int) -> str:
    """Return the label of the k-th step decided (0: the last step of the plan)."""
    return "Step n" if k == 0 else f"Step (n-{k})"


def earlier_lines(hidden: int) -> str:
    """Return the progress line that stands for ``hidden`` earlier step lines."""
    return f"{step_label(0)} to {step_label(hidden - 1)}: {hidden} earlier steps, not shown;"


def earlier_steps(hidden: int) -> str:
    """Return the entry that stands for ``hidden`` earlier step texts."""
    return f"({hidden} earlier steps, not shown)"


class Branch:
    """The derivation nodes of the configuration last prompted for, with what prompts need.

    A configuration keeps its nodes as a persistent list (one cell per node, sharing the tail
    with the configuration it came from), so a cell stands for its node and everything before
    it. The index keeps the cells of the current branch; for a new configuration it walks back
    only to the first cell it already holds, drops what lies beyond (a backtrack) and adds the
    new nodes. Each node is therefore processed once, not at every choice point.

    Per node it keeps the production, the head terminal, the set it belongs to (the index of
    the node that opened the set) with the elements chosen in it so far, and the latest child
    in the same set; and, in order, the nodes that make a progress line and those that make a
    step entry.
    """

    def __init__(self, g: Grammar, links: dict[str, Any]) -> None:
        self.g = g
        self.links = links
        self.cells: list[Cons] = []
        self.nodes: list[Node] = []
        self.heads: list[str | None] = []
        self.roots: list[int | None] = []
        self.chosen: list[tuple[str, ...]] = []
        self.set_child: list[int] = []
        self.lines: list[int] = []  # nodes that make a progress line
        self.steps: list[int] = []  # nodes that make a step entry
        self.visits = 0  # nodes processed in all

    def sync(self, config: Config) -> None:
        """Make the index describe ``config``'s nodes."""
        new: list[tuple[Cons, Node]] = []
        cell: Cons = config.nodes
        k = config.n_nodes - 1
        while cell is not None and not (k < len(self.cells) and self.cells[k] is cell):
            node = cell[0]
            if isinstance(node, Node):
                new.append((cell, node))
            cell = cell[1]
            k -= 1
        self._truncate(k + 1)
        for added, node in reversed(new):
            self._add(added, node)

    def _truncate(self, size: int) -> None:
        if size >= len(self.cells):
            return
        for column in (self.cells, self.nodes, self.heads, self.roots, self.chosen):
            del column[size:]
        del self.set_child[size:]
        while self.lines and self.lines[-1] >= size:
            self.lines.pop()
        while self.steps and self.steps[-1] >= size:
            self.steps.pop()

    def _add(self, cell: Cons, node: Node) -> None:
        g = self.g
        i = len(self.cells)
        self.visits += 1
        production = g.productions[node.production]
        head = head_terminal(g, node.production)
        link = self.links.get(production.lhs)
        root: int | None = None
        chosen: tuple[str, ...] = ()
        if link is not None:
            inside = link[1] != 0 and node.parent >= 0
            root = self.roots[node.parent] if inside else i
            if inside:
                chosen = self.chosen[node.parent]
                self.set_child[node.parent] = i
            if production.rhs and g.is_terminal(production.rhs[0]):
                chosen = (*chosen, link[0].elements[link[1]])
        self.cells.append(cell)
        self.nodes.append(node)
        self.heads.append(head)
        self.roots.append(root)
        self.chosen.append(chosen)
        self.set_child.append(-1)
        if head is not None and g.terminal[head].role != "input":
            self.lines.append(i)
        if root == i or (root is None and production.description):
            self.steps.append(i)

    def set_chosen(self, root: int) -> list[str]:
        """Return the elements chosen so far in the set opened at node ``root``."""
        last = root
        while True:
            child = self.set_child[last]
            if not (
                last < child < len(self.nodes)
                and self.nodes[child].parent == last
                and self.roots[child] == root
            ):
                return list(self.chosen[last])
            last = child

    def progress(self, window: int) -> list[str]:
        """Return the progress lines of the last ``window`` steps, then the open step."""
        g = self.g
        total = len(self.lines)
        first = max(0, total - window)
        out = [earlier_lines(first)] if first else []
        for k in range(first, total):
            node = self.nodes[self.lines[k]]
            head = self.heads[self.lines[k]]
            assert head is not None
            use = f"Use {head}" if g.terminal[head].role == "tool" else g.phrase(head)
            if k and node.parent >= 0:
                parent_head = self.heads[node.parent]
                if parent_head is not None:
                    use += f" (its output feeds {parent_head})"
            out.append(f"{step_label(k)}: {use};")
        out.append(f"{step_label(total)}: ?")
        return out

    def step_texts(self, window: int) -> list[str]:
        """Return the step texts decided so far (top-down), the last ``window`` of them."""
        g = self.g
        total = len(self.steps)
        first = max(0, total - window)
        out = [earlier_steps(first)] if first else []
        for i in self.steps[first:]:
            node = self.nodes[i]
            p = g.productions[node.production]
            if self.roots[i] == i:
                s = self.links[p.lhs][0]
                parent = self.parent_step(node.parent)
                out.append(set_step_text(s, self.set_chosen(i), parent))
            else:
                out.append(p.description)
        return out

    def parent_step(self, parent: int) -> str:
        """Return the step text of node ``parent`` ('' for none)."""
        if parent < 0 or parent >= len(self.nodes):
            return ""
        return self.g.productions[self.nodes[parent].production].description


def progress_lines(g: Grammar, config: Config, window: int | None = None) -> list[str]:
    """Return 'Step n: Use X;' lines for the tools chosen so far, then the open step.

    With ``window``, only the lines of the last ``window`` steps, after one that counts the
    earlier ones.
    """
    branch = Branch(g, {})
    branch.sync(config)
    return branch.progress(len(branch.lines) if window is None else window)


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
        self.window = WINDOW
        self.branch = Branch(grammar, self.links)

    def _set_choice(self, config: Config, moves: list[int]) -> tuple[str, list[Option]] | None:
        """Return (question, yes/no options) when the top of the stack decides a set element."""
        top = config.top
        link = self.links.get(top.symbol) if top is not None else None
        if link is None or top is None:
            return None
        s, k = link
        element = s.elements[k]
        nodes = self.branch.nodes
        g = self.grammar
        if k == 0:
            chosen: list[str] = []
            parent_step = self.branch.parent_step(top.parent)
        else:
            root = top.parent  # walk up the chain to the node that opened the set
            while self.links[g.productions[nodes[root].production].lhs][1] != 0:
                root = nodes[root].parent
            chosen = self.branch.set_chosen(root)
            parent_step = self.branch.parent_step(nodes[root].parent)
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
        branch = self.branch
        branch.sync(config)
        parent = None
        if top.parent >= 0:
            parent = branch.heads[top.parent]
        parent_step = branch.parent_step(top.parent)
        choices = [option_for(g, self.pda, m) for m in moves]
        question = ""
        set_choice = self._set_choice(config, moves)
        if set_choice is not None:
            question, choices = set_choice
        return {
            "task": self.task.text,
            "domain": self.domain.name,
            "intro": self.intro,
            "progress": branch.progress(self.window),
            "target": slot_text(g, config, top, branch),
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
            "steps": branch.step_texts(self.window),
            "parent_step": parent_step,
            "vars": dict(self.vars),
        }

    def render(self, config: Config, moves: list[int]) -> tuple[str, tuple[str, ...]]:
        """Return the prompt and the option texts."""
        ctx = self.context(config, moves)
        prompt = render(self.template, ctx, self.domain.prompt_dirs)
        return prompt, tuple(str(o) for o in ctx["choices"])

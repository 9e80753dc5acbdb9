"""Steps of a grammar plan whose productions carry step texts, and its set-valued choices.

A production with a ``step`` text is one step of the plan; a set-valued nonterminal (a chain of
yes/no decisions, see ``grammar.compile``) is one step listing the elements chosen. During
planning the steps appear top-down (the plan is built backwards, from the goal); in the plan
document they are listed in execution order: a node's children first (its set children right
before it), then the node itself, so every step's inputs exist before the step.
"""

from __future__ import annotations

from typing import Any

from fllm_cli.automaton.pda import Node
from fllm_cli.domain.model import SetSpec
from fllm_cli.grammar.cfg import Grammar
from fllm_cli.plan.model import Derivation, TreeNode
from fllm_cli.prompts import render_string

Links = dict[str, tuple[SetSpec, int]]


def set_step_text(s: SetSpec, chosen: list[str], parent_step: str) -> str:
    """Return the text of a set step: 'Prepare the seasoning: ginger, salt for the step: "…"'."""
    if s.step:
        ctx = {"chosen": chosen, "parent_step": parent_step, "phrase": s.phrase, "element": ""}
        return render_string(s.step, ctx, f"set '{s.name}' step").strip()
    items = ", ".join(chosen) if chosen else "nothing"
    tail = f' for the step: "{parent_step}"' if parent_step else ""
    return f"Prepare {s.phrase}: {items}{tail}"


def set_question(s: SetSpec, element: str, chosen: list[str], parent_step: str) -> str:
    """Return the yes/no question asked for one element of a set."""
    ctx = {"chosen": chosen, "parent_step": parent_step, "phrase": s.phrase, "element": element}
    if s.question:
        return render_string(s.question, ctx, f"set '{s.name}' question").strip()
    tail = f' for the step "{parent_step}"' if parent_step else ""
    return f"Should {s.phrase}{tail} include {element}?"


def _roots(g: Grammar, links: Links, nodes: list[Node]) -> list[int | None]:
    """For each node, the node of the set it belongs to (None outside sets)."""
    roots: list[int | None] = []
    for i, n in enumerate(nodes):
        lhs = g.productions[n.production].lhs
        link = links.get(lhs)
        if link is None:
            roots.append(None)
        else:
            roots.append(i if link[1] == 0 or n.parent < 0 else roots[n.parent])
    return roots


def chosen_elements(g: Grammar, links: Links, nodes: list[Node], root: int) -> list[str]:
    """Return the elements put into the set rooted at node ``root`` so far."""
    roots = _roots(g, links, nodes)
    out = []
    for i, n in enumerate(nodes):
        p = g.productions[n.production]
        if roots[i] == root and p.rhs and g.is_terminal(p.rhs[0]):
            s, k = links[p.lhs]
            out.append(s.elements[k])
    return out


def parent_step_of(g: Grammar, nodes: list[Node], parent: int) -> str:
    """Return the step text of node ``parent`` ('' for none)."""
    if parent < 0 or parent >= len(nodes):
        return ""
    return g.productions[nodes[parent].production].description


def progress_steps(g: Grammar, links: Links, nodes: list[Node]) -> list[str]:
    """Return the step texts decided so far, in planning (top-down) order."""
    roots = _roots(g, links, nodes)
    out = []
    for i, n in enumerate(nodes):
        p = g.productions[n.production]
        if roots[i] == i:
            s = links[p.lhs][0]
            parent = parent_step_of(g, nodes, n.parent)
            out.append(set_step_text(s, chosen_elements(g, links, nodes, i), parent))
        elif roots[i] is None and p.description:
            out.append(p.description)
    return out


def execution_steps(derivation: Derivation, links: Links) -> list[dict[str, Any]]:
    """Return the plan's steps in execution order (empty if no production has a step text)."""
    g = derivation.grammar
    if not links and not any(p.description for p in g.productions):
        return []
    out: list[dict[str, Any]] = []

    def elements(node: TreeNode) -> list[str]:
        found = []
        for child in node.children:
            if isinstance(child, TreeNode):
                found += elements(child)
            elif child in g.terminal and g.productions[node.production].lhs in links:
                found.append(g.terminal[child].description or child)
        return found

    def visit(node: TreeNode) -> str | None:
        text = g.productions[node.production].description
        refs: list[str] = []
        sets = []
        for child in node.children:
            if isinstance(child, TreeNode):
                if child.lhs in links:
                    sets.append(child)
                    continue
                ref = visit(child)
                if ref is not None:
                    refs.append(ref)
            else:
                refs.append(g.phrase(child))
        for child in sets:
            s = links[child.lhs][0]
            chosen = elements(child)
            out.append(
                {
                    "id": len(out) + 1,
                    "step": set_step_text(s, chosen, text),
                    "makes": s.phrase,
                    "set": chosen,
                    "uses": [],
                }
            )
            refs.append(f"step:{len(out)}")
        if not text:
            steps = [r for r in refs if r.startswith("step:")]
            return steps[0] if len(steps) == 1 else None
        out.append({"id": len(out) + 1, "step": text, "makes": g.phrase(node.lhs), "uses": refs})
        return f"step:{len(out)}"

    if derivation.root is not None:
        visit(derivation.root)
    return out

"""A plan built from an accepting configuration: word, derivation tree, execution order."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from fllm_cli.automaton.pda import Config, Node
from fllm_cli.grammar.cfg import Grammar


@dataclass
class TreeNode:
    """A derivation node: the production applied and its children in slot order."""

    id: int
    production: int
    lhs: str
    children: list[TreeNode | str] = field(default_factory=list)


@dataclass
class Step:
    """One executed tool: its inputs (``input:NAME`` or ``step:ID``) and output modality."""

    id: int
    tool: str
    inputs: list[str]
    output: str
    node: int

    def as_dict(self) -> dict[str, Any]:
        """Return the JSON form."""
        return {"id": self.id, "tool": self.tool, "inputs": self.inputs, "output": self.output}


@dataclass
class Derivation:
    """A complete derivation of a word."""

    grammar: Grammar
    word: list[str]
    root: TreeNode | None
    nodes: list[TreeNode]

    @classmethod
    def from_config(cls, grammar: Grammar, config: Config) -> Derivation:
        """Rebuild the derivation tree recorded in an accepting configuration."""
        raw: list[Node] = config.node_list()
        nodes = [
            TreeNode(i, n.production, grammar.productions[n.production].lhs)
            for i, n in enumerate(raw)
        ]
        slots: dict[int, dict[int, TreeNode]] = {}
        root: TreeNode | None = None
        for i, n in enumerate(raw):
            if n.parent < 0:
                root = nodes[i]
            else:
                slots.setdefault(n.parent, {})[n.slot] = nodes[i]
        for node in nodes:
            rhs = grammar.productions[node.production].rhs
            mine = slots.get(node.id, {})
            node.children = [
                mine.get(k, sym) if not grammar.is_terminal(sym) else sym
                for k, sym in enumerate(rhs)
            ]
        return cls(grammar, config.word_list(), root, nodes)

    def head(self, node: TreeNode) -> str | None:
        """Return the terminal a node's production starts with (a tool or an input), if any."""
        rhs = self.grammar.productions[node.production].rhs
        return rhs[0] if rhs and self.grammar.is_terminal(rhs[0]) else None

    def steps(self) -> list[Step]:
        """Return tool steps in execution order (inputs before the tools that use them)."""
        out: list[Step] = []
        ids: dict[int, str] = {}

        def visit(node: TreeNode) -> str | None:
            head = self.head(node)
            refs: list[str] = []
            for child in node.children:
                if isinstance(child, TreeNode):
                    ref = visit(child)
                    if ref is not None:
                        refs.append(ref)
            if head is not None and self.grammar.terminal[head].kind == "input":
                return head
            if head is not None and self.grammar.terminal[head].kind == "tool":
                step = Step(len(out) + 1, head, refs, node.lhs, node.id)
                out.append(step)
                ids[node.id] = f"step:{step.id}"
                return ids[node.id]
            return refs[0] if len(refs) == 1 else None

        if self.root is not None:
            visit(self.root)
        return out

    def tree_dict(self) -> dict[str, Any] | None:
        """Return the tree as JSON-ready nested dicts."""

        def conv(node: TreeNode) -> dict[str, Any]:
            head = self.head(node)
            kind = self.grammar.terminal[head].kind if head else None
            if kind == "input":
                return {"input": head.removeprefix("input:") if head else "", "modality": node.lhs}
            children = [
                conv(c) if isinstance(c, TreeNode) else {"terminal": c} for c in node.children
            ]
            if kind == "tool":
                return {
                    "tool": head,
                    "output": node.lhs,
                    "inputs": [c for c in children if "terminal" not in c],
                }
            return {"symbol": node.lhs, "children": children}

        return conv(self.root) if self.root is not None else None

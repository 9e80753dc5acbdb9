"""A plan built from an accepting configuration: word, derivation tree, execution order."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from fllm_cli.automaton.pda import Config, Node
from fllm_cli.grammar.cfg import Grammar

# Deeper derivation trees are left out of plan documents and drawings (the word and the steps,
# which are flat, are always complete); only recursive grammars on long plans get there.
MAX_TREE_DEPTH = 200


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

    def depth(self) -> int:
        """Return how many levels the tree has (0 for an empty derivation)."""
        deepest = 0
        todo = [(self.root, 1)] if self.root is not None else []
        while todo:
            node, level = todo.pop()
            deepest = max(deepest, level)
            todo.extend((c, level + 1) for c in node.children if isinstance(c, TreeNode))
        return deepest

    def steps(self) -> list[Step]:
        """Return tool steps in execution order (inputs before the tools that use them).

        Children are visited before their node, left to right, without recursion: a tree may
        be as deep as the plan is long.
        """
        out: list[Step] = []
        result: dict[int, str | None] = {}
        todo: list[tuple[TreeNode, bool]] = [(self.root, False)] if self.root is not None else []
        while todo:
            node, expanded = todo.pop()
            if not expanded:
                todo.append((node, True))
                kids = [c for c in node.children if isinstance(c, TreeNode)]
                todo.extend((c, False) for c in reversed(kids))
                continue
            kids = [c for c in node.children if isinstance(c, TreeNode)]
            refs = [r for r in (result.pop(c.id) for c in kids) if r is not None]
            head = self.head(node)
            role = self.grammar.terminal[head].role if head is not None else None
            if role == "input":
                result[node.id] = head
            elif role == "tool":
                assert head is not None
                out.append(Step(len(out) + 1, head, refs, node.lhs, node.id))
                result[node.id] = f"step:{len(out)}"
            else:
                result[node.id] = refs[0] if len(refs) == 1 else None
        return out

    def tree_dict(self) -> dict[str, Any] | None:
        """Return the tree as JSON-ready nested dicts; None when empty or deeper than
        MAX_TREE_DEPTH (nested JSON that deep cannot be written or read by most tools)."""
        if self.root is None or self.depth() > MAX_TREE_DEPTH:
            return None

        def conv(node: TreeNode) -> dict[str, Any]:
            head = self.head(node)
            role = self.grammar.terminal[head].role if head else None
            if role == "input":
                return {"input": head.removeprefix("input:") if head else "", "modality": node.lhs}
            children = [
                conv(c) if isinstance(c, TreeNode) else {"terminal": c} for c in node.children
            ]
            if role == "tool":
                return {
                    "tool": head,
                    "output": node.lhs,
                    "inputs": [c for c in children if "terminal" not in c],
                }
            return {"symbol": node.lhs, "children": children}

        return conv(self.root) if self.root is not None else None

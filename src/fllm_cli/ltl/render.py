"""Show a compiled agent automaton as a table, Graphviz DOT, Mermaid or JSON."""

from __future__ import annotations

import json
from typing import Any

from fllm_cli.ltl.automaton import Automaton
from fllm_cli.ltl.formula import to_sexp
from fllm_cli.ltl.spec import AgentSpec

FORMATS = ("table", "dot", "mermaid", "json")


def node_labels(spec: AgentSpec, automaton: Automaton) -> list[str]:
    """Name each node after the state(s) whose moves enter it; the initial node is 'start'."""
    entering = automaton.entering()
    labels = []
    for node, names in enumerate(entering):
        ordered = [n for n in spec.names if n in names]
        label = " | ".join(ordered) if ordered else "start"
        if node == automaton.initial and ordered:
            label = "start | " + label
        labels.append(label)
    return labels


def to_json(spec: AgentSpec, automaton: Automaton) -> dict[str, Any]:
    """Return the automaton and the states it moves through as plain data."""
    labels = node_labels(spec, automaton)
    return {
        "agent": spec.name,
        "behavior": to_sexp(spec.behavior),
        "start": spec.start,
        "final": spec.final,
        "states": [
            {"name": s.name, "tag": s.text, "env_input": s.env_input, "choices": s.choices}
            for s in spec.states
        ],
        "initial": automaton.initial,
        "nodes": [
            {
                "id": node,
                "label": labels[node],
                "accepting": node in automaton.accepting,
                "distance_to_final": automaton.distance[node],
            }
            for node in range(automaton.size)
        ],
        "edges": [
            {"from": node, "to": target, "state": name, "tag": spec.state(name).text}
            for node, row in enumerate(automaton.delta)
            for name, target in row
        ],
    }


def to_dot(spec: AgentSpec, automaton: Automaton) -> str:
    """Return a Graphviz digraph; accepting nodes are double circles."""
    labels = node_labels(spec, automaton)
    lines = [f'digraph "{spec.name}" {{', "  rankdir=LR;", '  __start [shape=point, label=""];']
    for node in range(automaton.size):
        shape = "doublecircle" if node in automaton.accepting else "circle"
        lines.append(f'  n{node} [shape={shape}, label="{_dot(labels[node])}"];')
    lines.append(f"  __start -> n{automaton.initial};")
    for node, row in enumerate(automaton.delta):
        for name, target in row:
            style = ", style=dashed" if spec.state(name).env_input else ""
            lines.append(f'  n{node} -> n{target} [label="{_dot(spec.state(name).text)}"{style}];')
    lines.append("}")
    return "\n".join(lines) + "\n"


def _dot(text: str) -> str:
    return text.replace("\\", "\\\\").replace('"', '\\"')


def to_mermaid(spec: AgentSpec, automaton: Automaton) -> str:
    """Return a Mermaid state diagram; ``[*]`` marks the start and the accepting nodes."""
    labels = node_labels(spec, automaton)
    lines = ["stateDiagram-v2"]
    for node in range(automaton.size):
        lines.append(f'    state "{_mermaid(labels[node])}" as n{node}')
    lines.append(f"    [*] --> n{automaton.initial}")
    for node, row in enumerate(automaton.delta):
        for name, target in row:
            lines.append(f"    n{node} --> n{target} : {_mermaid(name)}")
    for node in sorted(automaton.accepting):
        lines.append(f"    n{node} --> [*]")
    return "\n".join(lines) + "\n"


def _mermaid(text: str) -> str:
    return text.replace('"', "'").replace(":", "").replace(";", ",")


TABLE_HEADERS = ("node", "after", "final", "to final", "allowed next (tag → node)")


def table_rows(spec: AgentSpec, automaton: Automaton) -> tuple[str, list[tuple[str, ...]]]:
    """Return the table's title and one row per node with the states allowed next."""
    labels = node_labels(spec, automaton)
    rows: list[tuple[str, ...]] = []
    for node in range(automaton.size):
        moves = ", ".join(
            f"{spec.state(name).text.strip()} → {target}" for name, target in automaton.delta[node]
        )
        rows.append(
            (
                str(node),
                labels[node],
                "yes" if node in automaton.accepting else "",
                str(automaton.distance[node]),
                moves or "(end)",
            )
        )
    return f"{spec.name}: {to_sexp(spec.behavior)}", rows


def plain_table(title: str, headers: tuple[str, ...], rows: list[tuple[str, ...]]) -> str:
    """Return a table as aligned plain text, columns separated by two spaces."""
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(headers)]
    lines = [title, "  ".join(h.ljust(w) for h, w in zip(headers, widths)).rstrip()]
    lines += ["  ".join(c.ljust(w) for c, w in zip(row, widths)).rstrip() for row in rows]
    return "\n".join(lines) + "\n"


def render(spec: AgentSpec, automaton: Automaton, fmt: str) -> str:
    """Return the automaton in ``fmt`` (table, dot, mermaid, json) as text."""
    if fmt == "dot":
        return to_dot(spec, automaton)
    if fmt == "mermaid":
        return to_mermaid(spec, automaton)
    if fmt == "json":
        return json.dumps(to_json(spec, automaton), indent=2) + "\n"
    title, rows = table_rows(spec, automaton)
    return plain_table(title, TABLE_HEADERS, rows)

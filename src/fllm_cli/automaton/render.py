"""Print an automaton: a rich table, Graphviz DOT, Mermaid, or JSON."""

from __future__ import annotations

import json
from collections import defaultdict
from typing import Any

from rich.table import Table

from fllm_cli.automaton.pda import PDA


def to_dict(pda: PDA) -> dict[str, Any]:
    """Return the automaton as JSON-ready data."""
    return {
        "states": list(pda.states),
        "start": pda.start,
        "accept": list(pda.accept),
        "stack_alphabet": list(pda.stack_alphabet),
        "initial_stack": pda.bottom,
        "transitions": [
            {
                "from": t.source,
                "to": t.target,
                "input": t.read,
                "pop": t.pop,
                "push": list(t.push),
                "label": t.label(),
            }
            for t in pda.transitions
        ],
    }


def to_json(pda: PDA) -> str:
    """Return pretty JSON."""
    return json.dumps(to_dict(pda), indent=2, ensure_ascii=False) + "\n"


def _grouped(pda: PDA) -> dict[tuple[str, str], list[str]]:
    edges: dict[tuple[str, str], list[str]] = defaultdict(list)
    for t in pda.transitions:
        edges[(t.source, t.target)].append(t.label())
    return edges


def _q(text: str) -> str:
    return text.replace("\\", "\\\\").replace('"', '\\"')


def to_dot(pda: PDA) -> str:
    """Return a Graphviz digraph; parallel transitions share one edge label."""
    lines = [
        "digraph pda {",
        "  rankdir=LR;",
        '  node [shape=circle, fontname="Helvetica"];',
        '  __start [shape=point, label=""];',
    ]
    for s in pda.states:
        shape = "doublecircle" if s in pda.accept else "circle"
        lines.append(f'  "{_q(s)}" [shape={shape}];')
    lines.append(f'  __start -> "{_q(pda.start)}";')
    for (a, b), labels in _grouped(pda).items():
        label = "\\n".join(_q(x) for x in labels)
        lines.append(f'  "{_q(a)}" -> "{_q(b)}" [label="{label}"];')
    lines.append("}")
    return "\n".join(lines) + "\n"


def _mid(state: str) -> str:
    return "s_" + "".join(c if c.isalnum() else "_" for c in state)


def to_mermaid(pda: PDA) -> str:
    """Return a Mermaid state diagram."""
    lines = ["stateDiagram-v2"]
    for s in pda.states:
        lines.append(f'  state "{s}" as {_mid(s)}')
    lines.append(f"  [*] --> {_mid(pda.start)}")
    for (a, b), labels in _grouped(pda).items():
        text = "<br/>".join(x.replace(":", "#58;") for x in labels)
        lines.append(f"  {_mid(a)} --> {_mid(b)}: {text}")
    for s in pda.accept:
        lines.append(f"  {_mid(s)} --> [*]")
    return "\n".join(lines) + "\n"


def to_table(pda: PDA, title: str = "") -> Table:
    """Return a rich table of the transitions, with the automaton's facts as caption."""
    table = Table(title=title or None, show_lines=False, expand=False)
    table.add_column("#", justify="right", style="dim")
    table.add_column("from")
    table.add_column("to")
    table.add_column("transition (input, pop; push)")
    for i, t in enumerate(pda.transitions, 1):
        table.add_row(str(i), t.source, t.target, t.label())
    table.caption = (
        f"states {{{', '.join(pda.states)}}}  start {pda.start}  "
        f"accept {{{', '.join(pda.accept)}}}  initial stack {pda.bottom}\n"
        f"stack alphabet {{{', '.join(pda.stack_alphabet)}}}"
    )
    return table


def to_plain_table(pda: PDA) -> str:
    """Return the table as plain text (for golden files)."""
    lines = [
        f"states: {', '.join(pda.states)}",
        f"start: {pda.start}",
        f"accept: {', '.join(pda.accept)}",
        f"initial stack: {pda.bottom}",
        f"stack alphabet: {', '.join(pda.stack_alphabet)}",
        "transitions:",
    ]
    lines += [f"  {t.source} -> {t.target}  {t.label()}" for t in pda.transitions]
    return "\n".join(lines) + "\n"

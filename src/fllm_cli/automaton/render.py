"""Describe an automaton: table rows, Graphviz DOT, Mermaid, or JSON (the CLI draws tables)."""

from __future__ import annotations

import json
from collections import defaultdict
from typing import Any

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


TABLE_HEADERS = ("#", "from", "to", "transition (input, pop; push)")


def table_rows(pda: PDA) -> list[tuple[str, str, str, str]]:
    """Return one row per transition: number, source, target, ``(input, pop; push)``."""
    return [(str(i), t.source, t.target, t.label()) for i, t in enumerate(pda.transitions, 1)]


def facts(pda: PDA) -> str:
    """Return the automaton's states, start, accepting states and stacks in two lines."""
    return (
        f"states {{{', '.join(pda.states)}}}  start {pda.start}  "
        f"accept {{{', '.join(pda.accept)}}}  initial stack {pda.bottom}\n"
        f"stack alphabet {{{', '.join(pda.stack_alphabet)}}}"
    )


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

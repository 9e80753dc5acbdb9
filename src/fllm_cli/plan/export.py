"""Plan exporters: text, JSON, YAML, Mermaid, DOT."""

from __future__ import annotations

import json
from typing import Any

import yaml

from fllm_cli.domain.model import Task
from fllm_cli.plan.document import step_label, step_lines

FORMATS = ("rich", "text", "json", "yaml", "mermaid", "dot")


def _task_of(doc: dict[str, Any]) -> Task:
    return Task(doc.get("task", ""), tuple(doc.get("inputs", {}).items()), doc.get("output", ""))


def to_text(doc: dict[str, Any]) -> str:
    """Return the execution order, one step per line."""
    return "\n".join(step_lines(doc, _task_of(doc))) + "\n"


def to_json(doc: dict[str, Any]) -> str:
    """Return pretty JSON."""
    return json.dumps(doc, indent=2, ensure_ascii=False) + "\n"


def to_yaml(doc: dict[str, Any]) -> str:
    """Return YAML (keys in document order)."""
    return yaml.safe_dump(doc, sort_keys=False, allow_unicode=True, width=100)


def _esc(text: str) -> str:
    return text.replace('"', "'")


def _graph_edges(doc: dict[str, Any]) -> tuple[list[tuple[str, str]], list[tuple[str, str]]]:
    """Return (node id, label) pairs and (source, target) data-flow edges."""
    nodes: list[tuple[str, str]] = []
    edges: list[tuple[str, str]] = []
    inputs = doc.get("inputs", {})
    for name, modality in inputs.items():
        nodes.append((f"in_{_ident(name)}", f"input {name}: {modality}"))
    if any("tool" not in step for step in doc.get("steps", [])):
        return _flow_edges(doc)
    for step in doc.get("steps", []):
        sid = f"s{step['id']}"
        nodes.append((sid, f"{step['id']}. {step['tool']}"))
        for ref in step["inputs"]:
            src = f"s{ref[5:]}" if ref.startswith("step:") else f"in_{_ident(ref[6:])}"
            edges.append((src, sid))
    if doc.get("steps"):
        nodes.append(("out", f"output: {doc.get('output', '')}"))
        edges.append((f"s{doc['steps'][-1]['id']}", "out"))
    else:
        word = doc.get("word", [])
        for i, t in enumerate(word):
            nodes.append((f"w{i}", t))
            if i:
                edges.append((f"w{i - 1}", f"w{i}"))
    return nodes, edges


def _flow_edges(doc: dict[str, Any]) -> tuple[list[tuple[str, str]], list[tuple[str, str]]]:
    """Steps of a grammar or automaton plan: each uses the steps it names, else the previous."""
    nodes: list[tuple[str, str]] = []
    edges: list[tuple[str, str]] = []
    for k, step in enumerate(doc.get("steps", [])):
        sid = f"s{step['id']}"
        nodes.append((sid, f"{step['id']}. {step_label(step)}"))
        refs = [r for r in step.get("uses", []) if str(r).startswith("step:")]
        for ref in refs:
            edges.append((f"s{ref[5:]}", sid))
        if not refs and k and "uses" not in step:
            edges.append((f"s{doc['steps'][k - 1]['id']}", sid))
    return nodes, edges


def _ident(name: str) -> str:
    return "".join(c if c.isalnum() else "_" for c in name)


def to_mermaid(doc: dict[str, Any]) -> str:
    """Return a Mermaid flowchart of the data flow."""
    nodes, edges = _graph_edges(doc)
    lines = ["flowchart LR"]
    lines += [f'  {n}["{_esc(label)}"]' for n, label in nodes]
    lines += [f"  {a} --> {b}" for a, b in edges]
    return "\n".join(lines) + "\n"


def to_dot(doc: dict[str, Any]) -> str:
    """Return a Graphviz digraph of the data flow."""
    nodes, edges = _graph_edges(doc)
    lines = ["digraph plan {", "  rankdir=LR;", '  node [shape=box, fontname="Helvetica"];']
    lines += [f'  {n} [label="{_esc(label)}"];' for n, label in nodes]
    lines += [f"  {a} -> {b};" for a, b in edges]
    lines.append("}")
    return "\n".join(lines) + "\n"


EXPORTERS = {
    "text": to_text,
    "json": to_json,
    "yaml": to_yaml,
    "mermaid": to_mermaid,
    "dot": to_dot,
}

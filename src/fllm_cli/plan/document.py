"""The plan document: what ``fllm plan`` writes and ``fllm verify`` reads."""

from __future__ import annotations

from typing import Any

from fllm_cli.domain.model import Domain, Task
from fllm_cli.plan.model import MAX_TREE_DEPTH, Derivation

FORMAT_VERSION = 1


def describe_input(ref: str, task: Task) -> str:
    """Return 'the input image' / 'the output of step 2' for a step input reference."""
    if ref.startswith("step:"):
        return f"the output of step {ref[5:]}"
    name = ref.removeprefix("input:")
    modality = dict(task.inputs).get(name, "")
    return (
        f"the input {name}"
        if name == modality or not modality
        else f"the input {name} ({modality})"
    )


def build_document(
    domain: Domain,
    task: Task,
    derivation: Derivation,
    model: str,
    stats: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Return the JSON-ready plan document."""
    steps: list[Any] = [s.as_dict() for s in derivation.steps()]
    doc: dict[str, Any] = {
        "fllm_plan": FORMAT_VERSION,
        "domain": domain.name,
        "domain_path": domain.path,
        "task": task.text,
        "inputs": {name: modality for name, modality in task.inputs},
        "output": task.output,
        "model": model,
        "valid": True,
        "word": derivation.word,
        "steps": steps,
        "tree": derivation.tree_dict(),
    }
    if doc["tree"] is None and derivation.root is not None:
        doc["tree_omitted"] = (
            f"the derivation is {derivation.depth()} levels deep; trees deeper than "
            f"{MAX_TREE_DEPTH} are left out (word and steps are complete)"
        )
    if stats is not None:
        doc["stats"] = stats
    return doc


def step_lines(doc: dict[str, Any], task: Task) -> list[str]:
    """Return 'Step 1: Image Classification on the input image → text' lines."""
    lines = []
    for step in doc.get("steps", []):
        if "tool" not in step:
            note = f" — {step['note']}" if step.get("note") else ""
            lines.append(f"Step {step['id']}: {step_label(step)}{note}")
            continue
        ins = " and ".join(describe_input(r, task) for r in step["inputs"]) or "nothing"
        lines.append(f"Step {step['id']}: {step['tool']} on {ins} → {step['output']}")
    if not doc.get("steps"):
        lines = [f"{i}. {t}" for i, t in enumerate(doc.get("word", []), 1)]
    return lines


def step_label(step: dict[str, Any]) -> str:
    """Return the text of a non-tool step (grammar ``step`` or automaton ``text``)."""
    for key in ("text", "step"):
        if key in step:
            return str(step[key])
    hidden = ("id", "input", "note", "note_error")
    return ", ".join(f"{k}: {v}" for k, v in step.items() if k not in hidden)


def _task_from_doc(doc: dict[str, Any]) -> Task:
    """Rebuild the Task a plan document describes."""
    return Task(doc.get("task", ""), tuple(doc.get("inputs", {}).items()), doc.get("output", ""))

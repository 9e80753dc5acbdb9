"""Hand-written stage replies for the scripted model."""

from __future__ import annotations

import json
from pathlib import Path

HERE = Path(__file__).parent / "replies"


def code(name: str) -> str:
    """Return a hand-written program as a fenced reply."""
    return "```python\n" + (HERE / f"{name}_code.py").read_text(encoding="utf-8") + "```\n"


DEFINITION = (
    "[[GOAL: minimise the total cost]]\n[[Decision Variables: amounts shipped and roasted]]\n"
    "[[Constraints Reasoning: flows must balance]]\n[[Constraints: capacity, demand, "
    "conservation, non-negative whole amounts]]"
)


def variable(name: str, smt: bool = True, requirement: str | None = None) -> dict:
    """Return one FORMULATOR entry with the six fields."""
    return {
        "name": name,
        "SMT_variable": smt,
        "number_of_variables": 1,
        "data_source": "background",
        "value": f"the {name}",
        "specific_requirement": requirement,
    }


FORMULATION = json.dumps(
    {
        "variable_1": variable("beans", requirement="non-negative"),
        "variable_2": variable("total_cost", requirement="minimize"),
    }
)

STEPS_FORMULATION = json.dumps(
    {
        stage: {"variable_1": variable(stage, smt=False)}
        for stage in ("objects", "predicates", "actions", "update", "goal")
    }
)


def assessment(labels: list[str], wrong: str | None = None, fix: str = "NULL") -> str:
    """Return a self-assessment reply; ``wrong`` names the step rated 0."""
    parts = []
    for label in labels:
        bad = label == wrong
        parts.append(
            f"[[{label}]]\nReasoning: {'the cost misses roasting' if bad else 'fine'}\n"
            f"Rating: {0 if bad else 1}\nFix:\n{fix if bad else 'NULL'}\n[[END]]"
        )
    return "\n".join(parts)


MC = ["DEFINITION", "FORMULATION", "CODE"]
MS = ["FORMULATION", "CODE"]


def formatted(answer: dict) -> str:
    """Return a formatter reply."""
    return f"JSON:\n{json.dumps(answer)}\nCheck:\nAll requirements are met; it is realistic."

"""The seed corpus: the shipped inputs of every kind, plus plans made with ``--model random:N``.

Seeds are grouped by input kind. Domain seeds are sorted into tool, grammar and automaton
domains by their ``kind`` (the default rule of docs/spec.md); files that do not parse go with
the tool domains, the default kind.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

import yaml

from fuzz.oracle import REPO, child_env, run_argv
from fuzz.zygote import ForkServer

KINDS = (
    "domain-tools",
    "domain-grammar",
    "domain-automaton",
    "agent-sexp",
    "agent-yaml",
    "problem",
    "plan-text",
    "plan-json",
    "transcript",
    "cli-args",
)

# Tasks for which seed plans are made with the random model: (domain, argv after the task).
PLAN_TASKS = [
    ("domains/openagi.yaml", ["-i", "image", "--output", "text"]),
    ("domains/openagi.yaml", ["-i", "text", "--output", "image"]),
    ("domains/openagi.yaml", ["-i", "image", "-i", "query=text", "--output", "text"]),
    ("domains/cooking.yaml", []),
    ("tests/data/specs/anbn.yaml", []),
    ("domains/daily_plan.yaml", []),
    ("domains/risk_management.yaml", ["--var", "seller=Shareholders", "--var", "buyer=Microsoft"]),
]


def _read(p: Path) -> str:
    return p.read_bytes().decode("utf-8", "surrogateescape")


def domain_kind_of(text: str) -> str:
    try:
        doc = yaml.safe_load(text)
    except Exception:
        return "tools"
    if not isinstance(doc, dict):
        return "tools"
    kind = doc.get("kind")
    if kind in ("tools", "grammar", "automaton"):
        return kind
    return "grammar" if "grammar" in doc else "automaton" if "automaton" in doc else "tools"


def file_seeds() -> dict[str, list[tuple[str, str]]]:
    """Seeds read from the repository, by input kind: lists of (repo-relative name, text)."""
    out: dict[str, list[tuple[str, str]]] = {k: [] for k in KINDS}
    domain_files = sorted(REPO.glob("domains/*.yaml"))
    domain_files += sorted(REPO.glob("tests/data/specs/*.yaml"))
    domain_files += sorted(REPO.glob("tests/data/broken/*.yaml"))
    domain_files += sorted(REPO.glob("fuzz/findings/templates/*.yaml"))  # template bombs
    for p in domain_files:
        text = _read(p)
        out[f"domain-{domain_kind_of(text)}"].append((str(p.relative_to(REPO)), text))
    for p in sorted(REPO.glob("domains/agents/*.sexp")):
        out["agent-sexp"].append((str(p.relative_to(REPO)), _read(p)))
    for p in sorted(REPO.glob("domains/agents/*.yaml")):
        out["agent-yaml"].append((str(p.relative_to(REPO)), _read(p)))
    for p in sorted(REPO.glob("domains/problems/*.yaml")):
        out["problem"].append((str(p.relative_to(REPO)), _read(p)))
    for p in [REPO / "prompts/react_examples.txt", *sorted(REPO.glob("tests/data/specs/*.txt"))]:
        if p.exists():
            out["transcript"].append((str(p.relative_to(REPO)), _read(p)))
    return out


def random_plans(
    count_per_task: int = 2, seed: int = 0, runner: ForkServer | None = None
) -> list[dict]:
    """Plans made by ``fllm plan --model random:N``: dicts with domain, argv, the JSON and text.

    Each ``fllm plan`` is a fork of ``runner``'s zygote when one is given, else a fresh process.
    """
    plans: list[dict] = []
    with tempfile.TemporaryDirectory(prefix="fllm-fuzz-corpus-") as tmp:
        for t, (domain, extra) in enumerate(PLAN_TASKS):
            for k in range(count_per_task):
                out = Path(tmp) / f"p{t}_{k}.json"
                argv = [
                    "plan",
                    str(REPO / domain),
                    "a task",
                    *extra,
                    "--model",
                    f"random:{seed * 1000 + t * 10 + k}",
                    "-q",
                    "-o",
                    str(out),
                ]
                run_argv(argv, os.getcwd(), child_env(tmp), None, 60.0, 2048 << 20, runner)
                if not out.exists():
                    continue
                doc = json.loads(out.read_text())
                doc.pop("domain_path", None)
                plans.append(
                    {
                        "domain": domain,
                        "argv": extra,
                        "json": json.dumps(doc, indent=2, ensure_ascii=False),
                        "text": "\n".join(doc["word"]) + "\n" if doc["word"] else "ε\n",
                        "inputs": doc.get("inputs"),
                        "output": doc.get("output"),
                    }
                )
    return plans

"""Does the embedded LLM know which tools a request needs? Measured against the encoder.

    .venv/bin/python bench/llm_judge.py                 # every held-out set
    .venv/bin/python bench/llm_judge.py --set office_docs --limit 10

For each request and each tool of its domain, two scores:

* ``llm``: the embedded model is asked "Does this request need TOOL (what it does)? yes/no"
  and the score is the calibrated preference for "yes" (``LocalModel.scores``);
* ``encoder``: the best cosine similarity between any unit of the request and the tool's
  "Name: description" text (the meaning signal's raw material).

Each signal ranks the domain's tools for the request; the figure is the ranking AUC (the chance
that a tool the reference plan uses is ranked above one it does not), averaged over requests,
and the combined AUC of the sum of both z-scored signals. An AUC of 0.5 is chance. The issue
"Plans from meaning" asked for the embedded model's own judgement to be evaluated; this is
that evaluation. Results go to ``bench/llm_judge_results.json``.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT / "bench"))

from plan_quality import reference_tools, request_sets  # noqa: E402

from fllm_cli.domain.load import load_domain  # noqa: E402
from fllm_cli.llm.base import ChoiceRequest  # noqa: E402
from fllm_cli.llm.registry import make_model  # noqa: E402
from fllm_cli.meaning.encoder import shared  # noqa: E402
from fllm_cli.search.semantic import similarities  # noqa: E402

QUESTION = (
    "A user asks: {task}\n\n"
    "Tool: {name}. {text}\n\n"
    "Is this tool needed to do what the user asks? Answer 1 for yes or 2 for no.\n"
    "1. yes\n2. no"
)


def auc(scores: list[float], wanted: list[bool]) -> float | None:
    pos = [s for s, w in zip(scores, wanted) if w]
    neg = [s for s, w in zip(scores, wanted) if not w]
    if not pos or not neg:
        return None
    wins = sum((p > n) + 0.5 * (p == n) for p in pos for n in neg)
    return wins / (len(pos) * len(neg))


def z(values: list[float]) -> list[float]:
    mean, spread = statistics.fmean(values), statistics.pstdev(values) or 1.0
    return [(v - mean) / spread for v in values]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--set", action="append")
    parser.add_argument("--limit", type=int, default=0)
    parser.add_argument("--mode", choices=["calibrated", "raw", "text"], default=None)
    args = parser.parse_args()
    model = make_model("local")
    encoder = shared()
    results = {}
    for name, (domain_path, rows) in request_sets().items():
        if name == "openagi-train" or (args.set and name not in args.set):
            continue
        domain = load_domain(domain_path)
        described = {t.name: t.description or "" for t in domain.tools}
        names = list(described)
        rows = rows[: args.limit] if args.limit else rows
        figures: dict[str, list[float]] = {"llm": [], "encoder": [], "both": []}
        started = time.perf_counter()
        for row in rows:
            wanted = [n in reference_tools(row) for n in names]
            llm = []
            for tool in names:
                prompt = QUESTION.format(task=row["task"], name=tool, text=described[tool])
                s = model.scores(ChoiceRequest(prompt, ("yes", "no"), kind="judge"), args.mode)
                llm.append(s[0] - s[1])
            _, symbols, sims, _ = similarities(encoder, described, row["task"])
            enc = [float(sims[:, symbols.index(t)].max()) for t in names]
            both = [a + b for a, b in zip(z(llm), z(enc))]
            for key, scores in (("llm", llm), ("encoder", enc), ("both", both)):
                value = auc(scores, wanted)
                if value is not None:
                    figures[key].append(value)
        results[name] = {k: round(float(np.mean(v)), 3) for k, v in figures.items()}
        results[name]["requests"] = len(rows)
        results[name]["seconds"] = round(time.perf_counter() - started, 1)
        print(name, results[name], flush=True)
    results["mode"] = args.mode or "default"
    (ROOT / "bench" / "llm_judge_results.json").write_text(json.dumps(results, indent=2) + "\n")


if __name__ == "__main__":
    main()

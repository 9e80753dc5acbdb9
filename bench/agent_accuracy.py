"""The README's ReAct agent on questions nobody tuned against (bench/heldout/agent/).

    .venv/bin/python bench/agent_accuracy.py                      # embedded model, all 36
    .venv/bin/python bench/agent_accuracy.py --model random:1 --limit 12
    .venv/bin/python bench/agent_accuracy.py --spec domains/agents/react.sexp --max-loops 3

Each question runs ``domains/agents/react.sexp`` with the tools it names and the set's corpus,
as ``fllm agent SPEC QUESTION --tools ... --corpus ... --max-loops 3`` would. Figures: answers
right (numbers within a relative 1e-6, text case-insensitively), answers the transcript's own
last observation does not contain (must be 0: the spec grounds its answer), transcripts
``check-trace`` rejects (must be 0), model tokens and seconds per question. Written from the
tools' documented behaviour by a helper that had not read the agent's code (see the set's
README). Results go to ``bench/agent_accuracy_results.json`` under the model's name.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))

from fllm_cli.errors import FllmError  # noqa: E402
from fllm_cli.llm.options import ModelOptions  # noqa: E402
from fllm_cli.llm.registry import make_model  # noqa: E402
from fllm_cli.ltl.api import AgentOptions, load_agent, run_agent  # noqa: E402
from fllm_cli.ltl.languages import content_rules  # noqa: E402
from fllm_cli.ltl.output import bare_transcript  # noqa: E402
from fllm_cli.ltl.runtime import Budget  # noqa: E402
from fllm_cli.ltl.tools import builtin_input_languages  # noqa: E402
from fllm_cli.ltl.trace import check_transcript  # noqa: E402

SET = ROOT / "bench" / "heldout" / "agent"
SPEC = ROOT / "domains" / "agents" / "react.sexp"


def right(answer: str | None, gold: str) -> bool:
    """Numbers within a relative 1e-6 (commas dropped), text case-insensitively."""
    if answer is None:
        return False
    a, g = answer.strip().rstrip(".").replace(",", ""), gold.strip().rstrip(".").replace(",", "")
    try:
        return abs(float(a) - float(g)) <= 1e-6 * max(1.0, abs(float(g)))
    except ValueError:
        return a.lower() == g.lower()


def measure(
    model_name: str,
    spec: Path,
    limit: int | None,
    loops: int,
    every: int = 1,
    examples: str | None = None,
) -> dict[str, Any]:
    rows = [json.loads(x) for x in (SET / "questions.jsonl").read_text().splitlines() if x]
    rows = rows[::every][:limit] if limit else rows[::every]
    model = make_model(model_name, ModelOptions(cache=False))
    agent, automaton = load_agent(str(spec))
    ok = ungrounded = rejected = failed = 0
    seconds: list[float] = []
    tokens: list[int] = []
    by_kind: dict[str, list[int]] = {}
    for row in rows:
        tools = tuple(row["tools"].split(","))
        budget = Budget(max_loops=loops)
        options = AgentOptions(
            tools=tools, corpus=str(SET / "corpus.jsonl"), budget=budget, examples=examples
        )
        start = time.perf_counter()
        try:
            run = run_agent(str(spec), row["question"], model, options)
        except FllmError as exc:
            failed += 1
            print(f"{row['id']}: {exc.message}", file=sys.stderr)
            seconds.append(time.perf_counter() - start)
            by_kind.setdefault(row["kind"], []).append(0)
            continue
        seconds.append(time.perf_counter() - start)
        tokens.append(run.stats.prompt_tokens + run.stats.completion_tokens)
        rules = content_rules(agent, builtin_input_languages(tools))
        results = check_transcript(agent, automaton, bare_transcript(run), tools=tools, rules=rules)
        rejected += not all(r.ok for r in results) or len(results) != 1
        observed = [s.text for s in run.steps if agent.state(s.state).env_input]
        if run.answer is not None and (not observed or run.answer not in observed[-1]):
            ungrounded += 1
        good = right(run.answer, row["answer"])
        ok += good
        by_kind.setdefault(row["kind"], []).append(int(good))
        print(f"{row['id']}: {'ok ' if good else 'bad'} {run.answer!r} (want {row['answer']!r})",
              file=sys.stderr)  # fmt: skip
    return {
        "model": model_name,
        "examples": examples,
        "questions": len(rows),
        "right": ok,
        "accuracy": round(ok / len(rows), 3) if rows else 0.0,
        "by_kind": {k: f"{sum(v)}/{len(v)}" for k, v in sorted(by_kind.items())},
        "answers_not_in_last_observation": ungrounded,
        "transcripts_check_trace_rejects": rejected,
        "runs_that_failed": failed,
        "seconds_median": round(statistics.median(seconds), 2) if seconds else 0.0,
        "tokens_median": int(statistics.median(tokens)) if tokens else 0,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model", default="local")
    parser.add_argument("--spec", type=Path, default=SPEC)
    parser.add_argument("--limit", type=int, default=None)
    parser.add_argument("--every", type=int, default=1, help="every k-th question (a sample)")
    parser.add_argument("--max-loops", type=int, default=3)
    parser.add_argument("--examples", default=None, help="few-shot examples file (--examples)")
    args = parser.parse_args()
    report = measure(args.model, args.spec, args.limit, args.max_loops, args.every, args.examples)
    print(json.dumps(report, indent=2))
    out = ROOT / "bench" / "agent_accuracy_results.json"
    saved = json.loads(out.read_text()) if out.exists() else {}
    shots = f"|{Path(args.examples).name}" if args.examples else ""
    saved[f"{args.model}|{args.spec.name}{shots}"] = report
    out.write_text(json.dumps(saved, indent=2) + "\n")


if __name__ == "__main__":
    main()

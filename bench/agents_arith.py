"""Arithmetic word problems under ReAct and the ablated ReAct of the spec paper.

Usage:
    python bench/agents_arith.py --model local [--shots 1] [--limit 30] [--max-loops 3]
        [--agents react,react-ablated,react-lines] [--answer number] [--no-tool-languages]

For each problem and each agent it reports whether the agent gave an answer (a number could be
read from it) and whether that number is right (relative tolerance 1e-4), with the tool calls
that failed (an ``Error:`` observation). The calculator's input is constrained by its arithmetic
grammar unless ``--no-tool-languages``; ``--answer`` constrains the answer (e.g. ``number``).
Any model back end works (``--model random`` gives a floor).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
from pathlib import Path

from fllm_cli.errors import FllmError
from fllm_cli.llm.registry import ModelOptions, make_model
from fllm_cli.ltl.api import AgentOptions, run_agent
from fllm_cli.ltl.runtime import Budget

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "domains" / "agents" / "arith.jsonl"
AGENTS = {
    "react": ROOT / "domains/agents/react.sexp",
    "react-ablated": ROOT / "domains/agents/react_ablation.sexp",
    "react-lines": ROOT / "domains/agents/react_lines.sexp",
}
NUMBER = re.compile(r"-?\d[\d,]*(?:\.\d+)?")


def read_number(answer: str | None) -> float | None:
    """Return the first number in the answer text, or None."""
    if not answer:
        return None
    match = NUMBER.search(answer)
    return float(match.group(0).replace(",", "")) if match else None


def correct(value: float | None, expected: float) -> bool:
    """Compare with a small relative tolerance."""
    return value is not None and abs(value - expected) <= 1e-4 * max(1.0, abs(expected))


def main() -> int:
    """Run the benchmark and print a table (and JSON with --json)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default=None)
    parser.add_argument("--shots", type=int, default=1)
    parser.add_argument("--limit", type=int, default=None)
    parser.add_argument("--max-loops", type=int, default=3)
    parser.add_argument("--max-steps", type=int, default=20)
    parser.add_argument("--max-tokens", type=int, default=96)
    parser.add_argument("--json", default=None, help="write per-problem results here")
    parser.add_argument("--answer", default=None, help="language of the answer, e.g. number")
    parser.add_argument(
        "--no-tool-languages",
        action="store_true",
        help="do not constrain tool inputs by the tools' declared languages",
    )
    parser.add_argument(
        "--agents", default=",".join(AGENTS), help="comma-separated subset of: " + ", ".join(AGENTS)
    )
    args = parser.parse_args()
    problems = [json.loads(line) for line in DATA.read_text().splitlines() if line.strip()][
        : args.limit
    ]
    agents = [a.strip() for a in args.agents.split(",") if a.strip()]
    unknown = [a for a in agents if a not in AGENTS]
    if unknown:
        print(f"error: unknown agent {unknown[0]!r}; known: {', '.join(AGENTS)}", file=sys.stderr)
        return 2
    model = make_model(args.model, ModelOptions())
    budget = Budget(max_steps=args.max_steps, max_loops=args.max_loops, max_tokens=args.max_tokens)
    options = AgentOptions(
        tools=("calculator",),
        examples=str(ROOT / "prompts/react_examples.txt"),
        shots=args.shots,
        budget=budget,
        answer=args.answer,
        tool_languages=not args.no_tool_languages,
    )
    rows = []
    start = time.perf_counter()
    try:
        for name in agents:
            path = AGENTS[name]
            for i, problem in enumerate(problems):
                run = run_agent(str(path), problem["question"], model, options)
                value = read_number(run.answer)
                rows.append(
                    {
                        "agent": name,
                        "id": i,
                        "answer": run.answer,
                        "value": value,
                        "expected": problem["answer"],
                        "correct": correct(value, problem["answer"]),
                        "steps": run.stats.steps,
                        "model_calls": run.stats.llm_calls,
                        "tool_calls": run.stats.tool_calls,
                        "tool_errors": run.stats.tool_errors,
                        "content_rejects": run.stats.content_rejects,
                        "seconds": round(run.stats.seconds, 1),
                    }
                )
                print(
                    f"{name:14} {i:2} {'ok ' if rows[-1]['correct'] else '-- '} {run.answer!r}",
                    file=sys.stderr,
                )
    except FllmError as exc:
        print(f"error: {exc.one_line()}", file=sys.stderr)
        return 1
    finally:
        model.close()
    print(
        f"model={model.name} shots={args.shots} problems={len(problems)} "
        f"max_loops={args.max_loops} answer={args.answer} "
        f"tool_languages={not args.no_tool_languages} seconds={time.perf_counter() - start:.0f}"
    )
    print(
        f"{'agent':14} {'answer rate':>12} {'accuracy':>9} {'calls/problem':>14}"
        f" {'tool errors':>12} {'s/problem':>10}"
    )
    for name in agents:
        mine = [r for r in rows if r["agent"] == name]
        answered = sum(r["value"] is not None for r in mine) / max(1, len(mine))
        accuracy = sum(r["correct"] for r in mine) / max(1, len(mine))
        calls = sum(r["model_calls"] for r in mine) / max(1, len(mine))
        tool_calls = sum(r["tool_calls"] for r in mine)
        tool_errors = sum(r["tool_errors"] for r in mine)
        seconds = sum(r["seconds"] for r in mine) / max(1, len(mine))
        print(
            f"{name:14} {answered:12.1%} {accuracy:9.1%} {calls:14.1f}"
            f" {f'{tool_errors}/{tool_calls}':>12} {seconds:10.1f}"
        )
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())

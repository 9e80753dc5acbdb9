"""``make bench``: compile time, feasible-move query time, planner overhead, long plans.

Stdlib + fllm only. Prints a table and writes ``bench/results.json``.

    .venv/bin/python bench/run.py            # everything (about 2–3 minutes)
    .venv/bin/python bench/run.py --quick    # fewer tasks, for a smoke test
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import os
import platform
import random
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(ROOT / "src"))

from gen_domain import generate  # noqa: E402

from fllm_cli import api  # noqa: E402
from fllm_cli.api import load_domain  # noqa: E402
from fllm_cli.automaton.lookahead import GrammarLookahead  # noqa: E402
from fllm_cli.automaton.pda import PDA, Config, pda_from_grammar  # noqa: E402
from fllm_cli.domain.load import read_domain  # noqa: E402
from fllm_cli.domain.model import Domain  # noqa: E402
from fllm_cli.errors import NoPlanError  # noqa: E402
from fllm_cli.grammar.compile import make_task, tool_grammar  # noqa: E402
from fllm_cli.llm.registry import make_model  # noqa: E402
from fllm_cli.search.planner import Budgets, Planner  # noqa: E402

OPENAGI = ROOT / "domains" / "openagi.yaml"
TASKS = HERE / "data" / "openagi_tasks.jsonl"
BIG_TOOLS, BIG_MODALITIES, BIG_SEED = 500, 20, 7
BIG_CAP = 15  # max_plan_steps for the capped planner run
GOALS = {
    "compile_s": 1.0,
    "query_median_ms": 1.0,
    "planner_ms_per_choice": 5.0,
    "long_plan_ratio_10000_to_200": 3.0,
}


def ms(seconds: float) -> float:
    """Round seconds to milliseconds with three decimals."""
    return round(seconds * 1000, 3)


def summary(samples: list[float]) -> dict[str, float]:
    """Return n, median, p95 and max of durations in seconds, as milliseconds."""
    if not samples:
        return {"n": 0, "median_ms": 0.0, "p95_ms": 0.0, "max_ms": 0.0}
    ordered = sorted(samples)
    p95 = ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))]
    return {
        "n": len(samples),
        "median_ms": ms(statistics.median(ordered)),
        "p95_ms": ms(p95),
        "max_ms": ms(ordered[-1]),
    }


def timed(fn: Callable[[], Any], repeat: int = 5) -> float:
    """Return the median wall time of ``fn`` over ``repeat`` runs."""
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def load_tasks() -> list[dict[str, Any]]:
    """Return the OpenAGI task interfaces (185 tasks)."""
    lines = TASKS.read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines if line.strip()]


def big_domain_path(folder: Path, cap: int | None = None) -> Path:
    """Write the generated 500-tool domain (optionally with a plan-length cap) into ``folder``."""
    path = folder / ("synthetic_500.yaml" if cap is None else f"synthetic_500_cap{cap}.yaml")
    text = generate(BIG_TOOLS, BIG_MODALITIES, BIG_SEED)
    if cap is not None:
        text = text.replace("limits:\n", f"limits:\n  max_plan_steps: {cap}\n", 1)
    path.write_text(text, encoding="utf-8")
    return path


def big_tasks(domain: Domain, count: int, seed: int = 3) -> list[tuple[list[str], str]]:
    """Return ``count`` random task interfaces over the generated domain."""
    rng = random.Random(seed)
    mods = [m.name for m in domain.modalities]
    out = []
    for _ in range(count):
        inputs = ["m00", *rng.sample(mods[1:], rng.randrange(0, 2))]
        out.append((inputs, rng.choice(mods[1:])))
    return out


# -- (a) compile -----------------------------------------------------------------------------


def compile_once(domain: Domain, inputs: list[str], output: str) -> GrammarLookahead:
    """Compile a task: grammar, PDA and look-ahead tables."""
    task = make_task(domain, "", inputs, output)
    return GrammarLookahead(pda_from_grammar(tool_grammar(domain, task)))


def bench_compile(big: Path) -> dict[str, Any]:
    """Time loading and compiling the OpenAGI and the generated domain."""
    openagi_load = timed(lambda: load_domain(OPENAGI))
    domain = load_domain(OPENAGI)
    openagi_task = timed(lambda: compile_once(domain, ["image"], "text"), repeat=20)
    big_parse = timed(lambda: read_domain(big), repeat=3)
    big_domain, _ = read_domain(big)
    assert big_domain is not None
    big_task = timed(lambda: compile_once(big_domain, ["m00"], "m07"), repeat=5)
    return {
        "openagi": {
            "load_and_check_s": round(openagi_load, 4),
            "task_compile_s": round(openagi_task, 5),
            "total_s": round(openagi_load + openagi_task, 4),
        },
        "synthetic_500": {
            "parse_s": round(big_parse, 4),
            "task_compile_s": round(big_task, 4),
            "total_s": round(big_parse + big_task, 4),
            "note": "semantic checks (check_domain) are not included: see README of bench",
        },
    }


# -- (b) feasible-move queries ---------------------------------------------------------------


def walk(
    look: GrammarLookahead, rng: random.Random, max_steps: int
) -> tuple[list[Config], list[float]]:
    """Random walk over feasible moves; return the configurations met and each query's time."""
    pda: PDA = look.pda
    config = pda.initial()
    seen: list[Config] = []
    times: list[float] = []
    for _ in range(max_steps):
        if pda.is_accepting(config):
            break
        start = time.perf_counter()
        moves = look.feasible_moves(config)
        times.append(time.perf_counter() - start)
        seen.append(config)
        if not moves:
            break
        config = rng.choice(moves)[1]
    return seen, times


def query_times(
    problems: list[GrammarLookahead], walks: int, max_steps: int, seed: int, cap_s: float
) -> dict[str, Any]:
    """Cold (fresh memo per task) and warm (same configurations again) query times."""
    cold: list[float] = []
    warm: list[float] = []
    exhausted = 0
    deadline = time.perf_counter() + cap_s
    tasks_done = 0
    for k, look in enumerate(problems):
        if time.perf_counter() > deadline:
            break
        rng = random.Random(seed + k)
        configs: list[Config] = []
        for _ in range(walks):
            seen, times = walk(look, rng, max_steps)
            configs += seen
            cold += times
        for config in configs:
            start = time.perf_counter()
            look.feasible_moves(config)
            warm.append(time.perf_counter() - start)
        exhausted += look.stats.exhausted
        tasks_done += 1
    return {
        "tasks": tasks_done,
        "cold": summary(cold),
        "warm": summary(warm),
        "exhausted_queries": exhausted,
    }


def bench_queries(big: Path, quick: bool) -> dict[str, Any]:
    """Query times on all OpenAGI task interfaces and on the generated domain."""
    domain = load_domain(OPENAGI)
    tasks = load_tasks()[: 20 if quick else None]
    openagi = [compile_once(domain, t["inputs"], t["output"]) for t in tasks]
    big_domain, _ = read_domain(big)
    assert big_domain is not None
    bigs = [compile_once(big_domain, i, o) for i, o in big_tasks(big_domain, 4 if quick else 12)]
    return {
        "openagi": query_times(openagi, walks=5, max_steps=30, seed=1, cap_s=30),
        # Uniform walks in the big domain favour 3-input tools and grow without end: cap them.
        "synthetic_500": query_times(bigs, walks=2, max_steps=12, seed=1, cap_s=45),
    }


# -- (c) planner overhead --------------------------------------------------------------------


def plan_stats(domain: Domain, inputs: list[str], output: str, seed: int) -> dict[str, Any]:
    """Plan one task with the random chooser; return its stats."""
    problem = api.compile_problem(domain, inputs=inputs, output=output)
    result = api.plan(problem, f"random:{seed}")
    return dict(result.stats.as_dict(), word_length=len(result.document["word"]))


def _plan_child(path: str, inputs: list[str], output: str, seed: int, queue: Any) -> None:
    domain, _ = read_domain(path)
    queue.put(plan_stats(domain, inputs, output, seed))  # type: ignore[arg-type]


def plan_with_timeout(path: Path, inputs: list[str], output: str, seed: int, limit: float) -> Any:
    """Plan in a child process; None if it takes longer than ``limit`` seconds."""
    ctx = mp.get_context("fork")
    queue = ctx.Queue()
    child = ctx.Process(target=_plan_child, args=(str(path), inputs, output, seed, queue))
    child.start()
    child.join(limit)
    if child.is_alive():
        child.terminate()
        child.join()
        return None
    return queue.get() if not queue.empty() else None


def per_choice(stats: list[dict[str, Any]]) -> dict[str, Any]:
    """Summarise planner seconds per choice point over runs."""
    values = [s["seconds"] / s["choice_points"] for s in stats if s["choice_points"]]
    out = summary(values)
    out["runs"] = len(stats)
    out["choice_points"] = sum(s["choice_points"] for s in stats)
    out["mean_word_length"] = round(statistics.mean(s["word_length"] for s in stats), 2)
    out["total_s"] = round(sum(s["seconds"] for s in stats), 3)
    return out


def bench_planner(big: Path, quick: bool) -> dict[str, Any]:
    """Planner time per choice point with the seeded random chooser."""
    domain = load_domain(OPENAGI)
    tasks = load_tasks()[: 20 if quick else None]
    stats = [plan_stats(domain, t["inputs"], t["output"], t["id"]) for t in tasks]
    big_domain, _ = read_domain(big)
    assert big_domain is not None
    big_runs: list[dict[str, Any]] = []
    timeouts = 0
    for k, (inputs, output) in enumerate(big_tasks(big_domain, 3)):
        got = plan_with_timeout(big, inputs, output, k, limit=20)
        if got is None:
            timeouts += 1
        else:
            big_runs.append(got)
    big_summary = per_choice(big_runs) if big_runs else {"runs": 0}
    big_summary["timeouts_20s"] = timeouts
    # With a plan-length cap, as a real domain of this size would declare.
    capped = big_domain_path(big.parent, cap=BIG_CAP)
    capped_runs = []
    capped_timeouts = 0
    for k, (inputs, output) in enumerate(big_tasks(big_domain, 3 if quick else 10)):
        got = plan_with_timeout(capped, inputs, output, k, limit=20)
        if got is None:
            capped_timeouts += 1
        else:
            capped_runs.append(got)
    capped_summary = per_choice(capped_runs) if capped_runs else {"runs": 0}
    capped_summary["timeouts_20s"] = capped_timeouts
    return {
        "openagi": per_choice(stats),
        "synthetic_500": big_summary,
        f"synthetic_500_cap{BIG_CAP}": capped_summary,
    }


# -- (d) long plans: cost per move as the plan grows ------------------------------------------

# A grammar whose random plans usually grow without end: each choice adds two pending symbols
# or removes one, so with a seed that never closes the plan every run uses its whole budget.
RECURSIVE = """kind: grammar
grammar:
  start: S
  terminals: {a: the a}
  productions:
    S: "S S S | a"
"""
LONG_SEED = 1
LONG_SIZES = (200, 1_000, 3_000, 10_000)
LONG_GOAL = 3.0  # the longest run's time per move, as a multiple of the 200-move run's


def plan_moves(path: Path, moves: int) -> dict[str, Any]:
    """Plan with the seeded random chooser under a move budget; return time per move."""
    problem = api.compile_problem(path, task="a long plan")
    planner = Planner(
        problem.pda,
        problem.lookahead,
        make_model(f"random:{LONG_SEED}"),
        problem.prompter(),
        Budgets(max_steps=moves, max_backtracks=None),
    )
    outcome = "plan"
    try:
        planner.run()
    except NoPlanError:
        outcome = "budget"
    stats = planner.stats
    return {
        "moves": stats.steps,
        "choice_points": stats.choice_points,
        "seconds": round(stats.seconds, 4),
        "ms_per_move": ms(stats.seconds / max(1, stats.steps)),
        "outcome": outcome,
    }


def bench_long_plans(folder: Path, quick: bool) -> dict[str, Any]:
    """Time per move at growing move budgets (median of a few runs each)."""
    path = folder / "recursive.yaml"
    path.write_text(RECURSIVE, encoding="utf-8")
    sizes = LONG_SIZES[:3] if quick else LONG_SIZES
    runs: dict[str, Any] = {}
    for size in sizes:
        tries = [plan_moves(path, size) for _ in range(1 if quick else 3)]
        runs[str(size)] = sorted(tries, key=lambda r: r["ms_per_move"])[len(tries) // 2]
    first, last = runs[str(sizes[0])], runs[str(sizes[-1])]
    ratio = last["ms_per_move"] / first["ms_per_move"] if first["ms_per_move"] else 0.0
    return {
        "domain": "S: S S S | a (random model, seed 1)",
        "runs": runs,
        "ratio_longest_to_shortest": round(ratio, 2),
        "goal_ratio": LONG_GOAL,
    }


# -- report ----------------------------------------------------------------------------------


README_TASK = (
    "Given noisy blurry grayscale image, how to return the caption in English step by step?"
)
README_GOALS = {"cold": 5.0, "warm": 1.5}


def bench_readme_command(runs: int) -> dict[str, Any]:
    """The README's first `fllm plan` command (embedded model), cold and warm, as a user runs it.

    Cold: a fresh fllm cache folder and no compiled bytecode (a bytecode folder of its own,
    empty, so every module of fllm and its dependencies is compiled from source, as on the first
    run after an install); warm: the same two folders again, as every later run. Python writes
    bytecode here even when the calling environment says not to (PYTHONDONTWRITEBYTECODE), since
    a user's runs do.
    """
    out: dict[str, Any] = {}
    cmd = [sys.executable, "-m", "fllm_cli", "plan", str(ROOT / "domains" / "openagi.yaml")]
    cmd += [README_TASK, "-f", "json"]
    cold, warm, tools = [], [], None
    for _ in range(runs):
        with tempfile.TemporaryDirectory() as home:
            env = {**os.environ, "FLLM_HOME": home, "PYTHONPYCACHEPREFIX": f"{home}/pycache"}
            env.pop("FLLM_MODEL", None)
            env.pop("PYTHONDONTWRITEBYTECODE", None)
            for samples in (cold, warm):
                start = time.perf_counter()
                done = subprocess.run(cmd, capture_output=True, text=True, env=env, check=True)
                samples.append(time.perf_counter() - start)
                doc = json.loads(done.stdout)
                tools = sorted(w for w in doc["word"] if not w.startswith("input:"))
    out["cold_s_median"] = round(statistics.median(cold), 2)
    out["warm_s_median"] = round(statistics.median(warm), 2)
    out["runs"] = runs
    out["tools"] = tools
    return out


CHOICE_GOAL_S = 0.3


def bench_local_choice() -> dict[str, Any]:
    """The embedded model per choice point, the prompt prefix kept (``--search greedy``).

    The README's task is planned step by step (the prompts recorded with ``--trace``; the first
    run also makes the model's 16-bit copy, timed apart); then a fresh process puts those
    prompts to the model again in order: the first choice reads its whole prompt, each later
    one only what changed since the one before.
    """
    out: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as home:
        env = {**os.environ, "FLLM_HOME": home, "FLLM_NO_CACHE": "1"}
        env.pop("FLLM_MODEL", None)
        trace = Path(home) / "run.jsonl"
        cmd = [sys.executable, "-m", "fllm_cli", "plan", str(ROOT / "domains" / "openagi.yaml")]
        cmd += [README_TASK, "--search", "greedy", "-f", "json"]
        for key in ("greedy_plan_first_run_s", "greedy_plan_s"):
            trace.unlink(missing_ok=True)
            start = time.perf_counter()
            subprocess.run([*cmd, "--trace", str(trace)], env=env, capture_output=True, check=True)
            out[key] = round(time.perf_counter() - start, 2)
        speed = [sys.executable, str(HERE / "local_quality.py"), "speed", "--trace", str(trace)]
        done = subprocess.run(
            [*speed, "--modes", "text"], env=env, capture_output=True, text=True, check=True
        )
    out.update(json.loads(done.stdout))
    return out


TRAVEL = ROOT / "tests" / "data" / "travelplanner"
LOOKAHEAD_GOAL_MS = 50.0


def bench_data_lookahead(quick: bool) -> dict[str, Any]:
    """The data-bound look-ahead on TravelPlanner's 7-day trips (the longest), request read
    from the text, random chooser: the median per choice of each query, and their median.

    The chooser changes which states the look-ahead meets, not what one query costs; the
    embedded model's figures (all 45 queries, about 20 minutes) are in the README."""
    queries = [json.loads(line) for line in (TRAVEL / "queries.jsonl").read_text().splitlines()]
    refs = [json.loads(line) for line in (TRAVEL / "reference_info.jsonl").read_text().splitlines()]
    picked = [(q, r) for q, r in zip(queries, refs) if q["days"] == 7][: 3 if quick else None]
    domain = str(ROOT / "domains" / "travelplanner.yaml")
    medians, seconds = [], []
    for q, r in picked:
        result = api.plan_task(domain, q["query"], "random:1", data=r)
        medians.append(result.document["stats"]["lookahead_ms_median"])
        seconds.append(result.document["stats"]["seconds"])
    return {
        "queries": len(picked),
        "lookahead_ms_median_of_queries": round(statistics.median(medians), 1),
        "lookahead_ms_worst_query": round(max(medians), 1),
        "seconds_per_query_median": round(statistics.median(seconds), 2),
    }


def verdict(value: float, goal: float) -> str:
    """Return 'ok' when ``value`` meets ``goal``."""
    return "ok" if value < goal else "MISSED"


def report(results: dict[str, Any]) -> str:
    """Return the printed table."""
    c, q, p = results["compile"], results["queries"], results["planner"]
    rows = [
        (
            "compile openagi (load+check+task)",
            f"{c['openagi']['total_s'] * 1000:.1f} ms",
            f"< 1 s: {verdict(c['openagi']['total_s'], 1.0)}",
        ),
        (
            "compile 500 tools (parse+task)",
            f"{c['synthetic_500']['total_s'] * 1000:.1f} ms",
            f"< 1 s: {verdict(c['synthetic_500']['total_s'], 1.0)}",
        ),
    ]
    for name in ("openagi", "synthetic_500"):
        for mode in ("cold", "warm"):
            s = q[name][mode]
            goal = ""
            if name == "openagi" and mode == "cold":
                goal = f"median < 1 ms: {verdict(s['median_ms'], 1.0)}"
            rows.append(
                (
                    f"query {name} {mode} (n={s['n']})",
                    f"median {s['median_ms']:.3f} ms, p95 {s['p95_ms']:.3f} ms",
                    goal,
                )
            )
    for name in ("openagi", "synthetic_500", f"synthetic_500_cap{BIG_CAP}"):
        s = p[name]
        if s.get("runs"):
            goal = f"< 5 ms: {verdict(s['median_ms'], 5.0)}" if name == "openagi" else ""
            extra = f", {s['timeouts_20s']} timeout(s)" if "timeouts_20s" in s else ""
            rows.append(
                (
                    f"planner {name} per choice ({s['runs']} runs{extra})",
                    f"median {s['median_ms']:.3f} ms, p95 {s['p95_ms']:.3f} ms",
                    goal,
                )
            )
        else:
            rows.append(
                (f"planner {name}", f"no run finished ({s.get('timeouts_20s')} timeouts)", "")
            )
    long = results["long_plans"]
    sizes = list(long["runs"])
    for size in sizes:
        r = long["runs"][size]
        rows.append(
            (f"plan {r['moves']} moves ({r['outcome']})", f"{r['ms_per_move']:.3f} ms/move", "")
        )
    ratio = long["ratio_longest_to_shortest"]
    rows.append(
        (
            f"time per move, {sizes[-1]} vs {sizes[0]} moves",
            f"{ratio:.2f}x",
            f"< {LONG_GOAL:g}x: {verdict(ratio, LONG_GOAL)}",
        )
    )
    readme = results.get("readme_command")
    if readme:
        for mode in ("cold", "warm"):
            value = readme[f"{mode}_s_median"]
            goal = README_GOALS[mode]
            rows.append(
                (
                    f"README plan command, {mode} (n={readme['runs']})",
                    f"median {value:.2f} s",
                    f"<= {goal:g} s: {verdict(value, goal + 1e-9)}",
                )
            )
    choice = results.get("local_choice")
    if choice:
        value = choice["later_choice_seconds_mean"]
        rows.append(
            (
                f"embedded model per choice, prefix kept (n={choice['choices'] - 1})",
                f"mean {value:.3f} s, max {choice['later_choice_seconds_max']:.3f} s",
                f"<= {CHOICE_GOAL_S:g} s: {verdict(value, CHOICE_GOAL_S + 1e-9)}",
            )
        )
        rows.append(
            (
                "embedded model first choice; greedy plan",
                f"{choice['first_choice_seconds']:.3f} s; {choice['greedy_plan_s']:.2f} s",
                "",
            )
        )
    data = results.get("data_lookahead")
    if data:
        value = data["lookahead_ms_median_of_queries"]
        rows.append(
            (
                f"TravelPlanner 7-day look-ahead per choice (n={data['queries']})",
                f"median {value:.1f} ms, worst query {data['lookahead_ms_worst_query']:.1f} ms",
                f"<= {LOOKAHEAD_GOAL_MS:g} ms: {verdict(value, LOOKAHEAD_GOAL_MS + 1e-9)}",
            )
        )
    from plan_quality import split_of

    for name, q in (results.get("plan_quality") or {}).items():
        ok = q["f1"] >= QUALITY_GOAL and (q["interface_right"] or 0) >= QUALITY_GOAL
        rows.append(
            (
                f"plan quality {name} [{split_of(name)}] (n={q['requests']}, embedded default)",
                f"F1 {q['f1']:.2f}, interface {q['interface_right'] or 0:.0%}, "
                f"{q['seconds_per_plan_median']:.2f} s/plan",
                f">= {QUALITY_GOAL:.2f} both: {'met' if ok else 'NOT MET'}",
            )
        )
    if results.get("travel"):
        rows += travel_rows(results["travel"])
    if results.get("agent"):
        rows += agent_rows(results["agent"])
    if results.get("validate_big"):
        rows += validate_rows(results["validate_big"])
    if results.get("run_overhead"):
        rows += run_rows(results["run_overhead"])
    width = max(len(r[0]) for r in rows)
    value_width = max(len(r[1]) for r in rows)
    lines = [f"{'measure':<{width}}  {'figure':<{value_width}}  goal"]
    lines += [f"{a:<{width}}  {b:<{value_width}}  {g}" for a, b, g in rows]
    return "\n".join(lines)


QUALITY_GOAL = 0.90  # tool-set F1 and interface right on held-out everyday wording (#27)


def bench_plan_quality() -> dict[str, Any]:
    """Tool-set F1 and interface accuracy of `fllm plan DOMAIN "REQUEST"` (embedded default)
    on the held-out sets of bench/heldout (bench/plan_quality.py, where the sets are read)."""
    import plan_quality

    model = make_model("local", None)
    out = {}
    for name, (domain, rows) in plan_quality.request_sets().items():
        if name != "openagi-train":
            out[name] = plan_quality.measure(domain, rows, model, api.DEFAULT_SEARCH, True)
    return out


AGENT_EXAMPLE_GOAL_S = 15.0


def bench_agent(quick: bool) -> dict[str, Any]:
    """The README's agent example (embedded model, time) and the ReAct agent on a third of the
    held-out questions of bench/heldout/agent (bench/agent_accuracy.py): answers right,
    answers not in the last observation (must be 0), transcripts check-trace rejects (0)."""
    import agent_accuracy

    command = [
        str(ROOT / ".venv" / "bin" / "fllm"), "agent", str(ROOT / "domains/agents/react.sexp"),
        "What is 17% of 240, plus 12?", "--tools", "calculator", "--max-loops", "3",
        "--format", "transcript", "--no-cache",
    ]  # fmt: skip
    start = time.perf_counter()
    subprocess.run(command, capture_output=True, check=False, timeout=600)
    example = time.perf_counter() - start
    every = 6 if quick else 3
    return {
        "example_seconds": round(example, 1),
        "accuracy": agent_accuracy.measure("local", agent_accuracy.SPEC, None, 3, every),
    }


def agent_rows(agent: dict[str, Any]) -> list[tuple[str, str, str]]:
    acc = agent["accuracy"]
    return [
        (
            "README agent example (embedded model)",
            f"{agent['example_seconds']:.1f} s",
            f"<= {AGENT_EXAMPLE_GOAL_S:g} s: "
            f"{verdict(agent['example_seconds'], AGENT_EXAMPLE_GOAL_S + 1e-9)}",
        ),
        (
            f"ReAct agent, held-out questions (n={acc['questions']}, embedded)",
            f"{acc['right']} right, {acc['answers_not_in_last_observation']} ungrounded, "
            f"{acc['transcripts_check_trace_rejects']} rejected, {acc['seconds_median']:.0f} s",
            "0 ungrounded, 0 rejected: "
            + (
                "ok"
                if not acc["answers_not_in_last_observation"]
                and not acc["transcripts_check_trace_rejects"]
                else "MISSED"
            ),
        ),
    ]


TRAVEL_GOALS = {"final_pass": 0.95, "reader": 0.99, "seven_day_s": 10.0, "refusal_s": 5.0}


def bench_travel(quick: bool) -> dict[str, Any]:
    """TravelPlanner on what nobody tuned against (bench/travel_heldout.py): the request reader
    on 150 held-out requests, 24 new trips end to end with the default model (final pass,
    refusals), and the time of the benchmark's 7-day trips (default model, no answer cache)."""
    import travel_heldout

    return {
        "reader": travel_heldout.reader_part(quiet=True),
        "trips": travel_heldout.trips_part("local", 1, quiet=True),
        "long": travel_heldout.long_part("local", 3 if quick else 8),
    }


def travel_rows(travel: dict[str, Any]) -> list[tuple[str, str, str]]:
    """The report's TravelPlanner rows."""
    g, reader, trips = TRAVEL_GOALS, travel["reader"], travel["trips"]
    seven = travel["long"]["7_day"]
    return [
        (
            f"TravelPlanner reader, held-out (n={reader['requests']})",
            f"field accuracy {reader['field_accuracy']:.2%}",
            f">= {g['reader']:.0%}: {verdict(g['reader'], reader['field_accuracy'] + 1e-9)}",
        ),
        (
            f"TravelPlanner new trips (n={trips['trips']}, embedded default)",
            f"final pass {trips['final_pass']:.0%} ({trips['feasible_passed']} planned, "
            f"{trips['impossible_refused']} refused)",
            f">= {g['final_pass']:.0%}: {verdict(g['final_pass'], trips['final_pass'] + 1e-9)}",
        ),
        (
            "TravelPlanner refusal (impossible trips)",
            f"median {trips['seconds_median_refusals']:.2f} s",
            f"<= {g['refusal_s']:g} s: "
            f"{verdict(trips['seconds_median_refusals'], g['refusal_s'] + 1e-9)}",
        ),
        (
            f"TravelPlanner 7-day trip (n={seven['trips']}, embedded default)",
            f"median {seven['seconds_median']:.1f} s, max {seven['seconds_max']:.1f} s",
            f"<= {g['seven_day_s']:g} s: {verdict(seven['seconds_median'], g['seven_day_s'])}",
        ),
    ]


VALIDATE_GOAL_S = 3.0  # fllm validate on a 20,000-tool domain (#30)
VALIDATE_SIZES = (2_000, 20_000)


def write_tool_domain(path: Path, tools: int, seed: int = 1) -> Path:
    """A tool domain of ``tools`` tools over 20 types (one or two inputs each)."""
    rng = random.Random(seed)
    mods = [f"m{i}" for i in range(20)]
    lines = ["fllm: 1", f"name: big{tools}", f"modalities: [{', '.join(mods)}]", "tools:"]
    for i in range(tools):
        ins = ", ".join(rng.sample(mods, rng.choice([1, 1, 2])))
        lines.append(
            f"  - name: Tool {i}\n    description: does thing number {i} to its input\n"
            f"    inputs: [{ins}]\n    output: {rng.choice(mods)}"
        )
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def bench_validate_big(folder: Path, runs: int) -> dict[str, Any]:
    """Median seconds of the real ``fllm validate`` on generated tool domains of two sizes."""
    out: dict[str, Any] = {}
    for tools in VALIDATE_SIZES:
        path = write_tool_domain(folder / f"tools{tools}.yaml", tools)
        times = []
        for _ in range(runs):
            start = time.perf_counter()
            subprocess.run(
                [str(ROOT / ".venv" / "bin" / "fllm"), "validate", str(path), "-q"],
                capture_output=True, check=False, timeout=600,
            )  # fmt: skip
            times.append(time.perf_counter() - start)
        out[str(tools)] = round(statistics.median(times), 2)
    return out


def validate_rows(big: dict[str, Any]) -> list[tuple[str, str, str]]:
    small, large = (big[str(n)] for n in VALIDATE_SIZES)
    return [
        (
            "fllm validate, 2,000 / 20,000 tools",
            f"{small:.2f} s / {large:.2f} s ({large / small:.1f}x for 10x the tools)",
            f"<= {VALIDATE_GOAL_S:g} s at 20,000: {verdict(large, VALIDATE_GOAL_S)}",
        )
    ]


def bench_run_overhead() -> dict[str, Any]:
    """fllm run's own time per tool call, and a 50-step plan of 8 chains (bench/run_overhead.py)."""
    import run_overhead

    return run_overhead.measure()


def run_rows(run: dict[str, Any]) -> list[tuple[str, str, str]]:
    import run_overhead

    c = run["concurrency"]
    ms, goal = run["overhead_ms_per_call"], run_overhead.OVERHEAD_GOAL_MS
    return [
        (
            "fllm run: fllm's time per tool call (500 no-op steps)",
            f"{ms:.3f} ms",
            f"<= {goal:g} ms: {verdict(ms, goal)}",
        ),
        (
            f"fllm run: {c['steps']} steps, 8 independent chains (50 ms tools)",
            f"{c['wall_s']:.2f} s for a longest chain of {c['longest_chain_s']:.2f} s "
            f"({c['ratio']:.2f}x)",
            f"about 1x: {'ok' if c['ratio'] < 1.5 else 'MISSED'}",
        ),
    ]


def main() -> None:
    """Run every benchmark, print the table, write bench/results.json."""
    parser = argparse.ArgumentParser(description="fllm core benchmarks")
    parser.add_argument("--quick", action="store_true", help="fewer tasks (smoke test)")
    parser.add_argument("--out", default=str(HERE / "results.json"))
    args = parser.parse_args()
    begin = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        big = big_domain_path(Path(tmp))
        results: dict[str, Any] = {
            "machine": {"python": platform.python_version(), "platform": platform.platform()},
            "goals": GOALS,
            "compile": bench_compile(big),
            "queries": bench_queries(big, args.quick),
            "planner": bench_planner(big, args.quick),
            "long_plans": bench_long_plans(Path(tmp), args.quick),
            "readme_command": bench_readme_command(1 if args.quick else 3),
            "local_choice": bench_local_choice(),
            "data_lookahead": bench_data_lookahead(args.quick),
            "plan_quality": bench_plan_quality(),
            "travel": bench_travel(args.quick),
            "agent": bench_agent(args.quick),
            "validate_big": bench_validate_big(Path(tmp), 1 if args.quick else 3),
            "run_overhead": bench_run_overhead(),
        }
    results["bench_seconds"] = round(time.perf_counter() - begin, 1)
    Path(args.out).write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    print(report(results))
    print(f"\n{results['bench_seconds']} s in all; details in {args.out}")


if __name__ == "__main__":
    main()

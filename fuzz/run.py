"""Run a fuzz campaign.

``python -m fuzz.run --seed S --budget N [--kinds ...] [--jobs J] [--out DIR] [--no-fork-server]``

Case ``i`` of a campaign is built from ``random.Random(f"{seed}:{i}")`` and the kinds are taken
in turn, so a seed and a budget always give the same inputs. Every failing case is saved under
``--out`` (default: a fresh temporary folder) with its files, command line and output. Exits 1
when any case failed, 0 otherwise.
"""

from __future__ import annotations

import argparse
import random
import sys
import tempfile
import time
from collections import Counter, defaultdict
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from fuzz import cases, corpus
from fuzz.oracle import FAILURES, Case, ForkServers, Result, run_case, save_finding
from fuzz.zygote import ForkServer

OUTCOMES = ("ok", *FAILURES)


def make_corpus(
    seed: int, plans_per_task: int = 2, runner: ForkServer | None = None
) -> cases.Corpus:
    return cases.Corpus(corpus.file_seeds(), corpus.random_plans(plans_per_task, seed, runner))


def make_case(corp: cases.Corpus, seed: int, i: int, kinds: list[str]) -> Case:
    """Case ``i`` of the campaign: deterministic in (seed, i, kinds)."""
    kind = kinds[i % len(kinds)]
    case = cases.build(kind, random.Random(f"{seed}:{i}"), corp)
    case.seed = f"{seed}:{i}"
    return case


def run_campaign(
    seed: int,
    budget: int,
    kinds: list[str] | None = None,
    jobs: int = 2,
    out_dir: Path | None = None,
    timeout: float = 20.0,
    memory_mb: int = 2048,
    progress: bool = False,
    fork_server: bool = True,
) -> tuple[list[tuple[Case, Result]], Path | None]:
    """Run ``budget`` cases; return every (case, result) and the folder of saved failures.

    With ``fork_server`` each case (and each corpus plan) is a fork of a preloaded interpreter,
    one zygote per job (see :mod:`fuzz.zygote`); without, each starts a fresh interpreter.
    """
    kinds = list(kinds or corpus.KINDS)
    with ForkServers(enabled=fork_server) as servers:
        pairs = _run_all(servers, seed, budget, kinds, jobs, timeout, memory_mb, progress)
    failing = [(i, c, r) for i, (c, r) in enumerate(pairs) if r.outcome in FAILURES]
    saved: Path | None = None
    if failing:
        saved = out_dir or Path(tempfile.mkdtemp(prefix="fllm-fuzz-findings-"))
        for i, c, r in failing:
            save_finding(saved, i, c, r)
    return pairs, saved


def _run_all(
    servers: ForkServers,
    seed: int,
    budget: int,
    kinds: list[str],
    jobs: int,
    timeout: float,
    memory_mb: int,
    progress: bool,
) -> list[tuple[Case, Result]]:
    with servers.lease() as runner:
        corp = make_corpus(seed, runner=runner)
    results: list[tuple[Case, Result] | None] = [None] * budget
    done = 0
    start = time.monotonic()

    def one(i: int) -> None:
        nonlocal done
        case = make_case(corp, seed, i, kinds)
        with servers.lease() as runner:
            res = run_case(case, timeout=timeout, memory_mb=memory_mb, runner=runner)
        if res.outcome == "ok":  # keep memory flat over long campaigns
            res.stdout = res.stderr = ""
            case.files = {}
        results[i] = (case, res)
        done += 1
        if progress and done % 100 == 0:
            bad = sum(1 for r in results if r and r[1].outcome != "ok")
            print(
                f"  {done}/{budget} cases, {bad} failing, {time.monotonic() - start:.0f} s",
                file=sys.stderr,
                flush=True,
            )

    with ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        list(pool.map(one, range(budget)))
    return [r for r in results if r is not None]


def table(pairs: list[tuple[Case, Result]]) -> str:
    """Counts by input kind and outcome, as an aligned text table."""
    counts: dict[str, Counter[str]] = defaultdict(Counter)
    for c, r in pairs:
        counts[c.kind][r.outcome] += 1
        counts["TOTAL"][r.outcome] += 1
    cols = [o for o in OUTCOMES if any(counts[k][o] for k in counts)] or ["ok"]
    rows = [["kind", *cols, "all"]]
    for kind in [*sorted(k for k in counts if k != "TOTAL"), "TOTAL"]:
        rows.append([kind, *(str(counts[kind][o]) for o in cols), str(sum(counts[kind].values()))])
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return "\n".join(
        "  ".join(
            cell.ljust(w) if j == 0 else cell.rjust(w) for j, (cell, w) in enumerate(zip(r, widths))
        )
        for r in rows
    )


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        prog="python -m fuzz.run", description="Fuzz fllm through its real entry point."
    )
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--budget", type=int, default=200, help="number of cases")
    ap.add_argument("--kinds", nargs="*", choices=corpus.KINDS, help="input kinds (default: all)")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--out", type=Path, help="folder for failing cases (default: a temp folder)")
    ap.add_argument("--timeout", type=float, default=20.0, help="wall-clock seconds per case")
    ap.add_argument("--memory-mb", type=int, default=2048, help="address-space limit per case")
    ap.add_argument(
        "--fork-server",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="run each case as a fork of a preloaded interpreter, one per job (default); "
        "--no-fork-server starts a fresh interpreter per case",
    )
    args = ap.parse_args(argv)
    start = time.monotonic()
    pairs, saved = run_campaign(
        args.seed,
        args.budget,
        args.kinds,
        args.jobs,
        args.out,
        args.timeout,
        args.memory_mb,
        progress=True,
        fork_server=args.fork_server,
    )
    print(table(pairs))
    checked = sum(1 for _, r in pairs if r.detail == "checked")
    print(
        f"\n{len(pairs)} cases in {time.monotonic() - start:.0f} s (seed {args.seed}, "
        f"{'fork server' if args.fork_server else 'fresh interpreters'}); "
        f"{checked} plan verdicts cross-checked"
    )
    failing = [(c, r) for c, r in pairs if r.outcome in FAILURES]
    if failing:
        classes: dict[tuple[str, str], int] = Counter(
            (r.outcome, r.detail[:120]) for _, r in failing
        )
        print(f"{len(failing)} failing case(s), saved under {saved}:")
        for (outcome, detail), n in sorted(classes.items(), key=lambda kv: -kv[1]):
            print(f"  {n:4d}  {outcome}: {detail}")
        return 1
    print("no failures")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Re-run a saved finding: ``python -m fuzz.replay DIR... [--timeout S] [--memory-mb M]``.

DIR is a folder written by :func:`fuzz.oracle.save_finding` (its ``case.json`` and input files).
Prints the new outcome, the exit code, the time and the last lines of stderr. Each case is a
fresh interpreter, or with ``--fork-server`` a fork of a preloaded one (see :mod:`fuzz.zygote`).
"""

from __future__ import annotations

import argparse
import json
import shlex
import sys
from pathlib import Path

from fuzz.oracle import Case, ForkServers, run_case


def load(folder: Path) -> Case:
    meta = json.loads((folder / "case.json").read_text(encoding="utf-8"))
    argv = shlex.split(meta["command"])[3:]  # drop "python -m fllm_cli"
    skip = {"case.json", "stdout.txt", "stderr.txt"}
    files = {
        p.name: p.read_bytes().decode("utf-8", "surrogatepass")
        for p in folder.iterdir()
        if p.is_file() and p.name not in skip
    }
    return Case(meta["kind"], argv, files, stdin=meta.get("stdin"), links=meta.get("links") or {})


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m fuzz.replay")
    ap.add_argument("folders", nargs="+", type=Path)
    ap.add_argument("--timeout", type=float, default=20.0)
    ap.add_argument("--memory-mb", type=int, default=2048)
    ap.add_argument("--fork-server", action=argparse.BooleanOptionalAction, default=False)
    args = ap.parse_args(argv)
    worst = 0
    with ForkServers(enabled=args.fork_server) as servers, servers.lease() as runner:
        for folder in args.folders:
            res = run_case(load(folder), args.timeout, args.memory_mb, runner=runner)
            tail = " | ".join(res.stderr.strip().splitlines()[-2:])[:300]
            print(
                f"{folder}: {res.outcome} exit={res.code} {res.seconds:.1f}s {res.detail} :: {tail}"
            )
            worst = max(worst, res.outcome != "ok")
    return worst


if __name__ == "__main__":
    sys.exit(main())

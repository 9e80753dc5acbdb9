"""Which held-out requests a change to the planner fixes and which it breaks.

    .venv/bin/python bench/plan_diff.py record before.json --split dev --split validation
    (change the code, or check out another commit)
    .venv/bin/python bench/plan_diff.py record after.json --split dev --split validation
    .venv/bin/python bench/plan_diff.py compare before.json after.json

``record --plan-needs NPZ`` reads the tool reader from another weights file once a request's
interface is settled (the shipped reader still reads the interface).

``record`` plans every request of the chosen splits of ``bench/plan_quality.py`` (``SPLITS``;
all of them without ``--split``) with the default planner as a user runs it (``fllm plan
DOMAIN "REQUEST"``, embedded default, no ``--input/--output``) and writes one row per request:
the tools planned and wanted, the interface read and wanted, and the tool-set F1. ``compare``
prints each split's mean F1 / interface right for both files, then every request whose F1 or
interface changed, with what each file planned. Split means weigh every set equally, as
``plan_quality.py`` does, so the figures match its table.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from collections import Counter
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT / "bench"))

from plan_quality import SPLITS, judge, reference_tools, request_sets, split_means  # noqa: E402

from fllm_cli import api  # noqa: E402
from fllm_cli.kinds import base as kinds_base  # noqa: E402
from fllm_cli.llm.registry import make_model  # noqa: E402
from fllm_cli.search import needs  # noqa: E402


def reading_interface() -> list[bool]:
    """Make the planner hold a flag up while it reads a request's interface and down once the
    interface is settled; returns the flag (one cell), so that a variant can be read at plan
    time only and leave every interface as shipped."""
    flag = [False]
    infer = kinds_base.infer_interface

    def flagged(*a: Any, **k: Any) -> Any:
        flag[0] = True
        try:
            return infer(*a, **k)
        finally:
            flag[0] = False

    kinds_base.infer_interface = flagged  # type: ignore[assignment]
    return flag


def needs_at_plan_time(path: Path) -> None:
    """Read the tool reader from ``path`` once the interface is settled (the shipped one reads
    the interface)."""
    other, shipped = needs.NeedModel.load(path), needs.shipped_model()
    flag = reading_interface()
    needs.shipped_model = lambda: shipped if flag[0] else other  # type: ignore[assignment]


def record(out: Path, splits: list[str]) -> None:
    model = make_model("local", None)
    rows = []
    for name, (domain, requests) in request_sets().items():
        if not any(name in SPLITS[s] for s in splits):
            continue
        print(f"{name} ({len(requests)} requests)", file=sys.stderr, flush=True)
        for row in requests:
            doc = api.plan_task(str(domain), row["task"], model).document
            (_, _, f1), inputs_ok, output_ok = judge(row, doc)
            rows.append({
                "set": name, "task": row["task"], "f1": f1,
                "tools": sorted({w for w in doc["word"] if not w.startswith("input:")}),
                "want": sorted(reference_tools(row)),
                "inputs": dict(Counter(dict(doc.get("inputs") or {}).values())),
                "want_inputs": dict(Counter((row.get("inputs") or {}).values())),
                "output": doc.get("output"), "want_output": row.get("output"),
                "interface_right": bool(inputs_ok and output_ok),
            })  # fmt: skip
    out.write_text(json.dumps(rows, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"wrote {len(rows)} requests to {out}", file=sys.stderr)


def _means(rows: list[dict]) -> dict[str, str]:
    """Each fully recorded split's F1 / interface right, as plan_quality.split_means gives."""
    report = {}
    for name in {r["set"] for r in rows}:
        mine = [r for r in rows if r["set"] == name]
        report[name] = {
            key: round(statistics.mean(r[field] for r in mine), 3)
            for key, field in (("f1", "f1"), ("interface_right", "interface_right"))
        }
    return {
        s: f"{q['f1']:.3f} / {q['interface_right']:.1%}" for s, q in split_means(report).items()
    }


def _plan(r: dict) -> str:
    return f"{r['tools']} {r['inputs']} -> {r['output']}"


def compare(a_path: Path, b_path: Path) -> None:
    a, b = (json.loads(p.read_text(encoding="utf-8")) for p in (a_path, b_path))
    for label, rows in ((a_path.name, a), (b_path.name, b)):
        print(label, "  ".join(f"{s} {v}" for s, v in _means(rows).items()))
    after = {(r["set"], r["task"]): r for r in b}
    for x in a:
        y = after.get((x["set"], x["task"]))
        if y is None or (x["interface_right"] == y["interface_right"] and x["f1"] == y["f1"]):
            continue
        mark = {(False, True): "interface fixed", (True, False): "interface broken"}.get(
            (x["interface_right"], y["interface_right"]), "interface same"
        )
        print(f"\n[{x['set']}] {x['task']}\n  F1 {x['f1']:.2f} -> {y['f1']:.2f}, {mark}")
        print(f"  wanted {x['want']} {x['want_inputs']} -> {x['want_output']}")
        print(f"  before {_plan(x)}\n  after  {_plan(y)}")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    sub = parser.add_subparsers(dest="command", required=True)
    rec = sub.add_parser("record", help="plan the held-out requests and write one row each")
    rec.add_argument("out", type=Path)
    rec.add_argument("--split", action="append", choices=sorted(SPLITS), help="repeatable")
    rec.add_argument(
        "--plan-needs", type=Path, help="a tool reader's weights, read once the interface is read"
    )
    cmp = sub.add_parser("compare", help="the requests two records differ on")
    cmp.add_argument("before", type=Path)
    cmp.add_argument("after", type=Path)
    args = parser.parse_args()
    if args.command == "record":
        if args.plan_needs is not None:
            needs_at_plan_time(args.plan_needs)
        record(args.out, args.split or sorted(SPLITS))
    else:
        for path in (args.before, args.after):
            if not path.is_file():
                raise SystemExit(f"error: no such record: {path}")
        compare(args.before, args.after)


if __name__ == "__main__":
    main()

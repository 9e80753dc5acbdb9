"""Where the interface misses are: how each held-out request's interface was read, and how often
each way of reading it is right.

    .venv/bin/python bench/interface_misses.py [--split dev ...] [--out misses.json]

Plans every held-out request as ``bench/plan_diff.py record`` does and reads the plan's
``why.interface`` (what ``fllm plan --explain`` shows): whether the interface came from the
best plan's evidence or from asking the embedded model, and whether a runner-up reading scored
within ``interface.CLOSE`` of it. Prints, per split, how many requests were read each way and
how many of them right, and how the wrong ones miss (inputs left out or added, the output
only). ``--out`` keeps every request's record (with the ranked readings) for a closer look.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter, defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT / "bench"))

from plan_quality import SPLITS, judge, request_sets, split_of  # noqa: E402

from fllm_cli import api  # noqa: E402
from fllm_cli.llm.registry import make_model  # noqa: E402


def record(splits: list[str]) -> list[dict]:
    model = make_model("local", None)
    rows = []
    for name, (domain, requests) in request_sets().items():
        split = split_of(name)
        if split not in splits:
            continue
        print(f"{name} ({len(requests)} requests)", file=sys.stderr, flush=True)
        for row in requests:
            if "output" not in row:
                continue
            doc = api.plan_task(str(domain), row["task"], model).document
            _, inputs_ok, output_ok = judge(row, doc)
            got = Counter(dict(doc.get("inputs") or {}).values())
            want = Counter(row["inputs"].values())
            reading = (doc.get("why") or {}).get("interface") or {}
            rows.append({
                "split": split, "set": name, "task": row["task"],
                "how": reading.get("how"), "close": "close" in reading,
                "right": bool(inputs_ok and output_ok),
                "left_out": bool(want - got), "added": bool(got - want) and not (want - got),
                "output_only": bool(inputs_ok) and not output_ok,
                "ranked": reading.get("ranked"),
            })  # fmt: skip
    return rows


def summary(rows: list[dict]) -> None:
    for split in sorted({r["split"] for r in rows}):
        mine = [r for r in rows if r["split"] == split]
        wrong = [r for r in mine if not r["right"]]
        print(f"{split}: {len(mine)} requests, {len(wrong)} read wrong "
              f"({sum(r['left_out'] for r in wrong)} leave an input out, "
              f"{sum(r['added'] for r in wrong)} add one, "
              f"{sum(r['output_only'] for r in wrong)} only the output)")  # fmt: skip
        ways: dict[str, list[bool]] = defaultdict(list)
        for r in mine:
            ways[str(r["how"])].append(r["right"])
            ways["runner-up within CLOSE" if r["close"] else "no close runner-up"].append(
                r["right"]
            )
        for way, right in sorted(ways.items()):
            print(f"  {way}: {len(right)} requests, {sum(right)} right")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument("--split", action="append", choices=sorted(SPLITS), help="sets read")
    parser.add_argument("--out", type=Path, help="write every request's record here (JSON)")
    args = parser.parse_args()
    rows = record(args.split or sorted(SPLITS))
    if args.out is not None:
        args.out.write_text(json.dumps(rows, indent=1, ensure_ascii=False) + "\n")
    summary(rows)


if __name__ == "__main__":
    main()

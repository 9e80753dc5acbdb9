"""How often a reading flagged "unsure" is wrong, against readings that are not flagged.

    .venv/bin/python bench/interface_confidence.py        # about 5 minutes on 2 cores

Each held-out request is planned as ``fllm plan`` plans it (default strategy, embedded model,
no ``--input``/``--output``). A reading is flagged when another one scores within
``interface.CLOSE`` of it (the plan's ``why.interface.close``; ``fllm plan`` then says
"unsure" on standard error). Per set: requests, flagged, right among the flagged, right among
the rest, and how often the close runner-up was the right reading. The flag is worth showing
when the first right-rate is well below the second.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT / "bench"))

from plan_quality import request_sets  # noqa: E402

from fllm_cli import api  # noqa: E402
from fllm_cli.llm.registry import make_model  # noqa: E402


def _key(inputs: list[str], output: str) -> tuple[list[str], str]:
    return sorted(inputs), output


def main() -> None:
    argparse.ArgumentParser(description=__doc__.split("\n")[0]).parse_args()
    model = make_model("local", None)
    totals = [0, 0, 0, 0, 0]
    heads = ("n", 4), ("flagged", 8), ("right|flag", 11), ("right|not", 10), ("2nd right", 10)
    print(f"{'set':<20} " + " ".join(f"{h:>{w}}" for h, w in heads))
    for name, (domain, rows) in request_sets().items():
        if name == "openagi-train":  # written in the benchmark's words: nothing to be unsure of
            continue
        n = flagged = right_flag = right_rest = second = 0
        for row in rows:
            doc = api.plan_task(str(domain), row["task"], model).document
            want = _key(list(row["inputs"].values()), row["output"])
            got = _key(list(dict(doc.get("inputs") or {}).values()), doc.get("output"))
            close = ((doc.get("why") or {}).get("interface") or {}).get("close")
            n += 1
            if close:
                flagged += 1
                right_flag += got == want
                second += _key(close["inputs"], close["output"]) == want
            else:
                right_rest += got == want
        for i, v in enumerate((n, flagged, right_flag, right_rest, second)):
            totals[i] += v
        _row(name, n, flagged, right_flag, right_rest, second)
    _row("all", *totals)


def _row(name: str, n: int, flagged: int, right_flag: int, right_rest: int, second: int) -> None:
    def rate(a: int, b: int) -> str:
        return f"{a / b:.0%}" if b else "-"

    print(
        f"{name:<20} {n:>4} {flagged:>8} {rate(right_flag, flagged):>11} "
        f"{rate(right_rest, n - flagged):>10} {rate(second, flagged):>10}",
        flush=True,
    )


if __name__ == "__main__":
    main()

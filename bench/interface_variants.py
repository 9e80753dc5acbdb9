"""How the interface reading's weights move interface accuracy on the held-out request sets.

    .venv/bin/python bench/interface_variants.py          # about 3 minutes on 2 cores

Only the interface (what a request provides and wants back) is ranked, the way ``fllm plan``
ranks it with the default ``meaning`` strategy and no model, while one weight at a time is
changed: the fit of each type the request names (``interface.TYPE_FIT``), the similarity from which
a single word names a type (``semantic.TYPE_FLOOR``), the bonus for an output that the
request's last pointing part asks for (``interface.LAST_ASKED``) and the bonus for inputs that
can feed what its first pointing part asks for (``interface.FIRST_ASKED``). The tools' evidence is
computed once per request. The figure is interface right / requests with a reference
interface, per set; the first row is the shipped setting. It says whether a better interface is
a matter of weights (see docs/benchmarks.md).
"""

from __future__ import annotations

import sys
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT / "bench"))

from plan_quality import request_sets  # noqa: E402

from fllm_cli import api  # noqa: E402
from fllm_cli.search import interface, semantic  # noqa: E402
from fllm_cli.search.strategy import STRATEGIES  # noqa: E402

SHIPPED = {
    "TYPE_FIT": interface.TYPE_FIT,
    "TYPE_FLOOR": semantic.TYPE_FLOOR,
    "LAST_ASKED": interface.LAST_ASKED,
    "FIRST_ASKED": interface.FIRST_ASKED,
}
CHANGES = [
    {},
    {"TYPE_FIT": 0.3},
    {"TYPE_FIT": 0.5},
    {"TYPE_FIT": 0.8},
    {"TYPE_FLOOR": 0.22},
    {"TYPE_FLOOR": 0.35},
    {"LAST_ASKED": 0.0},
    {"LAST_ASKED": 0.3},
    {"LAST_ASKED": 1.0},
    {"FIRST_ASKED": 0.0},
    {"FIRST_ASKED": 0.5},
    {"FIRST_ASKED": 1.0},
]


def _set(values: dict[str, float]) -> None:
    interface.TYPE_FIT = values["TYPE_FIT"]
    semantic.TYPE_FLOOR = values["TYPE_FLOOR"]
    interface.LAST_ASKED = values["LAST_ASKED"]
    interface.FIRST_ASKED = values["FIRST_ASKED"]


def main() -> None:
    strategy = STRATEGIES["meaning"]
    right: list[Counter[str]] = [Counter() for _ in CHANGES]
    asked: Counter[str] = Counter()
    try:
        for name, (path, rows) in request_sets().items():
            if name == "openagi-train":
                continue  # no reference interfaces
            domain = api.load_domain(str(path))
            compiled: interface.Compiled = {}
            options = interface.feasible_interfaces(domain, compiled)
            texts = (
                {t.name: t.description for t in domain.tools},
                {m.name: (m.phrase, m.description) for m in domain.modalities},
            )
            for row in rows:
                if not row.get("inputs") or "output" not in row:
                    continue
                asked[name] += 1
                want = (sorted(row["inputs"].values()), row["output"])
                evidence = interface.tool_evidence(domain, row["task"], strategy)
                assert evidence is not None
                for k, change in enumerate(CHANGES):
                    _set({**SHIPPED, **change})
                    named = strategy.read_types(*texts, row["task"])
                    ranked = interface.rank_interfaces(
                        domain, row["task"], options, evidence, compiled, None, named
                    )
                    got = (sorted(ranked[0][1]), ranked[0][2]) if ranked else None
                    right[k][name] += got == want
            print(f"{name}: {asked[name]} requests", file=sys.stderr, flush=True)
    finally:
        _set(SHIPPED)
    for change, counts in zip(CHANGES, right):
        label = ", ".join(f"{k}={v}" for k, v in change.items()) or "shipped"
        cells = "  ".join(f"{n} {counts[n]}/{asked[n]}" for n in asked)
        print(f"{label:26} {cells}")


if __name__ == "__main__":
    main()

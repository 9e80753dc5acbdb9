"""Three changes to how a request's evidence is read, each measured as a patch of the planner.

    .venv/bin/python bench/plan_diff.py record before.json                 # the shipped planner
    .venv/bin/python bench/evidence_variants.py given-named --record given.json
    .venv/bin/python bench/evidence_variants.py windows --record win.json [--width 5 --stride 3
                                                --weight 0.75 --longer 8]
    .venv/bin/python bench/evidence_variants.py ask-close --record ask.json [--within 0.25]
    .venv/bin/python bench/plan_diff.py compare before.json given.json

* ``given-named``: a part of the request that names a type the role reader reads as given
  ("here's the raw export and *the schema it's supposed to follow*") is not asking for a tool
  that makes that type: its meaning evidence for such a tool is scaled by one minus the
  reader's chance that the type is given. (A single-word unit is placed by its own case-folded
  text, so a capitalised word is not placed and keeps its evidence.)
* ``windows``: a long part (``--longer`` words or more) also gives runs of ``--width`` words,
  every ``--stride`` words, as evidence units of ``--weight`` (a part such as "attach an
  English version of this scanned French annex to the end of our agreement" asks for two
  tools, and its single words lose what the words around them say). ``semantic.relevance``
  judges a unit of weight 1.0 as a whole part (its stand-out bar, lead and type margin) and
  any lighter one as a word, so ``--weight 1.0`` changes how runs are judged too.
* ``ask-close``: when the runner-up interface scores within ``--within`` of the best, the
  embedded model is asked between the two, as it is among exact ties. ``rank_interfaces``
  scores the runner-up exactly only within ``interface.CLOSE`` (0.25), so ``--within`` is at
  most that.

Each patch is applied to the planner as shipped, and every held-out request is recorded as
``bench/plan_diff.py record`` does. Measured on 2026-11-28 (stop 57, docs/benchmarks.md): none
was adopted.
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT / "bench"))

import plan_diff  # noqa: E402
from plan_quality import SPLITS  # noqa: E402

from fllm_cli.kinds import tools as tool_kinds  # noqa: E402
from fllm_cli.search import interface, semantic  # noqa: E402
from fllm_cli.search.relevance import Relevance, unit_place, words  # noqa: E402


def given_named() -> None:
    read = interface.tool_evidence

    def discounted(domain: Any, text: str, strategy: Any) -> Relevance | None:
        found = read(domain, text, strategy)
        reading = None if found is None else strategy.read_roles(domain, text)
        places = strategy.type_places(*interface._texts(domain), text) if reading else []
        if found is None or reading is None or not places:
            return found
        given = {t: 1 / (1 + math.exp(-x)) for t, x in zip(reading.types, reading.given)}
        keys = {unit_place(k.partition(":")[2]) for u in found.matched.values() for k in u}
        spans, cursor = {}, 0
        for place, piece in sorted(k for k in keys if k is not None):
            at = interface.find_part(text, piece, cursor)
            if at >= 0:
                cursor = at
                spans[place] = (at, at + len(piece))  # no held-out request breaks a line
        matched: dict[str, dict[str, float]] = {}
        for symbol, units in found.matched.items():
            tool = domain.tool(symbol)
            mine = matched[symbol] = {}
            for key, value in units.items():
                signal, _, rest = key.partition(":")
                place = unit_place(rest)
                if (
                    tool is not None and signal == "meaning" and place is not None
                    and place[0] in spans and tool.output not in tool.inputs
                ):  # fmt: skip
                    a, b = spans[place[0]]
                    if any(a <= at < b and t == tool.output for at, t in places):
                        value *= 1 - given.get(tool.output, 0.0)
                mine[key] = value
        scores = {s: sum(u.values()) for s, u in matched.items()}
        return Relevance(scores, found.threshold, matched, found.extra, found.cost, found.apart)

    interface.tool_evidence = discounted  # type: ignore[assignment]
    tool_kinds.tool_evidence = discounted  # type: ignore[attr-defined]


def windows(width: int, stride: int, weight: float, longer: int) -> None:
    def cut(text: str) -> list[tuple[str, float]]:
        out: list[tuple[str, float]] = []
        seen: set[str] = set()

        def add(piece: str, w: float) -> None:
            if piece not in seen:
                seen.add(piece)
                out.append((piece, w))

        for part in semantic.parts(text):
            out.append((part, 1.0))
            tokens = part.split()
            if len(tokens) >= longer:
                starts = list(range(0, len(tokens) - width + 1, stride))
                if (len(tokens) - width) % stride:
                    starts.append(len(tokens) - width)
                for s in starts:
                    run = " ".join(tokens[s : s + width])
                    if sum(len(w) >= semantic.MIN_WORD for w in words(run)) >= 2:
                        add(run, weight)
            content = [w for w in words(part) if len(w) >= semantic.MIN_WORD]
            if len(content) > 1:
                for w in content:
                    add(w, semantic.WORD_WEIGHT)
        return out

    semantic.units = cut  # type: ignore[assignment]


def ask_close(within: float) -> None:
    rank = interface.rank_interfaces

    def ranked(*a: Any, **k: Any) -> Any:
        out = rank(*a, **k)
        if len(out) > 1 and out[0][0] - out[1][0] <= within:
            out = [out[0], (out[0][0], *out[1][1:]), *out[2:]]  # a tie: the model is asked
        return out

    interface.rank_interfaces = ranked  # type: ignore[assignment]


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument("variant", choices=("given-named", "windows", "ask-close"))
    parser.add_argument("--record", type=Path, required=True, help="where to write the requests")
    parser.add_argument("--split", action="append", choices=sorted(SPLITS), help="sets measured")
    parser.add_argument("--width", type=int, default=5, help="windows: words in a run")
    parser.add_argument("--stride", type=int, default=3, help="windows: words between runs")
    parser.add_argument("--weight", type=float, default=0.75, help="windows: a run's worth")
    parser.add_argument("--longer", type=int, default=8, help="windows: words a part needs")
    parser.add_argument(
        "--within", type=float, default=interface.CLOSE, help="ask-close: the gap (<= CLOSE)"
    )
    args = parser.parse_args()
    if args.width > args.longer:
        parser.error("--width cannot exceed --longer")
    if args.within > interface.CLOSE:
        parser.error(f"--within cannot exceed interface.CLOSE ({interface.CLOSE})")
    if args.variant == "given-named":
        given_named()
    elif args.variant == "windows":
        windows(args.width, args.stride, args.weight, args.longer)
    else:
        ask_close(args.within)
    plan_diff.record(args.record, args.split or sorted(SPLITS))


if __name__ == "__main__":
    main()

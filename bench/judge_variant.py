"""The embedded model's own judgement of which tools a request needs, alone and as evidence.

    .venv/bin/python bench/judge_variant.py auc --split validation --split small
    .venv/bin/python bench/judge_variant.py record OUT.json --split validation --weight 1.0
        --against 0.5 [--above 0] [--plan-only]
    .venv/bin/python bench/plan_diff.py compare BEFORE.json OUT.json

Issue 27 asked for the embedded LLM's judgement to be measured as a relevance signal ("does this
request need TOOL?" for each tool). ``bench/llm_judge.py`` measured that question, asked
yes/no, against the meaning signal's similarities on three sets (ROC area near 0.5). Here the
135M model scores each tool's description as the
continuation of the request, the way it scores options (``FLLM_LOCAL_SCORING=text``: the
description's log-probability after the prompt minus its log-probability after a neutral one),
with the prompt::

    A user wrote: "REQUEST"
    To do this, one step must be a tool that

and the scores are standardised over the domain's tools. ``auc`` prints, per split, the mean
over requests of the area under the ROC curve that separates the reference's tools from the
others: for the shipped tool reader's log-odds (``search/needs.py``), for the model's scores,
and for the two standardised and added (model weight 0.25). ``record`` writes
``bench/plan_diff.py``'s per-request record for the default planner with the model's reading
added as one more signal: a tool standing ``z`` spreads above the domain's mean gets
``weight * (z - above)`` when ``z > above``, and ``against * z`` when ``z < 0``; with
``--plan-only`` the interface is read as shipped and the model's reading only chooses the
tools once it is settled.
"""

from __future__ import annotations

import argparse
import statistics
import sys
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT / "bench"))

import plan_diff  # noqa: E402
from llm_judge import auc, z  # noqa: E402
from plan_quality import SPLITS, reference_tools, request_sets, split_of  # noqa: E402

from fllm_cli.domain.load import load_domain  # noqa: E402
from fllm_cli.llm.base import ChoiceRequest  # noqa: E402
from fllm_cli.llm.registry import make_model  # noqa: E402
from fllm_cli.meaning.encoder import shared  # noqa: E402
from fllm_cli.search import needs  # noqa: E402
from fllm_cli.search import strategy as strategies  # noqa: E402
from fllm_cli.search.relevance import Relevance  # noqa: E402

PROMPT = 'A user wrote: "{request}"\nTo do this, one step must be a tool that'
_MODEL = make_model("local", None)
_READ: dict[tuple[tuple[tuple[str, str], ...], str], dict[str, float]] = {}


def standardised(values: Mapping[str, float]) -> dict[str, float]:
    return dict(zip(values, z(list(values.values()))))


def judged(described: Mapping[str, str], text: str) -> dict[str, float]:
    """Each tool's standardised score from the embedded model (kept per request)."""
    key = (tuple(described.items()), text)
    if key not in _READ:
        names = list(described)
        request = ChoiceRequest(
            PROMPT.format(request=text), tuple(described[n] for n in names), "tool"
        )
        _READ[key] = standardised(dict(zip(names, _MODEL.scores(request, "text"))))
    return _READ[key]


def show_auc(splits: list[str]) -> None:
    found: dict[str, dict[str, list[float]]] = {}
    for name, (domain, rows) in request_sets().items():
        split = split_of(name)
        if split not in splits:
            continue
        described = {t.name: t.description for t in load_domain(str(domain)).tools}
        for row in rows:
            reader = needs.read(shared(), described, row["task"])
            model = judged(described, row["task"])
            both = {k: v + 0.25 * model[k] for k, v in standardised(reader).items()}
            wanted = reference_tools(row)
            for label, scores in (("reader", reader), ("model", model), ("both", both)):
                value = auc(list(scores.values()), [k in wanted for k in scores])
                if value is not None:
                    found.setdefault(split, {}).setdefault(label, []).append(value)
        print(f"{name} done", file=sys.stderr, flush=True)
    for split, by in found.items():
        cells = "  ".join(f"{k} {statistics.mean(v):.3f}" for k, v in by.items())
        print(f"{split} ({len(by['reader'])} requests): {cells}")


def add_signal(weight: float, against: float, above: float, plan_only: bool = False) -> None:
    """Make the default strategy read the model's judgement as one more signal; with
    ``plan_only`` not while the interface is read, only once it is settled."""
    reading_interface = plan_diff.reading_interface() if plan_only else [False]

    def signal(described: Mapping[str, str], types: object, text: str) -> Relevance:
        if reading_interface[0]:
            return Relevance({}, 0.0, {})
        z = judged(described, text)
        units = {
            n: {f"the model's reading ({n})": weight * (v - above) if v > above else
                (against * v if v < 0 else 0.0)}
            for n, v in z.items()
        }  # fmt: skip
        return Relevance(
            {n: sum(u.values()) for n, u in units.items()}, 0.0, units,
            apart=frozenset(u for m in units.values() for u in m),
        )  # fmt: skip

    strategies.SIGNALS["judge"] = signal  # type: ignore[assignment]
    default = strategies.STRATEGIES[strategies.DEFAULT]
    strategies.STRATEGIES[strategies.DEFAULT] = replace(
        default, signals=(*default.signals, ("judge", 1.0))
    )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    sub = parser.add_subparsers(dest="command", required=True)
    a = sub.add_parser("auc", help="rank quality of the reader, the model and both")
    r = sub.add_parser("record", help="plan_diff record with the model's reading added")
    r.add_argument("out", type=Path)
    r.add_argument("--weight", type=float, default=1.0)
    r.add_argument("--against", type=float, default=0.5)
    r.add_argument("--above", type=float, default=0.0)
    r.add_argument("--plan-only", action="store_true", help="not while reading the interface")
    for p in (a, r):
        p.add_argument("--split", action="append", choices=sorted(SPLITS))
    args = parser.parse_args()
    splits = args.split or list(SPLITS)
    if args.command == "auc":
        show_auc(splits)
    else:
        add_signal(args.weight, args.against, args.above, args.plan_only)
        plan_diff.record(args.out, splits)


if __name__ == "__main__":
    main()

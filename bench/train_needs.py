"""Fit the tool reader (src/fllm_cli/search/needs.py) on the synthetic tool domains.

    .venv/bin/python bench/train_needs.py              # fit, report, write needs.npz
    .venv/bin/python bench/train_needs.py --no-save    # fit and report only

Training material: ``bench/synthetic/`` (domains written for training, in fields no held-out
set covers; see its README): each request's reference plan says which of its domain's tools
are needed. About half of the requests are shown a second time in a smaller cut of their
domain (``subsets``), so the reader learns what a domain of three to seven tools says. The
held-out sets of ``bench/plan_quality.py`` are never trained on; the report
reads the development and validation sets with the fitted reader alone: the F1 of the tools
it calls likely (log-odds above 0) against the reference tool set, and the chance that a
needed tool scores above an unneeded one (AUC). Its worth in the planner is measured with
``bench/weight_variants.py needs.WEIGHT=...``. Reading the 3,900 requests takes about 5
minutes and is cached under /tmp (``--fresh`` after changing ``roles.context`` or the sets);
a fit of 800 steps on the 5,400 requests and cuts takes about 9 minutes on 2 cores and is
deterministic. This fit reads through the encoder as published; the shipped ``needs.npz`` is
this fit tuned further, together with a small change to the encoder's top layers, by
``bench/tune_readers.py`` (which starts from what this script writes).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT / "bench"))

from plan_quality import SPLITS  # noqa: E402
from train_roles import read_all  # noqa: E402

from fllm_cli.domain.load import load_domain  # noqa: E402
from fllm_cli.meaning.encoder import shared  # noqa: E402
from fllm_cli.search import needs, roles  # noqa: E402
from fllm_cli.search.semantic import tool_texts  # noqa: E402

FEATURES = Path("/tmp/fllm_need_features.pkl")
L2 = 1e-3  # on the context detector and the low-rank maps (per request)
RANK = 8
STEPS = 800
SUBSETS = 0.5  # the share of requests shown a second time in a smaller domain (see subsets())

# One request read for the fit: word states (W x 384), clause rows (W x 384), the domain's
# tool rows (J x 384), which tools the reference plan uses (J,), and the tool names.
Item = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, list[str]]


def read_set(domain_path: Path, rows: list[dict]) -> list[Item]:
    domain = load_domain(domain_path)
    described = {t.name: t.description for t in domain.tools}
    names = list(described)
    enc = shared()
    tools = enc.embed(list(tool_texts(described).values()))
    out = []
    for row in rows:
        read = roles.context(enc, row["task"])
        if read is None or not row.get("plan"):
            continue
        used = {x for x in row["plan"] if not x.startswith("input:")}
        out.append((read[1], read[2], tools, np.array([n in used for n in names], float), names))
    return out


def all_features(fresh: bool = False) -> dict[str, list[Item]]:
    """The development, validation and synthetic sets read for the fit, cached under /tmp."""
    return read_all(read_set, FEATURES, fresh)


class Batch:
    """The requests padded into arrays, so a step of the fit is a few array products."""

    def __init__(self, items: list[Item]) -> None:
        n, d = len(items), items[0][0].shape[1]
        wm = max(x[0].shape[0] for x in items)
        jm = max(x[2].shape[0] for x in items)
        self.sims = np.zeros((n, needs.SIMILARITIES, wm, jm))
        self.state, self.clause = np.zeros((n, wm, d)), np.zeros((n, wm, d))
        self.tools = np.zeros((n, jm, d))
        self.words, self.has = np.zeros((n, wm), bool), np.zeros((n, jm), bool)
        self.used = np.zeros((n, jm))
        for i, (state, clause, tools, used, _) in enumerate(items):
            w, j = state.shape[0], tools.shape[0]
            self.sims[i, :, :w, :j] = needs.similarities(state, clause, tools)
            self.state[i, :w], self.clause[i, :w], self.tools[i, :j] = state, clause, tools
            self.words[i, :w], self.has[i, :j], self.used[i, :j] = True, True, used


def subsets(items: list[Item], seed: int = 7) -> list[Item]:
    """``items``, each followed (with chance ``SUBSETS``) by the same request in a smaller
    domain: its plan's tools and a random share of the others, at least three tools in all.

    The synthetic domains have 8-16 tools, so without this the fit never sees a small domain,
    and in a three-tool domain it scored even the one tool asked for below even odds
    (docs/search.md). With it, the log-count channel of ``needs.similarities`` learns what a
    domain's size says about each tool's chance."""
    rng = np.random.default_rng(seed)
    out = []
    for state, clause, tools, used, names in items:
        out.append((state, clause, tools, used, names))
        if rng.random() < SUBSETS:
            kept = used > 0
            others = np.flatnonzero(~kept)
            k = rng.integers(max(0, 3 - int(kept.sum())), len(others) + 1)
            pick = np.sort(
                np.concatenate([np.flatnonzero(kept), rng.choice(others, k, replace=False)])
            )
            out.append((state, clause, tools[pick], used[pick], [names[i] for i in pick]))
    return out


def start() -> dict[str, np.ndarray]:
    rng = np.random.default_rng(0)
    d = 384
    return {
        "mix": np.eye(needs.SIMILARITIES)[0] * 4.0, "bias": np.zeros(1), "cue": np.zeros(d),
        "left": rng.normal(0, 0.05, (d, RANK)), "right": rng.normal(0, 0.05, (d, RANK)),
        "clause_left": rng.normal(0, 0.05, (d, RANK)),
        "clause_right": rng.normal(0, 0.05, (d, RANK)),
    }  # fmt: skip


def loss_and_grad(p: dict[str, np.ndarray], b: Batch) -> tuple[float, dict[str, np.ndarray]]:
    """Binary cross-entropy of each tool's log-odds (needs.scores, batched) and its gradient."""
    n, d = len(b.used), b.state.shape[2]
    u, v = b.state @ p["left"], b.tools @ p["right"]
    cu, cv = b.clause @ p["clause_left"], b.tools @ p["clause_right"]
    z = np.tensordot(p["mix"], b.sims, axes=(0, 1))
    z = z + u @ v.transpose(0, 2, 1) + cu @ cv.transpose(0, 2, 1) + (b.state @ p["cue"])[..., None]
    z = np.where(b.words[:, :, None], z, -1e9)
    top = z.max(1)
    e = np.exp(z - top[:, None, :])
    pi = e / e.sum(1, keepdims=True)
    s = top + np.log(e.sum(1)) + p["bias"][0]
    q = 1 / (1 + np.exp(-s))
    y = b.used
    total = float((-(y * np.log(q + 1e-12) + (1 - y) * np.log(1 - q + 1e-12)) * b.has).sum())
    g = (q - y) * b.has
    G = pi * g[:, None, :]  # n x W x J
    flat_state, flat_clause, flat_tools = (x.reshape(-1, d) for x in (b.state, b.clause, b.tools))
    grads = {
        "mix": np.tensordot(b.sims, G, axes=([0, 2, 3], [0, 1, 2])),
        "bias": np.array([g.sum()]),
        "cue": G.sum(2).reshape(-1) @ flat_state,
        "left": flat_state.T @ (G @ v).reshape(-1, RANK),
        "right": flat_tools.T @ (G.transpose(0, 2, 1) @ u).reshape(-1, RANK),
        "clause_left": flat_clause.T @ (G @ cv).reshape(-1, RANK),
        "clause_right": flat_tools.T @ (G.transpose(0, 2, 1) @ cu).reshape(-1, RANK),
    }
    for k in ("cue", "left", "right", "clause_left", "clause_right"):
        total += L2 * n * float(np.sum(p[k] ** 2))
        grads[k] += 2 * L2 * n * p[k]
    return total / n, {k: x / n for k, x in grads.items()}


def fit(items: list[Item], steps: int = STEPS, rate: float = 0.05) -> needs.NeedModel:
    batch = Batch(items)
    p = start()
    m1 = {k: np.zeros_like(x) for k, x in p.items()}
    m2 = {k: np.zeros_like(x) for k, x in p.items()}
    for step in range(1, steps + 1):
        loss, grads = loss_and_grad(p, batch)
        for k in p:
            m1[k] = 0.9 * m1[k] + 0.1 * grads[k]
            m2[k] = 0.999 * m2[k] + 0.001 * grads[k] ** 2
            p[k] -= rate * (m1[k] / (1 - 0.9**step)) / (np.sqrt(m2[k] / (1 - 0.999**step)) + 1e-8)
        if step % 100 == 0:
            print(f"  step {step}: loss {loss:.4f}", file=sys.stderr)
    return needs.NeedModel(**p)


def f1(found: set[str], wanted: set[str]) -> float:
    hit = len(found & wanted)
    if not found or not wanted or not hit:
        return float(found == wanted)
    precision, recall = hit / len(found), hit / len(wanted)
    return 2 * precision * recall / (precision + recall)


def quality(model: needs.NeedModel, items: list[Item]) -> dict[str, float]:
    """The reader alone: F1 of the tools with log-odds above 0, and the AUC of the scores."""
    f1s, aucs = [], []
    for state, clause, tools, used, names in items:
        s = needs.scores(model, state, clause, tools)
        f1s.append(
            f1({n for n, x in zip(names, s) if x > 0}, {n for n, y in zip(names, used) if y})
        )
        pos, neg = s[used > 0], s[used == 0]
        if len(pos) and len(neg):
            aucs.append(float((pos[:, None] > neg[None, :]).mean()))
    return {"f1": float(np.mean(f1s)), "auc": float(np.mean(aucs))}


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument("--no-save", action="store_true")
    parser.add_argument("--steps", type=int, default=STEPS)
    parser.add_argument("--fresh", action="store_true", help="read the sets again")
    args = parser.parse_args()
    data = all_features(args.fresh)
    train = subsets([x for n, v in sorted(data.items()) if n.startswith("synthetic:") for x in v])
    print(f"training on {len(train)} synthetic requests and subsets", file=sys.stderr)
    model = fit(train, args.steps)
    for split in ("dev", "validation"):
        per = [quality(model, data[name]) for name in SPLITS[split]]
        print(f"[{split}]", {k: round(float(np.mean([p[k] for p in per])), 3) for k in per[0]})
    if not args.no_save:
        model.save(needs.WEIGHTS)
        print(f"wrote {needs.WEIGHTS.relative_to(ROOT)}")


if __name__ == "__main__":
    main()

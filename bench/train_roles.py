"""Fit the role reader (src/fllm_cli/search/roles.py) on the synthetic tool domains.

    .venv/bin/python bench/train_roles.py                 # fit, report, write roles.npz
    .venv/bin/python bench/train_roles.py --no-save       # fit and report only
    .venv/bin/python bench/train_roles.py --folds 5       # cross-validation over domains

Training material: ``bench/synthetic/`` (domains written for training, in fields no held-out
set covers; see its README). The held-out sets of ``bench/plan_quality.py`` are never trained
on: the report reads the development and validation sets with the fitted reader alone
(choosing among each domain's feasible interfaces), which is weak by itself (about 35% of
interfaces right); its worth is as one term of the planner's interface score
(``bench/train_interface.py``). Reading the 3,900
requests takes about 5 minutes and is cached under /tmp (``--fresh`` after changing
``roles.features``); a fit of 400 steps takes about 6 minutes on 2 cores and is deterministic.
This fit reads through the encoder as published; the shipped ``roles.npz`` is this fit tuned
further, together with a small change to the encoder's top layers, by
``bench/tune_readers.py --reader roles`` (which starts from what this script writes).
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT / "bench"))

from plan_quality import SPLITS, request_sets  # noqa: E402

from fllm_cli.domain.load import load_domain  # noqa: E402
from fllm_cli.meaning.encoder import shared  # noqa: E402
from fllm_cli.search import roles  # noqa: E402
from fllm_cli.search.interface import feasible_interfaces  # noqa: E402

SYNTHETIC = ROOT / "bench" / "synthetic"
L2 = 1e-3  # on the context detectors and the low-rank map (per request)
RANK = int(
    __import__("os").environ.get("ROLES_RANK", "8")
)  # of the map from a word's context to the types it reads


def domain_view(path: Path) -> tuple[dict, list, dict, object]:
    domain = load_domain(path)
    return (*roles.domain_texts(domain), domain)


def read_set(domain_path: Path, rows: list[dict]) -> list[tuple]:
    """[(features, given types, output, domain)] for each row with an interface, in order."""
    types, tools, own, texts, domain = domain_view(domain_path)
    enc = shared()
    out = []
    for row in rows:
        if not row.get("output") or not row.get("inputs"):
            continue
        feats = roles.features(enc, row["task"], types, tools, own, texts)
        assert feats is not None, row["task"]
        out.append((feats, Counter(row["inputs"].values()), row["output"], domain))
    return out


FEATURES = Path("/tmp/fllm_role_features.pkl")


def all_features(fresh: bool = False) -> dict[str, list[tuple]]:
    """Every held-out (dev, validation) and synthetic set read for the model, cached under /tmp
    (delete it, or pass ``fresh``, after changing roles.features)."""
    return read_all(read_set, FEATURES, fresh)


def read_all(read: Callable[[Path, list[dict]], list[Any]], cache: Path, fresh: bool) -> dict:
    """``read`` (domain path, rows) applied to the development, validation and synthetic sets,
    keyed by set name ("synthetic:NAME" for training sets), pickled to ``cache``."""
    import pickle

    if cache.exists() and not fresh:
        return pickle.loads(cache.read_bytes())
    held = request_sets()
    found = {n: read(*held[n]) for split in ("dev", "validation") for n in SPLITS[split]}
    found.update({f"synthetic:{n}": read(*v) for n, v in synthetic_sets().items()})
    cache.write_bytes(pickle.dumps(found))
    return found


def out_of_fold(data: dict[str, list[tuple]], folds: int, steps: int) -> dict[str, roles.RoleModel]:
    """For each synthetic set, a model fitted without the sets of its fold (by domain)."""
    names = sorted(n for n in data if n.startswith("synthetic:"))
    random.Random(0).shuffle(names)
    models = {}
    for f in range(folds):
        out = set(names[f::folds])
        model = fit([x for n in names if n not in out for x in data[n]], steps)
        models.update({n: model for n in out})
    return models


def synthetic_sets() -> dict[str, tuple[Path, list[dict]]]:
    found = {}
    for path in sorted(SYNTHETIC.glob("*_requests.jsonl")):
        name = path.name.removesuffix("_requests.jsonl")
        rows = [json.loads(x) for x in path.read_text().splitlines() if x.strip()]
        found[name] = (SYNTHETIC / "domains" / f"{name}.yaml", rows)
    return found


def zero() -> roles.RoleModel:
    naming = np.zeros((2, roles.NAMING))
    naming[:, 0] = 4.0
    rng = np.random.default_rng(0)
    return roles.RoleModel(
        naming=naming, state=np.zeros((2, 384)), clause=np.zeros((2, 384)),
        structure=np.zeros((2, roles.STRUCTURE)),
        left=rng.normal(0, 0.05, (2, 384, RANK)), right=rng.normal(0, 0.05, (2, 384, RANK)),
    )  # fmt: skip


class Batch:
    """The requests' features padded into arrays, so a step of the fit is a few array products."""

    def __init__(self, data: list[tuple]) -> None:
        n = len(data)
        wm = max(f.naming.shape[1] for f, *_ in data)
        tm = max(len(f.types) for f, *_ in data)
        k, d = data[0][0].naming.shape[0], data[0][0].state.shape[1]
        self.naming = np.zeros((n, k, wm, tm), np.float64)
        self.state = np.zeros((n, wm, d), np.float64)
        self.clause = np.zeros((n, wm, d), np.float64)
        self.type_rows = np.zeros((n, tm, d), np.float64)
        self.structure = np.zeros((n, tm, roles.STRUCTURE), np.float64)
        self.words = np.zeros((n, wm), bool)
        self.types = np.zeros((n, tm), bool)
        self.given = np.zeros((n, tm), np.float64)
        self.output = np.zeros(n, int)
        for i, (f, given, output, _) in enumerate(data):
            w, t = f.naming.shape[1], len(f.types)
            self.naming[i, :, :w, :t] = f.naming
            self.state[i, :w], self.clause[i, :w] = f.state, f.clause
            self.type_rows[i, :t], self.structure[i, :t] = f.type_rows, f.structure
            self.words[i, :w], self.types[i, :t] = True, True
            self.given[i, :t] = [x in given for x in f.types]
            self.output[i] = f.types.index(output)


def loss_and_grad(model: roles.RoleModel, batch: Batch) -> tuple[float, dict]:
    grads = {k: np.zeros_like(getattr(model, k)) for k in roles.RoleModel.fields()}
    total = 0.0
    n = len(batch.output)
    for role in range(2):
        typed = np.tensordot(model.naming[role], batch.naming, axes=(0, 1))
        cue = batch.state @ model.state[role] + batch.clause @ model.clause[role]
        a = batch.state @ model.left[role]
        b = batch.type_rows @ model.right[role]
        z = typed + a @ b.transpose(0, 2, 1) + cue[:, :, None]
        z = np.where(batch.words[:, :, None], z, -1e9)
        top = z.max(1)
        e = np.exp(z - top[:, None, :])
        pi = e / e.sum(1, keepdims=True)
        s = top + np.log(e.sum(1)) + batch.structure @ model.structure[role]
        if role == 0:
            p = 1 / (1 + np.exp(-s))
            y = batch.given
            bce = -(y * np.log(p + 1e-12) + (1 - y) * np.log(1 - p + 1e-12))
            total += float((bce * batch.types).sum())
            g = (p - y) * batch.types
        else:
            s = np.where(batch.types, s, -1e9)
            q = np.exp(s - s.max(1, keepdims=True))
            q /= q.sum(1, keepdims=True)
            total -= float(np.log(q[np.arange(n), batch.output] + 1e-12).sum())
            g = q.copy()
            g[np.arange(n), batch.output] -= 1
            g *= batch.types
        G = pi * g[:, None, :]
        grads["naming"][role] = np.tensordot(batch.naming, G, axes=([0, 2, 3], [0, 1, 2]))
        wv = G.sum(2).reshape(-1)
        d = batch.state.shape[2]
        grads["state"][role] = wv @ batch.state.reshape(-1, d)
        grads["clause"][role] = wv @ batch.clause.reshape(-1, d)
        grads["left"][role] = batch.state.reshape(-1, d).T @ (G @ b).reshape(-1, b.shape[2])
        grads["right"][role] = batch.type_rows.reshape(-1, d).T @ (
            G.transpose(0, 2, 1) @ a
        ).reshape(-1, a.shape[2])
        grads["structure"][role] = np.tensordot(batch.structure, g, axes=([0, 1], [0, 1]))
    for k in ("state", "clause", "left", "right"):
        total += L2 * n * float(np.sum(getattr(model, k) ** 2))
        grads[k] += 2 * L2 * n * getattr(model, k)
    return total / n, {k: v / n for k, v in grads.items()}


def fit(data: list[tuple], steps: int = 300, rate: float = 0.05) -> roles.RoleModel:
    batch = Batch(data)
    model = zero()
    params = {k: getattr(model, k).copy() for k in roles.RoleModel.fields()}
    m1 = {k: np.zeros_like(v) for k, v in params.items()}
    m2 = {k: np.zeros_like(v) for k, v in params.items()}
    for step in range(1, steps + 1):
        loss, grads = loss_and_grad(roles.RoleModel(**params), batch)
        for k in params:
            m1[k] = 0.9 * m1[k] + 0.1 * grads[k]
            m2[k] = 0.999 * m2[k] + 0.001 * grads[k] ** 2
            params[k] -= (
                rate * (m1[k] / (1 - 0.9**step)) / (np.sqrt(m2[k] / (1 - 0.999**step)) + 1e-8)
            )
        if step % 100 == 0:
            print(f"  step {step}: loss {loss:.4f}", file=sys.stderr)
    return roles.RoleModel(**params)


def accuracy(model: roles.RoleModel, data: list[tuple]) -> dict[str, float]:
    """Interface right (among the domain's feasible ones), given types right, output right."""
    right = inputs_ok = output_ok = 0
    options_of: dict[int, list] = {}
    for feats, given, output, domain in data:
        g, w = roles.scores(model, feats)
        options = options_of.setdefault(id(domain), feasible_interfaces(domain))
        best = max(
            ((combo, out) for combo, outs in options for out in outs),
            key=lambda co: (roles.log_fit(g, w, feats.types, co[0], co[1]), -len(co[0])),
        )
        right += Counter(best[0]) == given and best[1] == output
        inputs_ok += {t for t, gi in zip(feats.types, g) if gi > 0} == set(given)
        output_ok += feats.types[int(np.argmax(w))] == output
    n = max(len(data), 1)
    return {"interface": right / n, "given types": inputs_ok / n, "output": output_ok / n}


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument("--no-save", action="store_true")
    parser.add_argument("--folds", type=int, default=0)
    parser.add_argument("--steps", type=int, default=400)
    parser.add_argument(
        "--fresh", action="store_true", help="read the sets again (features changed)"
    )
    args = parser.parse_args()
    data = all_features(args.fresh)
    train = {n: v for n, v in data.items() if n.startswith("synthetic:")}
    print(
        f"training on {len(train)} domains, {sum(map(len, train.values()))} requests",
        file=sys.stderr,
    )
    if args.folds:
        models = out_of_fold(data, args.folds, args.steps)
        scores = [accuracy(models[n], train[n]) for n in train]
        print(
            "cross-validated over domains:",
            {k: round(float(np.mean([s[k] for s in scores])), 3) for k in scores[0]},
        )
    model = fit([x for v in train.values() for x in v], args.steps)
    for split in ("dev", "validation"):
        per = {name: accuracy(model, data[name]) for name in SPLITS[split]}
        mean = {
            k: round(float(np.mean([p[k] for p in per.values()])), 3)
            for k in next(iter(per.values()))
        }
        print(f"[{split}] {mean}")
    if not args.no_save:
        model.save(roles.WEIGHTS)
        print(f"wrote {roles.WEIGHTS.relative_to(ROOT)}")


if __name__ == "__main__":
    main()

"""Tune the encoder's top layers for a learned reader, together with the reader's weights.

    .venv/bin/python bench/tune_readers.py prepare               # read the sets (project venv)
    /tmp/tvenv/bin/python bench/tune_readers.py tune --reader needs --epochs 2  # (PyTorch venv)
    /tmp/tvenv/bin/python bench/tune_readers.py tune --reader roles --epochs 3
    /tmp/tvenv/bin/python bench/tune_readers.py tune --reader needs --hold 6 --no-save

The two learned readers (``src/fllm_cli/search/needs.py``, which tools a request needs;
``src/fllm_cli/search/roles.py``, what it gives and wants back) read a request through MiniLM's
states and a few learned maps. Fitted on their own (``bench/train_needs.py``,
``bench/train_roles.py``) they miss purposes MiniLM does not place near a tool's or a type's
text. Here low-rank adapters on the encoder's top layers are fitted with a reader's own weights,
on the same material (``bench/synthetic``) and the same objective (needs: each tool of the
domain needed or not, with about half the requests again in a smaller cut of their domain;
roles: each type given or not, and which type is the output). The change is small (rank
``RANK`` per matrix of the top ``TOP`` layers), is stored in the reader's weights file, and
only that reader reads through it: the meaning signal and the other reader keep theirs.

``prepare`` runs in the project's venv and writes what the fit reads (texts, word spans,
clauses, plans, interfaces, and each reader's starting weights) to ``/tmp/fllm_tune.pkl``;
the starting weights are the shipped files, which must be plain fits of
``train_needs.py`` / ``train_roles.py``, or the files given with ``--start-needs`` /
``--start-roles``. The shipped readers started from the plain fits on the first 120 synthetic
domains, the files of commit 7bf4135 (``git show 7bf4135:src/fllm_cli/search/roles.npz >
/tmp/plain_roles.npz``, likewise ``needs.npz``). Both shipped readers were tuned on the 160
domains of rounds one to four (``prepare --leave-out bench/synthetic/round5.txt --leave-out
bench/synthetic/round6.txt``: the files name the fifth round's forty and the sixth round's
twenty; neither improved them, docs/benchmarks.md) with the
top four layers adapted at rate 5e-4 (the defaults; stop 49): the tool reader for two passes
(``--epochs 2``), the role reader for three (``--epochs 3``). ``tune`` needs PyTorch, which
fllm itself never imports; make a venv for it outside the repository:
``python3 -m venv /tmp/tvenv && /tmp/tvenv/bin/pip install torch==2.13.0 safetensors
tokenizers numpy``. It fits ``--epochs`` passes over the synthetic domains (6-12 minutes
each on 2 cores with four layers adapted), reports the reader alone on the development and
validation sets (and on ``--hold`` synthetic domains left out, if asked) after each, and
writes the reader's weights file unless ``--no-save``. The same seed gives the same fit.

``--listwise W`` (role reader only) adds, at weight W, the cross-entropy of the request's
interface among its domain's feasible ones, each scored as ``log_fit`` scores it in the
planner; ``prepare`` stores each set's feasible interfaces for it. One pass at W = 1.0 was
measured on 2026-11-28 (docs/benchmarks.md, stop 52); it has not been fitted further.
"""

from __future__ import annotations

import argparse
import math
import pickle
import random
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
PREPARED = Path("/tmp/fllm_tune.pkl")
RANK = 8
TOP = 4  # adapted layers, counted from the top
LAYERS, HEADS, DIM = 6, 12, 384
ADAPTED = ("attention.self.query", "attention.self.key", "attention.self.value",
           "attention.output.dense", "intermediate.dense", "output.dense")  # fmt: skip
L2 = 1e-3  # on the reader's maps, as bench/train_needs.py
SUBSETS = 0.5
LISTWISE = 0.0  # weight of the role reader's interface-among-feasible term (--listwise)


def domain_record(domain, rows: list[dict]) -> dict:
    """What the fit reads of one set: its tools' and types' texts, and per request its text,
    words (spans, lowered), clauses, the clause of each word, which tools its plan uses, its
    types' structural features, which types it gives and its output's index (-1: none)."""
    from fllm_cli.search import roles

    types, sigs, own, tool_rows = roles.domain_texts(domain)
    names, kinds = [t.name for t in domain.tools], list(types)
    requests = []
    for row in rows:
        laid = roles.layout(row["task"])
        if laid is None or not row.get("plan"):
            continue
        words, clauses, where = laid
        lowered = {w.lower() for w, _, _ in words}
        said = {t: any(o.lower() in lowered for o in own.get(t, ())) for t in kinds}
        given = set((row.get("inputs") or {}).values())
        used = {x for x in row["plan"] if not x.startswith("input:")}
        requests.append({
            "text": row["task"], "spans": [(a, b) for _, a, b in words],
            "words": [w.lower() for w, _, _ in words], "clauses": clauses, "where": where,
            "used": [n in used for n in names],
            "structure": roles.structure(kinds, sigs, said),
            "given": [t in given for t in kinds],
            "output": kinds.index(row["output"]) if row.get("output") in kinds else -1,
        })  # fmt: skip
    return {"tools": tool_rows, "types": [types[t] for t in kinds], "requests": requests,
            "interfaces": interface_rows(domain, kinds)}  # fmt: skip


def interface_rows(domain, kinds: list[str]) -> tuple[list[list[float]], list[int]]:
    """Each distinct (types given, output) among the domain's feasible interfaces, as 0/1 rows
    over ``kinds`` and the output's index: what the role reader's ``log_fit`` tells apart."""
    from fllm_cli.search import interface

    seen: dict[tuple[tuple[bool, ...], int], None] = {}
    for combo, outputs in interface.feasible_interfaces(domain):
        for output in outputs:
            seen[(tuple(t in combo for t in kinds), kinds.index(output))] = None
    return [[float(g) for g in given] for given, _ in seen], [out for _, out in seen]


def prepare(starts: dict[str, Path | None], leave_out: list[Path] | None = None) -> None:
    sys.path.insert(0, str(ROOT / "src"))
    sys.path.insert(0, str(ROOT / "bench"))
    from plan_quality import SPLITS, request_sets
    from train_roles import synthetic_sets

    from fllm_cli.domain.load import load_domain
    from fllm_cli.meaning.encoder import model_dir
    from fllm_cli.search import needs, roles

    held = request_sets()
    sets = {n: held[n] for split in ("dev", "validation") for n in SPLITS[split]}
    leave_out = leave_out or []
    if missing := [str(path) for path in leave_out if not path.is_file()]:
        sys.exit(f"--leave-out: no such file {', '.join(missing)}")
    left = {name for path in leave_out for name in path.read_text().split()}
    synthetic = synthetic_sets()
    if unknown := sorted(left - set(synthetic)):
        sys.exit(f"--leave-out names domains bench/synthetic lacks: {unknown}")
    sets.update({f"synthetic:{n}": v for n, v in synthetic.items() if n not in left})
    out = {name: domain_record(load_domain(path), rows) for name, (path, rows) in sets.items()}
    heads = {}
    for reader, module in (("needs", needs), ("roles", roles)):
        start = starts.get(reader) or module.WEIGHTS
        with np.load(start) as data:  # (tune writes "adapter:" itself: it runs without fllm)
            if any(k.startswith(roles.ADAPTER) for k in data.files):
                sys.exit(f"{start} was tuned already; run bench/train_{reader}.py first (it "
                         "writes the reader fitted on the encoder as published)")  # fmt: skip
            fields = needs.NeedModel.fields() if reader == "needs" else roles.RoleModel.fields()
            heads[reader] = {k: np.asarray(data[k]) for k in fields}
    PREPARED.write_bytes(pickle.dumps({"sets": out, "model": str(model_dir()), "heads": heads}))
    print(f"wrote {PREPARED}: {sum(len(v['requests']) for v in out.values())} requests")


class Bert:
    """MiniLM in PyTorch, with low-rank adapters on the top ``TOP`` layers."""

    def __init__(self, folder: str) -> None:
        import torch
        from safetensors.numpy import load_file
        from tokenizers import Tokenizer

        raw = load_file(f"{folder}/model.safetensors")
        self.w = {k.removeprefix("bert."): torch.tensor(v, dtype=torch.float32)
                  for k, v in raw.items()}  # fmt: skip
        self.tok = Tokenizer.from_file(f"{folder}/tokenizer.json")
        self.tok.enable_truncation(128)
        self.tok.no_padding()
        gen = torch.Generator().manual_seed(0)
        self.lora: dict[str, tuple[torch.Tensor, torch.Tensor]] = {}
        for i in range(LAYERS - TOP, LAYERS):
            for name in ADAPTED:
                full = self.w[f"encoder.layer.{i}.{name}.weight"]
                a = torch.randn(RANK, full.shape[1], generator=gen) / math.sqrt(full.shape[1])
                b = torch.zeros(full.shape[0], RANK)
                self.lora[f"encoder.layer.{i}.{name}"] = (a.requires_grad_(), b.requires_grad_())

    def params(self) -> list:
        return [x for pair in self.lora.values() for x in pair]

    def bottom(self, ids: list[int]):
        """Hidden states after the frozen layers (n x 384), without gradient."""
        import torch

        with torch.no_grad():
            x = self.w["embeddings.word_embeddings.weight"][torch.tensor(ids)]
            x = x + self.w["embeddings.position_embeddings.weight"][: len(ids)]
            x = x + self.w["embeddings.token_type_embeddings.weight"][0]
            norm = (self.w["embeddings.LayerNorm.weight"], self.w["embeddings.LayerNorm.bias"])
            x = torch.nn.functional.layer_norm(x, (DIM,), *norm, eps=1e-12)
            mask = torch.ones(1, len(ids))
            for i in range(LAYERS - TOP):
                x = self.layer(x[None], mask, i)[0]
        return x

    def layer(self, x, mask, i: int):
        """One encoder layer over a padded batch (B x N x 384); ``mask`` is B x N (1 = token)."""
        import torch

        p = f"encoder.layer.{i}."

        def lin(v, name):
            out = v @ self.w[p + name + ".weight"].T + self.w[p + name + ".bias"]
            pair = self.lora.get(p + name)
            if pair is not None:
                out = out + (v @ pair[0].T) @ pair[1].T
            return out

        b, n, _ = x.shape
        head = DIM // HEADS

        def split(v):
            return v.reshape(b, n, HEADS, head).transpose(1, 2)

        q, k, v = (split(lin(x, f"attention.self.{m}")) for m in ("query", "key", "value"))
        att = q @ k.transpose(-1, -2) / math.sqrt(head) + (mask[:, None, None, :] - 1) * 1e9
        ctx = (att.softmax(-1) @ v).transpose(1, 2).reshape(b, n, DIM)
        x = torch.nn.functional.layer_norm(
            x + lin(ctx, "attention.output.dense"), (DIM,),
            self.w[p + "attention.output.LayerNorm.weight"],
            self.w[p + "attention.output.LayerNorm.bias"], eps=1e-12,
        )  # fmt: skip
        hidden = torch.nn.functional.gelu(lin(x, "intermediate.dense"))
        return torch.nn.functional.layer_norm(
            x + lin(hidden, "output.dense"), (DIM,),
            self.w[p + "output.LayerNorm.weight"], self.w[p + "output.LayerNorm.bias"], eps=1e-12,
        )  # fmt: skip

    def top(self, rows: list):
        """The last hidden states of texts whose bottom states are ``rows``: B x N x 384, mask."""
        import torch

        n = max(r.shape[0] for r in rows)
        x = torch.zeros(len(rows), n, DIM)
        mask = torch.zeros(len(rows), n)
        for i, r in enumerate(rows):
            x[i, : r.shape[0]] = r
            mask[i, : r.shape[0]] = 1
        for i in range(LAYERS - TOP, LAYERS):
            x = self.layer(x, mask, i)
        return x, mask

    def delta(self) -> dict[str, np.ndarray]:
        """The adapters as arrays: NAME.a (R x in), NAME.b (out x R), as Encoder.adapted takes."""
        out = {}
        for name, (a, b) in self.lora.items():
            out[f"{name}.a"] = a.detach().numpy().astype(np.float32)
            out[f"{name}.b"] = b.detach().numpy().astype(np.float32)
        return out


def unit(x):
    return x / x.norm(dim=-1, keepdim=True).clamp_min(1e-12)


class NeedsHead:
    """The tool reader's head (search/needs.py ``scores``) in PyTorch, over a tool mask."""

    def __init__(self, head: dict[str, np.ndarray], rng: random.Random) -> None:
        import torch

        self.rng = rng
        self.p = {k: torch.tensor(v, dtype=torch.float32).requires_grad_() for k, v in head.items()}

    def scores(self, state, clause, tools):
        """Log-odds per tool (J,) from W words' states and clauses and J tools' rows."""
        import torch

        chans = []
        for rows in (state @ tools.T, clause @ tools.T):
            mean = rows.mean(1, keepdim=True)
            spread = rows.std(1, keepdim=True, unbiased=False) + 1e-6
            chans += [rows, (rows - mean) / spread]
        chans.append(torch.full_like(chans[0], math.log(max(tools.shape[0], 1))))
        p = self.p
        z = torch.tensordot(p["mix"], torch.stack(chans), dims=([0], [0]))
        z = z + (state @ p["left"]) @ (tools @ p["right"]).T
        z = z + (clause @ p["clause_left"]) @ (tools @ p["clause_right"]).T
        z = z + (state @ p["cue"])[:, None]
        return torch.logsumexp(z, 0) + p["bias"][0]

    def loss(self, texts, bert, request, encoded):
        """Cross-entropy of each tool needed or not, in the whole domain and (half the time)
        in a smaller cut of it; and the number of views it was summed over."""
        import torch

        tools = encoded["tools"]
        state, clause = read_request(texts, bert, request)
        used = torch.tensor(request["used"], dtype=torch.float32)
        views = [torch.arange(len(used))]
        if self.rng.random() < SUBSETS:
            kept = [j for j in range(len(used)) if used[j] > 0]
            others = [j for j in range(len(used)) if used[j] == 0]
            k = self.rng.randint(max(0, 3 - len(kept)), len(others))
            views.append(torch.tensor(sorted(kept + self.rng.sample(others, k))))
        total = torch.zeros(())
        for pick in views:
            z = self.scores(state, clause, tools[pick])
            total = total + torch.nn.functional.binary_cross_entropy_with_logits(
                z, used[pick], reduction="sum"
            )
        return total, len(views)

    def judge(self, texts, bert, request, encoded) -> dict[str, float]:
        """The reader alone on one request: F1 of the tools above 0, AUC of the scores."""
        state, clause = read_request(texts, bert, request)
        z = self.scores(state, clause, encoded["tools"]).numpy()
        used = np.array(request["used"], bool)
        found = z > 0
        hit = int((found & used).sum())
        if not hit:
            f1 = float(not found.any() and not used.any())
        else:
            precision, recall = hit / found.sum(), hit / used.sum()
            f1 = 2 * precision * recall / (precision + recall)
        out = {"f1": f1}
        if used.any() and (~used).any():
            out["auc"] = float((z[used][:, None] > z[~used][None, :]).mean())
        return out

    def penalty(self):
        return L2 * sum((self.p[k] ** 2).sum() for k in ("cue", "left", "right", "clause_left",
                                                          "clause_right"))  # fmt: skip


class RolesHead:
    """The role reader (search/roles.py ``features`` and ``scores``) in PyTorch."""

    def __init__(self, head: dict[str, np.ndarray], rng: random.Random) -> None:
        import torch

        self.rng = rng
        self.p = {k: torch.tensor(v, dtype=torch.float32).requires_grad_() for k, v in head.items()}

    def scores(self, request, state, clause, words, types, tools):
        """(given logit per type, wanted logit per type)."""
        import torch

        alone = words @ types.T
        if alone.shape[1] > 1:
            ordered = alone.sort(1).values
            other = torch.where(alone >= ordered[:, -1:], ordered[:, -2:-1], ordered[:, -1:])
        else:
            other = torch.zeros_like(alone)
        nearest = (words @ tools.T).max(1, keepdim=True).values
        naming = torch.stack(
            [alone, alone - other, alone - nearest, state @ types.T, clause @ types.T]
        )
        structure = torch.tensor(request["structure"], dtype=torch.float32)
        p, out = self.p, []
        for role in range(2):
            z = torch.tensordot(p["naming"][role], naming, dims=([0], [0]))
            z = z + (state @ p["left"][role]) @ (types @ p["right"][role]).T
            z = z + (state @ p["state"][role] + clause @ p["clause"][role])[:, None]
            out.append(torch.logsumexp(z, 0) + structure @ p["structure"][role])
        return out

    def _read(self, texts, bert, request, encoded):
        state, clause = read_request(texts, bert, request)
        words = embed_texts(texts, bert, request["words"])
        return self.scores(request, state, clause, words, encoded["types"], encoded["tools"])

    def loss(self, texts, bert, request, encoded):
        """Cross-entropy of each type given or not, and of the output among the types; with
        ``LISTWISE`` also, at that weight, of the request's interface among its domain's
        feasible ones (each scored as search/roles.py ``log_fit`` scores it)."""
        import torch

        given, wanted = self._read(texts, bert, request, encoded)
        target = torch.tensor(request["given"], dtype=torch.float32)
        total = torch.nn.functional.binary_cross_entropy_with_logits(given, target, reduction="sum")
        if request["output"] >= 0:
            total = total - torch.log_softmax(wanted, 0)[request["output"]]
        choices = encoded.get("interfaces")
        if LISTWISE and choices is not None and request["output"] >= 0:
            masks, outs = choices
            key = (tuple(bool(g) for g in request["given"]), request["output"])
            listed = list(zip(map(tuple, masks.bool().tolist()), outs.tolist()))
            ref = listed.index(key) if key in listed else None
            if ref is not None and len(outs) > 1:
                scores = (
                    masks * torch.nn.functional.logsigmoid(given)
                    + (1 - masks) * torch.nn.functional.logsigmoid(-given)
                ).sum(1)
                scores = scores + torch.log_softmax(wanted, 0)[outs]
                total = total - LISTWISE * torch.log_softmax(scores, 0)[ref]
        return total, 1

    def judge(self, texts, bert, request, encoded) -> dict[str, float]:
        """The reader alone: every type's given-or-not right, the output right."""
        given, wanted = self._read(texts, bert, request, encoded)
        inputs = bool(((given.numpy() > 0) == np.array(request["given"], bool)).all())
        return {"inputs": float(inputs), "output": float(int(wanted.argmax()) == request["output"])}

    def penalty(self):
        return L2 * sum((self.p[k] ** 2).sum() for k in ("state", "clause", "left", "right"))


HEADS_OF = {"needs": NeedsHead, "roles": RolesHead}


class Texts:
    """Every text's token ids, offsets and bottom states, computed once."""

    def __init__(self, bert: Bert) -> None:
        self.bert = bert
        self.known: dict[str, tuple] = {}

    def get(self, text: str):
        got = self.known.get(text)
        if got is None:
            enc = self.bert.tok.encode(text)
            got = self.known[text] = (self.bert.bottom(enc.ids), enc.offsets[1:-1])
        return got


def read_request(texts: Texts, bert: Bert, request: dict):
    """(word states W x 384, word clauses W x 384) of one request, through the top layers, as
    search/roles.py ``context`` reads them."""
    import torch

    rows, offsets = texts.get(request["text"])
    clause_rows = [texts.get(c)[0] for c in request["clauses"]]
    out, mask = bert.top([rows, *clause_rows])
    pieces = unit(out[0, 1 : rows.shape[0] - 1])
    pool = torch.zeros(len(request["spans"]), pieces.shape[0])
    for i, (a, b) in enumerate(request["spans"]):
        for k, (s, e) in enumerate(offsets):
            if s < b and e > a:
                pool[i, k] = 1.0
    state = unit((pool / pool.sum(1, keepdim=True).clamp_min(1.0)) @ pieces)
    embedded = unit((out[1:] * mask[1:, :, None]).sum(1) / mask[1:].sum(1, keepdim=True))
    clause = torch.zeros_like(state)
    for i, k in enumerate(request["where"]):
        if k >= 0:
            clause[i] = embedded[k]
    return state, clause


def embed_texts(texts: Texts, bert: Bert, items: list[str]):
    """Each text's sentence vector (mean over its tokens, unit length), as Encoder.embed."""
    out, mask = bert.top([texts.get(t)[0] for t in items])
    return unit((out * mask[:, :, None]).sum(1) / mask.sum(1, keepdim=True))


def encode_set(texts: Texts, bert: Bert, s: dict) -> dict:
    import torch

    out = {"tools": embed_texts(texts, bert, s["tools"]),
           "types": embed_texts(texts, bert, s["types"])}  # fmt: skip
    if "interfaces" in s:  # (given types as 0/1 rows, output index) of each feasible interface
        masks, outs = s["interfaces"]
        out["interfaces"] = (torch.tensor(masks, dtype=torch.float32), torch.tensor(outs))
    return out


def evaluate(texts: Texts, bert: Bert, head, sets: dict, names: list[str]) -> dict:
    """The reader alone on ``names``: each measure averaged per set, then over sets."""
    import torch

    per_set: dict[str, list[float]] = {}
    with torch.no_grad():
        for name in names:
            encoded = encode_set(texts, bert, sets[name])
            found: dict[str, list[float]] = {}
            for request in sets[name]["requests"]:
                for k, v in head.judge(texts, bert, request, encoded).items():
                    found.setdefault(k, []).append(v)
            for k, v in found.items():
                per_set.setdefault(k, []).append(float(np.mean(v)))
    return {k: round(float(np.mean(v)), 3) for k, v in per_set.items()}


def tune(args: argparse.Namespace) -> None:
    import torch

    global TOP, RANK, LISTWISE
    TOP, RANK, LISTWISE = args.top, args.rank, args.listwise
    torch.manual_seed(0)
    torch.set_num_threads(args.threads)
    prepared = pickle.loads(PREPARED.read_bytes())
    sets = prepared["sets"]
    if args.reader == "roles":  # as train_roles.py: requests that give and want a type
        sets = {
            n: {**s, "requests": [r for r in s["requests"] if r["output"] >= 0 and any(r["given"])]}
            for n, s in sets.items()
        }
    bert = Bert(prepared["model"])
    rng = random.Random(0)
    head = HEADS_OF[args.reader](prepared["heads"][args.reader], rng)
    texts = Texts(bert)
    synthetic = sorted(n for n in sets if n.startswith("synthetic:"))
    held = synthetic[:: args.hold] if args.hold else []
    train = [n for n in synthetic if n not in held]
    dev = [n for n in sets if not n.startswith("synthetic:")]
    opt = torch.optim.Adam(
        [{"params": bert.params(), "lr": args.rate},
         {"params": list(head.p.values()), "lr": args.head_rate}]
    )  # fmt: skip

    def report(label: str) -> None:
        line = {"dev+val": evaluate(texts, bert, head, sets, dev)}
        if held:
            line["held synthetic"] = evaluate(texts, bert, head, sets, held)
        print(label, line, flush=True)

    report("start")
    for epoch in range(1, args.epochs + 1):
        began = time.time()
        steps = []
        for name in train:
            order = list(range(len(sets[name]["requests"])))
            rng.shuffle(order)
            steps += [(name, order[i : i + args.batch]) for i in range(0, len(order), args.batch)]
        rng.shuffle(steps)
        total = 0.0
        for name, chunk in steps:
            encoded = encode_set(texts, bert, sets[name])
            loss, count = torch.zeros(()), 0
            for i in chunk:
                part, views = head.loss(texts, bert, sets[name]["requests"][i], encoded)
                loss, count = loss + part, count + views
            loss = loss / count + head.penalty()
            opt.zero_grad()
            loss.backward()
            opt.step()
            total += float(loss.detach())
        print(f"epoch {epoch}: loss {total / len(steps):.4f}, {time.time() - began:.0f} s",
              flush=True)  # fmt: skip
        report(f"after epoch {epoch}")
        out = args.out or ROOT / f"src/fllm_cli/search/{args.reader}.npz"
        if args.each and not args.no_save:
            save(bert, head, out.with_name(f"{out.stem}_e{epoch}.npz"))
    if not args.no_save:
        save(bert, head, args.out or ROOT / f"src/fllm_cli/search/{args.reader}.npz")


def save(bert: Bert, reader, path: Path) -> None:
    """The reader's weights and the encoder change in one file, as the readers' ``save``."""
    head = {k: v.detach().numpy().astype(np.float32) for k, v in reader.p.items()}
    head.update({f"adapter:{k}": v for k, v in bert.delta().items()})
    np.savez(path, **head)
    print(f"wrote {path}", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument("what", choices=("prepare", "tune"))
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--batch", type=int, default=10, help="requests per step (one domain)")
    parser.add_argument("--rate", type=float, default=5e-4, help="the adapters' learning rate")
    parser.add_argument("--head-rate", type=float, default=1e-3)
    parser.add_argument("--hold", type=int, default=0, help="leave every Nth synthetic domain out")
    parser.add_argument("--no-save", action="store_true")
    parser.add_argument("--start-needs", type=Path, help="prepare: the tool reader to start from")
    parser.add_argument("--start-roles", type=Path, help="prepare: the role reader to start from")
    parser.add_argument(
        "--leave-out",
        type=Path,
        action="append",
        help="prepare: a file naming synthetic domains not to fit on (repeatable)",
    )
    parser.add_argument("--each", action="store_true", help="also save after each epoch")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--top", type=int, default=TOP, help="adapted layers, from the top")
    parser.add_argument("--rank", type=int, default=RANK)
    parser.add_argument("--out", type=Path, help="default: the reader's shipped weights file")
    parser.add_argument(
        "--listwise", type=float, default=0.0,
        help="roles: weight of the interface among its domain's feasible ones",
    )  # fmt: skip
    parser.add_argument("--reader", choices=("needs", "roles"), default="needs")
    args = parser.parse_args()
    if args.what == "prepare":
        prepare({"needs": args.start_needs, "roles": args.start_roles}, args.leave_out)
    else:
        tune(args)


if __name__ == "__main__":
    main()

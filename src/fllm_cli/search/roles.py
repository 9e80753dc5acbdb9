"""A learned reading of what a request gives and what it wants back.

For each data type of a domain the model scores two roles: *given* (the request provides data
of that type) and *wanted* (the final result is of that type). A type is read in a role from
the request's words: how closely a word, embedded alone, means the type (its phrase and
description), and what the word's context says about its role ("here's my contract" gives,
"send me a summary" wants); the context is the encoder's contextual state of the word and the
embedding of the clause it stands in. Each role's score of a type is a soft maximum over the
words, plus terms from the type's place in the domain (no tool makes it, no tool reads it, how
many tools read or make it).

The weights are few (two context detectors of 384 numbers per role, a handful of scalars) and
were fitted by ``bench/train_roles.py`` on synthetic tool domains written for the purpose, in
fields that none of the held-out measurement sets cover, then tuned by
``bench/tune_readers.py`` together with a small change to the encoder's top four layers, which
this reader alone reads through (stored in its weights file; see :class:`Through`). Nothing
here names a domain or a word.
"""

from __future__ import annotations

import math
import re
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from fllm_cli.search.semantic import tool_texts, type_text

if TYPE_CHECKING:
    import numpy as np

    from fllm_cli.domain.model import Domain

WEIGHTS = Path(__file__).with_name("roles.npz")
ROLES = ("given", "wanted")
_WORD = re.compile(r"[^\W\d_]+(?:'[^\W\d_]+)?")
_CLAUSE = re.compile(r"[;:,.!?\n()]+")
STRUCTURE = 6  # structural features per type, see structure()
NAMING = 5  # ways a word can name a type, see features()


class Encoder(Protocol):
    def embed(self, texts: Sequence[str], lasting: bool = False) -> np.ndarray: ...

    def token_states(self, text: str) -> np.ndarray: ...

    def token_spans(self, text: str) -> list[tuple[int, int]]: ...


@dataclass(frozen=True)
class Features:
    """What the model reads of one request in one domain: W words, T types."""

    types: tuple[str, ...]
    naming: np.ndarray  # NAMING x W x T: how each word names each type (see features())
    state: np.ndarray  # W x 384: each word's contextual state (mean of its pieces), unit
    clause: np.ndarray  # W x 384: the embedding of the clause each word stands in
    structure: np.ndarray  # T x STRUCTURE
    type_rows: np.ndarray  # T x 384: each type's text, embedded


def structure(
    types: Sequence[str], tools: Sequence[tuple[Sequence[str], str]], own: Mapping[str, bool]
) -> np.ndarray:
    """Per type: no tool makes it, no tool reads it, the share of tools that read it, the
    share that make it, whether the request uses one of the type's own words, and 1."""
    import numpy as np

    n = max(len(tools), 1)
    rows = []
    for t in types:
        reads = sum(1 for inputs, _ in tools if t in inputs)
        makes = sum(1 for _, output in tools if output == t)
        rows.append([makes == 0, reads == 0, reads / n, makes / n, own.get(t, False), 1.0])
    return np.asarray(rows, dtype=np.float64)


Word = tuple[str, int, int]  # a word of the request and where it starts and ends


Layout = tuple[list[Word], list[str], list[int]]  # what layout returns


def layout(text: str) -> Layout | None:
    """Return the request's words, its clauses (split at punctuation) and, per word, the index
    of the clause it stands in; None when the text has no words. The part of :func:`context`
    that needs no encoder (also what ``bench/tune_readers.py`` reads to train with)."""
    found = [(m.group(0), m.start(), m.end()) for m in _WORD.finditer(text)]
    if not found:
        return None
    clauses, bounds, at = [], [], 0
    for m in [*_CLAUSE.finditer(text), None]:
        end = len(text) if m is None else m.start()
        piece = text[at:end].strip()
        if piece:
            clauses.append(piece)
            bounds.append((at, end))
        at = len(text) if m is None else m.end()
    where = [next((k for k, (a, b) in enumerate(bounds) if a <= start < b), -1)
             for _, start, _ in found]  # fmt: skip
    return found, clauses, where


def context(encoder: Encoder, text: str) -> tuple[list[Word], np.ndarray, np.ndarray] | None:
    """Return the request's words, each word's contextual state (W x 384, the mean of its
    pieces, unit length) and the embedding of the clause it stands in (W x 384); None when
    the text has no words. Shared by the role reader and the tool reader (search/needs.py)."""
    import numpy as np

    laid = layout(text)
    if laid is None:
        return None
    found, clauses, where = laid
    states, spans = encoder.token_states(text), encoder.token_spans(text)
    state = np.zeros((len(found), states.shape[1]))
    for i, (_, start, end) in enumerate(found):
        pieces = [k for k, (a, b) in enumerate(spans) if a < end and b > start]
        if pieces:
            state[i] = states[pieces].mean(0)
    state /= np.maximum(np.linalg.norm(state, axis=1, keepdims=True), 1e-12)
    clause_rows = encoder.embed(clauses)
    clause = np.zeros_like(state)
    for i, k in enumerate(where):
        if k >= 0:
            clause[i] = clause_rows[k]
    return found, state, clause


def features(
    encoder: Encoder,
    text: str,
    types: Mapping[str, str],
    tools: Sequence[tuple[Sequence[str], str]],
    own_words: Mapping[str, Sequence[str]],
    tool_texts: Sequence[str] = (),
) -> Features | None:
    """Read ``text`` for the model; ``types`` maps each type to its text ("phrase: what it
    is"), ``tools`` lists each tool's (input types, output type), ``own_words`` each type's own
    words (its name and phrase), ``tool_texts`` each tool's name and description. None when the
    text has no words.

    A word names a type by: its similarity to the type's text, embedded alone; its lead over
    the next type; its lead over the nearest tool (a word nearer a tool says what to do, not
    what data there is); its contextual state's similarity to the type's text; and its
    clause's ("tell me: what street is it?" is itself a piece of text the request gives)."""
    import numpy as np

    if not types:
        return None
    read = context(encoder, text)
    if read is None:
        return None
    found, state, clause = read
    names = tuple(types)
    type_rows = encoder.embed([types[t] for t in names], lasting=True)
    word_rows = encoder.embed([w.lower() for w, _, _ in found])
    alone = word_rows @ type_rows.T
    lowered = {w.lower() for w, _, _ in found}
    own = {t: any(o.lower() in lowered for o in own_words.get(t, ())) for t in names}
    if alone.shape[1] > 1:
        ordered = np.sort(alone, axis=1)
        other = np.where(alone >= ordered[:, -1:], ordered[:, -2:-1], ordered[:, -1:])
    else:
        other = np.zeros_like(alone)
    tool_best = (
        (word_rows @ encoder.embed(list(tool_texts), lasting=True).T).max(1, keepdims=True)
        if tool_texts
        else np.zeros((len(found), 1))
    )
    naming = np.stack(
        [alone, alone - other, alone - tool_best, state @ type_rows.T, clause @ type_rows.T]
    )
    return Features(names, naming, state, clause, structure(names, tools, own), type_rows)


def load_weights(path: Path, names: Sequence[str]) -> tuple[dict[str, np.ndarray], Adapter]:
    """Read the named arrays of a weights file as float64, and the encoder change stored
    beside them (see :func:`adapter_of`), opening the file once. OSError, KeyError when a file
    or an array is absent; ValueError for a malformed change."""
    import numpy as np

    with np.load(path) as data:
        return {k: np.asarray(data[k], dtype=np.float64) for k in names}, adapter_of(data)


def check_shapes(arrays: Mapping[str, np.ndarray], shapes: Mapping[str, tuple[int, ...]]) -> None:
    """Refuse weights written for another version of the features, or holding a value that is
    not finite (ValueError names one)."""
    import numpy as np

    for name, shape in shapes.items():
        if arrays[name].shape != shape:
            raise ValueError(f"{name} has shape {arrays[name].shape}, not {shape}")
        if not np.isfinite(arrays[name]).all():
            raise ValueError(f"{name} holds a value that is not finite")


# A reader's weights may have been fitted through a low-rank change to the encoder's matrices
# (bench/tune_readers.py): name -> (a, b), applied by Encoder.adapted. It is stored beside the
# reader's own arrays, each under this prefix, as NAME.a and NAME.b.
ADAPTER = "adapter:"
Adapter = Mapping[str, tuple["np.ndarray", "np.ndarray"]]


def adapter_of(data: Mapping[str, np.ndarray]) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """The encoder change among a weights file's arrays (empty when it has none). ValueError
    when one array of a pair is missing, a pair is not two matrices of one rank (R x inputs and
    outputs x R), or holds a value that is not finite."""
    import numpy as np

    keys = [k.removeprefix(ADAPTER) for k in data if k.startswith(ADAPTER)]
    found = {}
    for name in sorted({k.rsplit(".", 1)[0] for k in keys}):
        if f"{name}.a" not in keys or f"{name}.b" not in keys:
            raise ValueError(f"the encoder change {name} lacks one of its two arrays")
        a = np.asarray(data[f"{ADAPTER}{name}.a"], dtype=np.float64)
        b = np.asarray(data[f"{ADAPTER}{name}.b"], dtype=np.float64)
        if a.ndim != 2 or b.ndim != 2 or a.shape[0] != b.shape[1]:
            raise ValueError(f"the encoder change {name} is not a pair of rank-R matrices")
        if not (np.isfinite(a).all() and np.isfinite(b).all()):
            raise ValueError(f"the encoder change {name} holds a value that is not finite")
        found[name] = (a, b)
    return found


def save_weights(path: Path, arrays: Mapping[str, np.ndarray], adapter: Adapter) -> None:
    """Write a reader's arrays and its encoder change to one file, as float32."""
    import numpy as np

    out: dict[str, np.ndarray] = {k: np.asarray(v, dtype=np.float32) for k, v in arrays.items()}
    out.update(adapter_arrays(adapter))
    np.savez(path, **out)  # type: ignore[arg-type]


def adapter_arrays(adapter: Adapter) -> dict[str, np.ndarray]:
    """An encoder change as the arrays :func:`adapter_of` reads back."""
    import numpy as np

    out = {}
    for name, (a, b) in adapter.items():
        out[f"{ADAPTER}{name}.a"] = np.asarray(a, dtype=np.float32)
        out[f"{ADAPTER}{name}.b"] = np.asarray(b, dtype=np.float32)
    return out


class Through:
    """The encoder a reader reads through: with its weights' change applied, built once for the
    last (encoder, change) asked for; None when the change does not fit the encoder (weights
    written for another one)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._last: tuple[object, object, Encoder | None] | None = None

    def __call__(self, encoder: Encoder, adapter: Adapter) -> Encoder | None:
        if not adapter:
            return encoder
        with self._lock:
            last = self._last
            if last is None or last[0] is not encoder or last[1] is not adapter:
                try:
                    adapted = encoder.adapted(adapter)  # type: ignore[attr-defined]
                except (AttributeError, ValueError, IndexError):
                    adapted = None
                last = self._last = (encoder, adapter, adapted)
            return last[2]


@dataclass(frozen=True)
class RoleModel:
    """Per role (given, wanted): ``naming`` weighs the ways a word names a type, ``state`` and
    ``clause`` detect the role from the word's context, ``structure`` weighs the type's
    structural features."""

    naming: np.ndarray  # (2, NAMING)
    state: np.ndarray  # (2, 384)
    clause: np.ndarray  # (2, 384)
    structure: np.ndarray  # (2, STRUCTURE)
    left: np.ndarray  # (2, 384, R): a low-rank map from a word's context ...
    right: np.ndarray  # (2, 384, R): ... to the types it reads in that role
    adapter: Adapter = field(default_factory=dict)  # the encoder change it reads through

    @classmethod
    def load(cls, path: Path | None = None) -> RoleModel:

        arrays, adapter = load_weights(WEIGHTS if path is None else path, cls.fields())
        rank = arrays["left"].shape[-1] if arrays["left"].ndim == 3 else -1
        check_shapes(arrays, {
            "naming": (2, NAMING), "state": (2, 384), "clause": (2, 384),
            "structure": (2, STRUCTURE), "left": (2, 384, rank), "right": (2, 384, rank),
        })  # fmt: skip
        return cls(**arrays, adapter=adapter)

    @staticmethod
    def fields() -> tuple[str, ...]:
        return ("naming", "state", "clause", "structure", "left", "right")

    def save(self, path: Path) -> None:
        save_weights(path, {k: getattr(self, k) for k in self.fields()}, self.adapter)


def word_scores(model: RoleModel, feats: Features, role: int) -> np.ndarray:
    """W x T: how strongly each word reads each type in ``role``."""
    typed = (model.naming[role][:, None, None] * feats.naming).sum(0)
    cue = feats.state @ model.state[role] + feats.clause @ model.clause[role]
    paired = (feats.state @ model.left[role]) @ (feats.type_rows @ model.right[role]).T
    out: np.ndarray = typed + paired + cue[:, None]
    return out


def scores(model: RoleModel, feats: Features) -> tuple[np.ndarray, np.ndarray]:
    """Return (given logit per type, wanted logit per type)."""
    import numpy as np

    out = []
    for role in range(2):
        z = word_scores(model, feats, role)
        top = z.max(0)
        lse = top + np.log(np.exp(z - top).sum(0))
        out.append(lse + feats.structure @ model.structure[role])
    return out[0], out[1]


def _softplus(x: float) -> float:
    """log(1 + e^x) without overflow."""
    return x + math.log1p(math.exp(-x)) if x > 0 else math.log1p(math.exp(x))


def log_fit(
    given: np.ndarray, wanted: np.ndarray, types: Sequence[str], inputs: Sequence[str], output: str
) -> float:
    """The model's log-probability of an interface: each type given or not, and its output."""
    chosen = set(inputs)
    total = 0.0
    for t, g in zip(types, given):
        total -= _softplus(-float(g) if t in chosen else float(g))
    top = float(wanted.max())
    norm = top + math.log(sum(math.exp(float(w) - top) for w in wanted))
    total += float(wanted[list(types).index(output)]) - norm
    return total


DomainTexts = tuple[
    dict[str, str], list[tuple[tuple[str, ...], str]], dict[str, list[str]], list[str]
]


def domain_texts(domain: Domain) -> DomainTexts:
    """What the model reads of a domain: each type's text ("phrase: what it is"), each tool's
    (inputs, output), each type's own words (name and phrase), each tool's text."""
    types = {m.name: type_text(m.phrase, m.description) for m in domain.modalities}
    tools = [(tuple(t.inputs), t.output) for t in domain.tools]
    own = {
        m.name: [*m.name.replace("_", " ").split(), *m.phrase.split()] for m in domain.modalities
    }
    texts = list(tool_texts({t.name: t.description for t in domain.tools}).values())
    return types, tools, own, texts


@dataclass(frozen=True)
class Reading:
    """The model's reading of one request: per type, the logits of being given and wanted."""

    types: tuple[str, ...]
    given: np.ndarray
    wanted: np.ndarray

    def log_fit(self, inputs: Sequence[str], output: str) -> float:
        return log_fit(self.given, self.wanted, self.types, inputs, output)

    def summary(self) -> dict[str, object]:
        """For --explain: each type's chance of being given, and of being the output."""
        import numpy as np

        wanted = np.exp(self.wanted - self.wanted.max())
        wanted /= wanted.sum()
        return {
            "given": {
                t: round(float(1 / (1 + np.exp(-g))), 2) for t, g in zip(self.types, self.given)
            },
            "wanted": {t: round(float(w), 2) for t, w in zip(self.types, wanted)},
        }


_MODEL: dict[str, RoleModel | None] = {}
_LOCK = threading.Lock()
THROUGH = Through()


def shipped_model() -> RoleModel | None:
    """The fitted weights shipped with fllm (None when the file is missing or unreadable)."""
    with _LOCK:
        if "model" not in _MODEL:  # a missing or unreadable file is tried once, not per plan
            try:
                _MODEL["model"] = RoleModel.load()
            except (OSError, KeyError, ValueError):
                _MODEL["model"] = None
        return _MODEL["model"]


def read(encoder: Encoder, domain: Domain, text: str) -> Reading | None:
    """Read ``text``'s interface roles with the shipped model, or None without it."""
    model = shipped_model()
    through = None if model is None else THROUGH(encoder, model.adapter)
    if model is None or through is None:
        return None
    feats = features(through, text, *domain_texts(domain))
    if feats is None:
        return None
    given, wanted = scores(model, feats)
    return Reading(feats.types, given, wanted)

"""The learned role reader (search/roles.py): its arithmetic, its fit, its shipped weights and
its place in choosing an interface."""

from __future__ import annotations

import math
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from fllm_cli.domain.load import load_domain
from fllm_cli.meaning.encoder import available
from fllm_cli.search import interface, roles
from fllm_cli.search.relevance import Relevance
from tests.conftest import bench_script

ROOT = Path(__file__).resolve().parents[2]
OPENAGI = ROOT / "domains" / "openagi.yaml"
needs_encoder = pytest.mark.skipif(not available(), reason="the sentence encoder is not installed")


def _train_roles():  # the bench script, imported as the bench runs it
    return bench_script("train_roles")


def _random_features(rng: np.random.Generator, words: int, types: int) -> roles.Features:
    def unit(*shape: int) -> np.ndarray:
        x = rng.normal(size=shape)
        out: np.ndarray = x / np.linalg.norm(x, axis=-1, keepdims=True)
        return out

    return roles.Features(
        types=tuple(f"t{i}" for i in range(types)),
        naming=rng.normal(0, 0.3, (roles.NAMING, words, types)),
        state=unit(words, 384),
        clause=unit(words, 384),
        structure=rng.normal(size=(types, roles.STRUCTURE)),
        type_rows=unit(types, 384),
    )


def _random_model(rng: np.random.Generator, rank: int = 3) -> roles.RoleModel:
    return roles.RoleModel(
        naming=rng.normal(size=(2, roles.NAMING)),
        state=rng.normal(0, 0.5, (2, 384)),
        clause=rng.normal(0, 0.5, (2, 384)),
        structure=rng.normal(size=(2, roles.STRUCTURE)),
        left=rng.normal(0, 0.3, (2, 384, rank)),
        right=rng.normal(0, 0.3, (2, 384, rank)),
    )


def test_log_fit_is_a_probability_over_interfaces() -> None:
    """Summed over every set of given types and every output, the probabilities make one."""
    rng = np.random.default_rng(1)
    feats = _random_features(rng, words=7, types=3)
    given, wanted = roles.scores(_random_model(rng), feats)
    total = 0.0
    for mask in range(8):
        inputs = [t for i, t in enumerate(feats.types) if mask >> i & 1]
        for output in feats.types:
            total += math.exp(roles.log_fit(given, wanted, feats.types, inputs, output))
    assert total == pytest.approx(1.0)
    # a type given twice is the same reading as given once (the reader does not count)
    assert roles.log_fit(given, wanted, feats.types, ["t0", "t0"], "t1") == pytest.approx(
        roles.log_fit(given, wanted, feats.types, ["t0"], "t1")
    )


def test_the_fit_follows_its_gradient() -> None:
    """The trainer's hand-written gradient matches the loss's numeric slope in every part."""
    tr = _train_roles()
    rng = np.random.default_rng(2)
    data = []
    for n in range(6):
        feats = _random_features(rng, words=4 + n, types=2 + n % 3)
        data.append((feats, Counter([feats.types[0]]), feats.types[-1], None))
    batch = tr.Batch(data)
    model = _random_model(rng, rank=tr.RANK)
    _, grads = tr.loss_and_grad(model, batch)
    for key in roles.RoleModel.fields():
        params = {k: getattr(model, k).copy() for k in roles.RoleModel.fields()}
        index = tuple(int(i) for i in rng.integers(0, params[key].shape))
        params[key][index] += 1e-5
        up, _ = tr.loss_and_grad(roles.RoleModel(**params), batch)
        params[key][index] -= 2e-5
        down, _ = tr.loss_and_grad(roles.RoleModel(**params), batch)
        assert (up - down) / 2e-5 == pytest.approx(grads[key][index], rel=1e-3, abs=1e-7), key


def test_a_fit_learns_a_role_cue_it_was_shown() -> None:
    """Requests whose given type is always named next to one context direction: after a fit,
    the reader gives that type from the cue alone."""
    tr = _train_roles()
    rng = np.random.default_rng(3)
    cue = rng.normal(size=384)
    cue /= np.linalg.norm(cue)
    data = []
    for _ in range(60):
        feats = _random_features(rng, words=5, types=3)
        k = int(rng.integers(0, 3))
        state = feats.state.copy()
        state[int(rng.integers(0, 5))] = cue
        naming = feats.naming.copy()
        naming[0, :, :] = 0.0
        naming[0, np.argmax(state @ cue), k] = 1.0  # the cue word names type k
        feats = roles.Features(
            feats.types,
            naming,
            state,
            feats.clause,
            np.zeros((3, roles.STRUCTURE)),
            feats.type_rows,
        )
        data.append((feats, Counter([feats.types[k]]), feats.types[(k + 1) % 3], None))
    model = tr.fit(data, steps=150)
    right = 0
    for feats, given, _, _ in data[:20]:
        g, _ = roles.scores(model, feats)
        right += feats.types[int(np.argmax(g))] in given
    assert right >= 18


def test_the_shipped_weights_load_and_fit_the_model() -> None:
    model = roles.RoleModel.load()
    assert model.naming.shape == (2, roles.NAMING)
    assert model.state.shape == model.clause.shape == (2, 384)
    assert model.structure.shape == (2, roles.STRUCTURE)
    assert model.left.shape[:2] == model.right.shape[:2] == (2, 384)
    assert all(np.isfinite(getattr(model, k)).all() for k in roles.RoleModel.fields())


@needs_encoder
def test_the_shipped_reader_reads_a_plain_request() -> None:
    """A photo given and words wanted back, said plainly, in a domain the reader was not
    fitted on."""
    from fllm_cli.meaning.encoder import shared

    domain = load_domain(OPENAGI)
    reading = roles.read(shared(), domain, "Here is a photo of my cat. Write me a poem about it.")
    assert reading is not None
    summary = reading.summary()
    assert summary["given"]["image"] > summary["given"]["text"]
    assert summary["wanted"]["text"] > summary["wanted"]["image"]


def test_without_weights_the_reader_stays_out(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(roles, "WEIGHTS", ROOT / "no-such-weights.npz")
    monkeypatch.setattr(roles, "_MODEL", {})
    assert roles.shipped_model() is None
    assert roles.read(object(), load_domain(OPENAGI), "anything") is None  # type: ignore[arg-type]


def test_the_reading_moves_the_choice_of_interface() -> None:
    """With no evidence either way, the interface the reading prefers is chosen."""
    domain = load_domain(OPENAGI)
    options = interface.feasible_interfaces(domain)
    silent = Relevance({}, 0.0, {})
    types = tuple(m.name for m in domain.modalities)

    def reading(given: str, wanted: str) -> roles.Reading:
        g = np.array([4.0 if t == given else -4.0 for t in types])
        w = np.array([4.0 if t == wanted else -4.0 for t in types])
        return roles.Reading(types, g, w)

    for given, wanted in (("image", "text"), ("text", "image"), ("text", "text")):
        ranked = interface.rank_interfaces(
            domain, "request", options, silent, named=[], reading=reading(given, wanted)
        )
        assert (ranked[0][1], ranked[0][2]) == ((given,), wanted)


def refuses_other_shapes(
    module: Any, good: Any, wrong: Any, field: str, path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A reader ``module`` (roles, needs) refuses ``wrong`` weights (``field`` of another shape)
    when loading them and stays silent with them shipped, and takes ``good`` ones."""
    wrong.save(path)
    with pytest.raises(ValueError, match=f"{field} has shape"):
        type(good).load(path)
    monkeypatch.setattr(module, "WEIGHTS", path)
    monkeypatch.setattr(module, "_MODEL", {})
    assert module.shipped_model() is None
    good.save(path)
    monkeypatch.setattr(module, "_MODEL", {})
    assert module.shipped_model() is not None


def test_weights_of_another_shape_are_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Weights written for another version of the features are not used (no crash mid-plan)."""
    good = _random_model(np.random.default_rng(4))
    wrong = roles.RoleModel(
        good.naming[:, :-1], good.state, good.clause, good.structure, good.left, good.right
    )
    refuses_other_shapes(roles, good, wrong, "naming", tmp_path / "roles.npz", monkeypatch)


def test_unreadable_weights_are_tried_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """A missing weights file is not looked for again on every plan of a long-running process."""
    calls: list[int] = []

    def failing_load(cls: type, path: Path | None = None) -> roles.RoleModel:
        calls.append(1)
        raise OSError("no file")

    monkeypatch.setattr(roles.RoleModel, "load", classmethod(failing_load))
    monkeypatch.setattr(roles, "_MODEL", {})
    assert roles.shipped_model() is None
    assert roles.shipped_model() is None
    assert calls == [1]


def test_layout_puts_each_word_in_its_clause() -> None:
    """What the readers and the tuning script read of a request before any encoder: its words,
    its clauses (split at punctuation) and the clause of each word."""
    words, clauses, where = roles.layout("Here's a photo; my question: any eggs?")
    assert [w for w, _, _ in words] == ["Here's", "a", "photo", "my", "question", "any", "eggs"]
    assert clauses == ["Here's a photo", "my question", "any eggs"]
    assert where == [0, 0, 0, 1, 1, 2, 2]
    assert roles.layout("?! 42") is None


@needs_encoder
def test_the_shipped_role_reader_reads_through_its_own_encoder_change() -> None:
    """The role reader's weights were tuned with their own change to the encoder's top layers
    (bench/tune_readers.py): it reads through that change, the tool reader through its own,
    and the shared encoder stays as published."""
    from fllm_cli.meaning.encoder import shared
    from fllm_cli.search import needs

    model = roles.shipped_model()
    assert model is not None and model.adapter
    through = roles.THROUGH(shared(), model.adapter)
    assert through is not None and through is not shared()
    other = needs.shipped_model()
    assert other is not None
    theirs = needs.THROUGH(shared(), other.adapter)
    assert theirs is not None
    text = "Here's the contract; send me a summary."
    mine = through.embed([text])
    assert not np.allclose(mine, shared().embed([text]), atol=1e-3)
    assert not np.allclose(mine, theirs.embed([text]), atol=1e-3)
    domain = load_domain(ROOT / "domains" / "openagi.yaml")
    reading = roles.read(shared(), domain, text)
    assert reading is not None
    expected = roles.scores(model, roles.features(through, text, *roles.domain_texts(domain)))
    plain = roles.features(shared(), text, *roles.domain_texts(domain))
    assert plain is not None
    assert np.allclose(reading.given, expected[0]) and np.allclose(reading.wanted, expected[1])
    assert not np.allclose(reading.given, roles.scores(model, plain)[0], atol=1e-3)

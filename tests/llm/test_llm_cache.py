"""The on-disk reply cache: hits and misses, several writer processes, damaged files."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from fllm_cli.llm.cache import FILE_NAME, ResponseCache, cache_key, fllm_home, open_cache
from fllm_cli.llm.registry import ModelOptions, make_model

PARAMS = {"temperature": 0.0, "max_tokens": 8, "stop": []}


def test_home_follows_env(_isolated_home: Path) -> None:
    assert fllm_home() == _isolated_home
    assert open_cache().path == _isolated_home / FILE_NAME


def test_miss_then_hit(tmp_path: Path) -> None:
    cache = ResponseCache(tmp_path / "c.sqlite3")
    assert cache.get("m", "prompt", PARAMS) is None
    cache.put("m", "prompt", PARAMS, "reply")
    assert cache.get("m", "prompt", PARAMS) == "reply"
    assert (cache.hits, cache.misses) == (1, 1)
    # Any part of the key that differs is a different entry.
    assert cache.get("other", "prompt", PARAMS) is None
    assert cache.get("m", "prompt ", PARAMS) is None
    assert cache.get("m", "prompt", {**PARAMS, "max_tokens": 9}) is None


def test_key_ignores_dict_order() -> None:
    assert cache_key("m", "p", {"a": 1, "b": 2}) == cache_key("m", "p", {"b": 2, "a": 1})


def test_persists_across_instances(tmp_path: Path) -> None:
    path = tmp_path / "c.sqlite3"
    ResponseCache(path).put("m", "p", PARAMS, "kept")
    assert ResponseCache(path).get("m", "p", PARAMS) == "kept"


WRITER = textwrap.dedent(
    """
    import sys
    from fllm_cli.llm.cache import ResponseCache
    cache = ResponseCache(sys.argv[1])
    worker = sys.argv[2]
    for i in range(40):
        cache.put("m", f"{worker}-{i}", {}, f"reply {worker} {i}")
        cache.put("m", f"shared-{i}", {}, f"same {i}")
        assert cache.get("m", f"shared-{i}", {}) == f"same {i}"
    """
)


@pytest.mark.slow
def test_concurrent_processes(tmp_path: Path) -> None:
    path = tmp_path / "c.sqlite3"
    procs = [
        subprocess.Popen([sys.executable, "-c", WRITER, str(path), str(w)], stderr=subprocess.PIPE)
        for w in range(4)
    ]
    for proc in procs:
        _, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err.decode()
        assert err == b""
    cache = ResponseCache(path)
    assert len(cache) == 4 * 40 + 40
    assert cache.get("m", "3-39", {}) == "reply 3 39"


def test_corrupt_file_is_set_aside(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "c.sqlite3"
    path.write_bytes(b"this is not a database, just junk " * 200)
    cache = ResponseCache(path)
    assert cache.get("m", "p", PARAMS) is None
    cache.put("m", "p", PARAMS, "fresh")
    assert cache.get("m", "p", PARAMS) == "fresh"
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "damaged" in err and "warning" in err
    aside = [p for p in tmp_path.iterdir() if ".corrupt-" in p.name]
    assert len(aside) == 1 and aside[0].read_bytes().startswith(b"this is not")


def test_unusable_location_runs_without_cache(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("x")
    cache = ResponseCache(blocker / "sub" / "c.sqlite3")  # parent is a file: cannot create
    assert cache.get("m", "p", PARAMS) is None
    cache.put("m", "p", PARAMS, "lost")
    assert cache.get("m", "p", PARAMS) is None
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "running without it" in err


def test_registry_attaches_cache_to_litellm_models() -> None:
    model = make_model("openai/whatever", ModelOptions())
    assert getattr(model, "cache", None) is open_cache()
    off = make_model("openai/whatever", ModelOptions(cache=False))
    assert getattr(off, "cache", None) is None

"""Loading a GGUF model once per process, from a 16-bit copy of a small quantized one."""

from __future__ import annotations

import atexit
import contextlib
import ctypes
import hashlib
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fllm_cli.errors import BackendError
from fllm_cli.llm.hub import models_dir
from fllm_cli.llm.local.binding import prepare_llama_cpp, quiet_stderr
from fllm_cli.llm.local.cores import threads
from fllm_cli.llm.local.settings import context_size, unpack_mode
from fllm_cli.resources import is_file

UNPACK_LIMIT = 160 * 1024 * 1024  # quantized files up to this size run from a 16-bit copy
_WIDE_TYPES = (0, 1, 32)  # llama_ftype F32, F16, BF16: nothing to unpack


@dataclass
class Loaded:
    """A llama.cpp model loaded in this process, and how long loading it took."""

    llm: Any
    load_seconds: float


_LOADED: dict[str, Loaded] = {}


def file_type(path: Path) -> int | None:
    """Return the GGUF file's ``general.file_type`` (a llama_ftype), None if unreadable."""
    llama_cpp = prepare_llama_cpp()
    low = llama_cpp.llama_cpp
    params = low.llama_model_default_params()
    params.vocab_only = True
    model = low.llama_model_load_from_file(str(path).encode("utf-8"), params)
    if not model:
        return None
    try:
        buf = ctypes.create_string_buffer(32)
        size = low.llama_model_meta_val_str(model, b"general.file_type", buf, len(buf))
        text = buf.value.decode("ascii", "replace") if size > 0 else ""
        return int(text) if text.isdigit() else None
    finally:
        low.llama_model_free(model)


def unpacked(path: Path) -> Path:
    """Return a 16-bit copy of a small quantized model, made once under $FLLM_HOME; else path.

    A small model's prompt runs faster from 16-bit weights than from 4- or 8-bit ones, which
    must be unpacked for every product: on the 2-core AVX2 development machine the embedded
    model costs 2.7 ms per prompt token in 16 bits against 4.5 ms as shipped (``make bench``).
    The copy holds the same numbers (4-bit values widen exactly, up to 16-bit rounding).
    ``FLLM_LOCAL_UNPACK=0`` turns this off, ``=1`` also unpacks models above the size limit.
    Any failure (read-only home, full disk, unknown format) keeps the file as it is.
    """
    mode = unpack_mode()
    if mode == "0":
        return path
    try:
        stat = path.stat()
    except OSError:
        return path
    if mode == "auto" and stat.st_size > UNPACK_LIMIT:
        return path
    folder = models_dir() / "unpacked"
    origin = hashlib.sha256(str(path).encode("utf-8")).hexdigest()[:10]
    family = f"{path.stem[:100]}-{origin}-"  # every copy ever made of this path
    target = folder / f"{family}{stat.st_size}-{stat.st_mtime_ns}.f16.gguf"
    if is_file(target):
        return target
    if file_type(path) in (None, *_WIDE_TYPES):
        return path
    low = prepare_llama_cpp().llama_cpp
    temporary = folder / f".{target.name}.{os.getpid()}.part"
    try:
        folder.mkdir(parents=True, exist_ok=True)
        params = low.llama_model_quantize_default_params()
        params.ftype = low.LLAMA_FTYPE_MOSTLY_F16
        params.allow_requantize = True
        params.nthread = max(2, threads())
        with quiet_stderr():
            code = low.llama_model_quantize(
                str(path).encode("utf-8"), str(temporary).encode("utf-8"), params
            )
        if code != 0:
            return path
        os.replace(temporary, target)
    except OSError:
        return path
    finally:
        with contextlib.suppress(OSError):
            temporary.unlink()
    _prune(folder, family, target)
    return target


def _prune(folder: Path, family: str, keep: Path) -> None:
    """Delete older copies of the same file, and parts that a killed process left (1 h old)."""
    now = time.time()
    for item in folder.iterdir():
        stale = item.name.startswith(family) and item.name.endswith(".f16.gguf") and item != keep
        with contextlib.suppress(OSError):
            if stale or (item.name.endswith(".part") and now - item.stat().st_mtime > 3600):
                item.unlink()


def load_llama(path: Path, n_ctx: int | None = None) -> Loaded:
    """Load ``path`` once per process and context size (later calls reuse it)."""
    n_ctx = n_ctx or context_size()
    key = f"{path.resolve()}#{n_ctx}"
    if key in _LOADED:
        return _LOADED[key]
    llama_cpp = prepare_llama_cpp()
    start = time.perf_counter()
    runnable = unpacked(path.resolve())
    try:
        llm = llama_cpp.Llama(
            model_path=str(runnable),
            n_ctx=n_ctx,
            n_threads=threads(),
            n_batch=min(512, n_ctx),
            logits_all=False,
            verbose=False,
        )
    except (ValueError, RuntimeError, OSError) as exc:
        first = (str(exc).splitlines() or ["load failed"])[0]
        raise BackendError(
            f"cannot load model '{path}': {first}",
            hint="is it a GGUF file this llama-cpp-python supports?",
        ) from None
    _LOADED[key] = Loaded(llm, time.perf_counter() - start)
    return _LOADED[key]


@atexit.register
def _close_all() -> None:
    """Free every loaded model before interpreter teardown, which would otherwise warn."""
    while _LOADED:
        _, loaded = _LOADED.popitem()
        with contextlib.suppress(Exception):
            loaded.llm.close()

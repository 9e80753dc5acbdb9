"""Locate the shipped ``domains/`` and ``prompts/`` folders, installed or in a checkout."""

from __future__ import annotations

from functools import cache
from pathlib import Path

_PKG = Path(__file__).resolve().parent


@cache
def data_dir(name: str) -> Path:
    """Return the folder ``name`` (``domains`` or ``prompts``) shipped with fllm."""
    installed = _PKG / "data" / name
    if installed.is_dir():
        return installed
    checkout = _PKG.parent.parent / name  # src/fllm_cli -> repository root
    return checkout


def resolve_spec_path(path: str | Path) -> Path:
    """Return ``path`` if it exists, else the shipped file of that name (``domains/x.yaml``)."""
    p = Path(path)
    if p.exists() or p.is_absolute():
        return p
    parts = p.parts
    if parts and parts[0] == "domains":
        shipped = data_dir("domains").joinpath(*parts[1:])
    else:
        shipped = data_dir("domains") / p
    return shipped if shipped.exists() else p

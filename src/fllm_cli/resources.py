"""Locate the shipped ``domains/`` and ``prompts/`` folders, installed or in a checkout, and ask
about paths a user named without letting the operating system's refusals escape."""

from __future__ import annotations

from collections.abc import Callable
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


def _probe(path: str | Path, test: Callable[[Path], bool]) -> bool:
    # pathlib's exists/is_file/is_dir raise for some names the OS refuses (a component longer
    # than NAME_MAX, a NUL, no permission to search a folder): such a path is "not there".
    try:
        return bool(test(Path(path)))
    except (OSError, ValueError):
        return False


def exists(path: str | Path) -> bool:
    """Return whether ``path`` exists; False for a name the operating system cannot look up."""
    return _probe(path, Path.exists)


def is_file(path: str | Path) -> bool:
    """Return whether ``path`` is a file; False for a name the operating system cannot look up."""
    return _probe(path, Path.is_file)


def is_dir(path: str | Path) -> bool:
    """Return whether ``path`` is a folder; False for a name the operating system cannot look up."""
    return _probe(path, Path.is_dir)


def resolve_spec_path(path: str | Path) -> Path:
    """Return ``path`` if it exists, else the shipped file of that name (``domains/x.yaml``)."""
    p = Path(path)
    if exists(p) or p.is_absolute():
        return p
    parts = p.parts
    if parts and parts[0] == "domains":
        shipped = data_dir("domains").joinpath(*parts[1:])
    else:
        shipped = data_dir("domains") / p
    return shipped if exists(shipped) else p

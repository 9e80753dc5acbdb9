"""Domain kinds behind one interface: check, compile for a task, prompt, verify, document.

The registry (:data:`KINDS`, the table of :mod:`fllm_cli.domain.kinds`) maps the ``kind:`` of a
domain file to its row: how the loader reads the file, and the implementation here. Everything
above this package asks ``kind_of(domain)`` and never compares kind names. A new kind is one
module in this package and one row in that table.
"""

from __future__ import annotations

import importlib

from fllm_cli.diagnostics import Diagnostic
from fllm_cli.domain.kinds import KINDS, KindRow
from fllm_cli.domain.model import Domain
from fllm_cli.errors import UsageError
from fllm_cli.kinds.base import Compiled, Kind, PlanJob, PlanResult

__all__ = [
    "KINDS",
    "Compiled",
    "Kind",
    "KindRow",
    "PlanJob",
    "PlanResult",
    "check_domain",
    "kind_of",
]

# The table of kinds lives a layer down, where the loader reads it (fllm_cli.domain.kinds): a
# row names the kind's module and class, imported the first time a domain of that kind is used,
# so `fllm plan` on a tools domain does not pay for the data kind's solver at start-up.
_LOADED: dict[str, Kind] = {}  # by implementation


def kind_of(domain: Domain) -> Kind:
    """Return the implementation of the domain's kind."""
    row = KINDS.get(domain.kind)
    if row is None:
        raise UsageError(f"unknown domain kind '{domain.kind}'")
    loaded = _LOADED.get(row.implementation)
    if loaded is not None:
        return loaded
    module, _, name = row.implementation.partition(":")
    kind: Kind = getattr(importlib.import_module(module), name)()
    _LOADED[row.implementation] = kind
    return kind


def check_domain(domain: Domain) -> list[Diagnostic]:
    """Return every problem of a parsed domain: structure and the analyses of its kind."""
    return kind_of(domain).check(domain)

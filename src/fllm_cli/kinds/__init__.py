"""Domain kinds behind one interface: check, compile for a task, prompt, verify, document.

The registry maps the ``kind:`` of a domain file to its implementation. Everything above this
package asks ``kind_of(domain)`` and never compares kind names.
"""

from __future__ import annotations

import importlib

from fllm_cli.diagnostics import Diagnostic
from fllm_cli.domain.model import Domain
from fllm_cli.errors import UsageError
from fllm_cli.kinds.base import Compiled, Kind, PlanJob, PlanResult

__all__ = ["KINDS", "Compiled", "Kind", "PlanJob", "PlanResult", "check_domain", "kind_of"]

# kind name -> "module:class"; a kind's module is imported the first time a domain of that kind
# is read, so `fllm plan` on a tools domain does not pay for the data kind's solver at start-up.
KINDS: dict[str, str] = {
    "tools": "fllm_cli.kinds.tools:ToolKind",
    "grammar": "fllm_cli.kinds.grammar:GrammarKind",
    "automaton": "fllm_cli.kinds.automaton:AutomatonKind",
    "data": "fllm_cli.kinds.data:DataKind",
}
_LOADED: dict[str, Kind] = {}


def kind_of(domain: Domain) -> Kind:
    """Return the implementation of the domain's kind."""
    loaded = _LOADED.get(domain.kind)
    if loaded is not None:
        return loaded
    target = KINDS.get(domain.kind)
    if target is None:
        raise UsageError(f"unknown domain kind '{domain.kind}'")
    module, _, name = target.partition(":")
    kind: Kind = getattr(importlib.import_module(module), name)()
    _LOADED[domain.kind] = kind
    return kind


def check_domain(domain: Domain) -> list[Diagnostic]:
    """Return every problem of a parsed domain: structure and the analyses of its kind."""
    return kind_of(domain).check(domain)

"""Domain kinds behind one interface: check, compile for a task, prompt, verify, document.

The registry maps the ``kind:`` of a domain file to its implementation. Everything above this
package asks ``kind_of(domain)`` and never compares kind names.
"""

from __future__ import annotations

from fllm_cli.diagnostics import Diagnostic
from fllm_cli.domain.model import Domain
from fllm_cli.errors import UsageError
from fllm_cli.kinds.automaton import AutomatonKind
from fllm_cli.kinds.base import Compiled, Kind, PlanJob, PlanResult
from fllm_cli.kinds.data import DataKind
from fllm_cli.kinds.grammar import GrammarKind
from fllm_cli.kinds.tools import ToolKind

__all__ = ["KINDS", "Compiled", "Kind", "PlanJob", "PlanResult", "check_domain", "kind_of"]

KINDS: dict[str, Kind] = {
    kind.name: kind for kind in (ToolKind(), GrammarKind(), AutomatonKind(), DataKind())
}


def kind_of(domain: Domain) -> Kind:
    """Return the implementation of the domain's kind."""
    try:
        return KINDS[domain.kind]
    except KeyError:
        raise UsageError(f"unknown domain kind '{domain.kind}'") from None


def check_domain(domain: Domain) -> list[Diagnostic]:
    """Return every problem of a parsed domain: structure and the analyses of its kind."""
    return kind_of(domain).check(domain)

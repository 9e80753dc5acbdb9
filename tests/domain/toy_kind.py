"""A toy domain kind, whole in this one module: a plan is any one of the domain's ``toys``.

``tests/domain/test_new_kind.py`` adds its row to the table of kinds and loads, checks and
validates domains of this kind, with no other change to fllm: the proof that a new kind is one
module and one row.
"""

from __future__ import annotations

from typing import Any

from fllm_cli.diagnostics import Diagnostic
from fllm_cli.domain.kinds import KindRow
from fllm_cli.domain.model import Domain
from fllm_cli.domain.yamlloc import Reader
from fllm_cli.errors import UsageError
from fllm_cli.kinds.base import Compiled, Kind

ROW = KindRow("tests.domain.toy_kind:ToyKind", sections=("toys",), required=("toys",))


def toys(domain: Domain) -> tuple[list[str], list[Diagnostic]]:
    """Read the kind's own section, which the loader kept as a located node."""
    reader = Reader(domain.path)
    names = []
    for item in reader.sequence(domain.sections.get("toys"), "toys"):
        name = reader.string(item, "a toy", required=True)
        if name is not None:
            names.append(name)
    if not names and not reader.diagnostics:
        reader.error("a toy domain needs at least one toy", None)
    return names, reader.diagnostics


class ToyKind(Kind):
    """``kind: toy``."""

    name = "toy"

    def check(self, domain: Domain) -> list[Diagnostic]:
        return toys(domain)[1]

    def summary(self, domain: Domain) -> str:
        return f"toy domain '{domain.name}': {len(toys(domain)[0])} toys"

    def compile_text(self, domain: Domain, task: str, variables: dict[str, str]) -> Compiled:
        raise UsageError("a toy domain does not plan")

    def overview(self, domain: Domain, variables: dict[str, str]) -> Any:
        raise UsageError("a toy domain has no automaton")

"""The table of domain kinds: what reading a domain file needs to know of each ``kind:``.

A row names the module that implements the kind (:mod:`fllm_cli.kinds` imports it the first
time a domain of that kind is used), the top-level sections that only this kind may declare,
and the structural rules the loader applies to a file of the kind. The loader keeps the located
YAML nodes of the kind's own sections in ``Domain.sections``: the kind's module reads them
itself (as the data kind does, :mod:`fllm_cli.databound.spec`), so the loader never needs to
know their shape. The sections every kind may use (tools, grammar, automaton, …) are read into
typed fields here, because the lower layers (grammar, automaton, search) consume them.

:func:`fllm_cli.domain.load.read_domain` asks this table and never compares kind names. A new
kind is one module in ``fllm_cli/kinds/`` and one row in :data:`KINDS`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from fllm_cli.diagnostics import article
from fllm_cli.domain.model import AutomatonSpec, GrammarSpec, Tool
from fllm_cli.domain.yamlloc import Node, Reader


@dataclass(frozen=True)
class Read:
    """What the loader read of a file before it asks the file's kind: the top-level mapping and
    the typed sections every kind may use."""

    top: Node
    tools: tuple[Tool, ...]
    grammar: GrammarSpec | None
    automaton: AutomatonSpec | None

    def node(self, section: str) -> Node | None:
        """Return the located node of a top-level section, or None when the file has none."""
        return Reader.get(self.top, section)


# A structural rule of a kind: it reports on the reader what a file of the kind lacks or has
# too much of.
Rule = Callable[[Reader, Read], None]


@dataclass(frozen=True)
class KindRow:
    """How domain files of one kind are read and checked before the kind compiles them."""

    implementation: str  # "module:Class" of the kind's fllm_cli.kinds.base.Kind
    # Top-level sections only this kind may declare; their nodes go to Domain.sections.
    sections: tuple[str, ...] = ()
    # How another kind's file declaring one of them is told off ({kind}: that file's kind,
    # {a_kind}: with its article, {owner}/{an_owner}: this kind, {section}).
    foreign: str = "'{section}' belongs to {an_owner} domain (kind: {owner})"
    required: tuple[str, ...] = ()  # own sections a file of this kind must declare
    rules: tuple[Rule, ...] = ()  # further structural rules of a file of this kind
    # A file without ``kind:`` is of the first kind whose ``implied_by`` holds (else DEFAULT).
    implied_by: Callable[[Read], bool] | None = None
    # Prompt key -> shipped template, where the kind's differs from the default one.
    templates: Mapping[str, str] = field(default_factory=dict)


def _no_grammar(reader: Reader, read: Read) -> None:
    grammar = read.node("grammar")
    if read.grammar is not None and grammar is not None:
        reader.error("a tool domain cannot also declare 'grammar'", grammar.loc)


def _needs_tools(reader: Reader, read: Read) -> None:
    if not read.tools and read.node("tools") is None:
        reader.error("a tool domain needs a 'tools' list", read.top.loc)


def _needs_grammar(reader: Reader, read: Read) -> None:
    if read.grammar is None:  # absent, or not a mapping (also said where it is)
        reader.error("a grammar domain needs a 'grammar' section", read.top.loc)


# The data kind's sections (fllm_cli.databound.spec reads them).
DATA_SECTIONS = ("request", "tables", "trip", "slots", "constraints")

KINDS: dict[str, KindRow] = {
    "tools": KindRow("fllm_cli.kinds.tools:ToolKind", rules=(_no_grammar, _needs_tools)),
    "grammar": KindRow(
        "fllm_cli.kinds.grammar:GrammarKind",
        rules=(_needs_grammar,),
        implied_by=lambda read: read.grammar is not None,
    ),
    "automaton": KindRow(
        "fllm_cli.kinds.automaton:AutomatonKind",
        sections=("automaton",),
        foreign="{a_kind} domain cannot also declare '{section}'",
        required=("automaton",),
        implied_by=lambda read: bool(read.automaton),
        templates={"choice": "plan/automaton.j2"},
    ),
    "data": KindRow("fllm_cli.kinds.data:DataKind", sections=DATA_SECTIONS),
}
DEFAULT_KIND = "tools"  # a file that names no kind and implies none


def kind_names() -> str:
    """Return the kinds as a message lists them: ``'tools', 'grammar' or 'data'``."""
    quoted = [f"'{name}'" for name in KINDS]
    return quoted[0] if len(quoted) == 1 else f"{', '.join(quoted[:-1])} or {quoted[-1]}"


def implied_kind(read: Read) -> str:
    """Return the kind of a file that does not name one."""
    return next(
        (name for name, row in KINDS.items() if row.implied_by and row.implied_by(read)),
        DEFAULT_KIND,
    )


def check_kind(reader: Reader, kind: str, read: Read) -> dict[str, Node]:
    """Apply the rules of ``kind`` to a file; return the nodes of the kind's own sections.

    A missing required section is an error, as is another kind's section; then the kind's
    own rules.
    """
    row = KINDS[kind]
    for section in row.required:
        if read.node(section) is None:
            message = f"{article(kind)} {kind} domain needs {article(section)} '{section}' section"
            reader.error(message, read.top.loc)
    for owner, other in KINDS.items():
        if owner == kind:
            continue
        for section in other.sections:
            node = read.node(section)
            if node is not None:
                message = other.foreign.format(
                    kind=kind, a_kind=f"{article(kind)} {kind}", section=section,
                    owner=owner, an_owner=f"{article(owner)} {owner}",
                )  # fmt: skip
                reader.error(message, node.loc)
    for rule in row.rules:
        rule(reader, read)
    return {key: node for key in row.sections if (node := read.node(key)) is not None}

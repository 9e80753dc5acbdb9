"""Rich views of core results: the only place, with the commands, that draws on a terminal.

The core describes things as plain data (rows, documents); these functions turn them into rich
renderables. Text that came from a model, a task or a data file is always wrapped in
``rich.text.Text`` here, never interpreted as markup.
"""

from __future__ import annotations

from typing import Any

from rich.table import Table
from rich.text import Text
from rich.tree import Tree

from fllm_cli import api
from fllm_cli.cli.safe import plain


def _table(
    title: str | None, headers: tuple[str, ...], rows: list[tuple[str, ...]], right: set[int]
) -> Table:
    table = Table(title=title or None, title_justify="left")
    for index, header in enumerate(headers):
        table.add_column(header, justify="right" if index in right else "left")
    for row in rows:
        table.add_row(*(Text(cell) for cell in row))
    return table


def pda_table(pda: api.PDA, title: str = "") -> Table:
    """Return the transitions of a pushdown automaton, with its facts as caption."""
    headers, rows, facts = api.pda_table(pda)
    table = _table(title, headers, rows, {0})
    table.columns[0].style = "dim"
    table.caption = facts
    return table


def derivation_tree(derivation: api.Derivation) -> Tree:
    """Return a derivation as a tree; every label is plain text, never markup."""
    g = derivation.grammar

    def label(node: api.TreeNode) -> Text:
        head = derivation.head(node)
        if head is not None and g.terminal[head].role == "input":
            return plain(head, style="cyan")
        if head is not None:
            return Text.assemble(plain(head, "bold"), " ", plain(f"→ {g.phrase(node.lhs)}", "dim"))
        return plain(node.lhs)

    def add(parent: Tree, node: api.TreeNode) -> None:
        branch = parent.add(label(node))
        for child in node.children:
            if isinstance(child, api.TreeNode):
                add(branch, child)
            elif derivation.head(node) != child:
                branch.add(plain(child, style="green"))

    if derivation.root is None:
        return Tree("(empty)")
    if derivation.depth() > api.MAX_TREE_DEPTH:
        return Tree(plain(f"(a derivation {derivation.depth()} levels deep: not drawn)"))
    root = Tree(label(derivation.root))
    for child in derivation.root.children:
        if isinstance(child, api.TreeNode):
            add(root, child)
        elif derivation.head(derivation.root) != child:
            root.add(plain(child, style="green"))
    return root


def agent_table(title: str, headers: tuple[str, ...], rows: list[tuple[str, ...]]) -> Table:
    """Return an agent automaton: one row per node with the states allowed next."""
    return _table(title, headers, rows, {0, 3})


def bench_table(report: dict[str, Any]) -> Table:
    """Return the per-strategy summary; figures are never cut (a narrow terminal wraps)."""
    from fllm_cli.bench import report as rep  # only the bench views need it

    title, cols, rows = rep.summary_rows(report)
    table = Table(title=title)
    for index, (key, label) in enumerate(cols):
        widest = max([len(label), *(len(r[index]) for r in rows)])
        table.add_column(
            label, justify="left" if key == "strategy" else "right", no_wrap=True, min_width=widest
        )
    for cells in rows:
        table.add_row(*(Text(c) for c in cells))
    return table


def bench_blocks(report: dict[str, Any]) -> Text:
    """Return the summary as one 'label: value' block per strategy, for narrow terminals."""
    from fllm_cli.bench import report as rep  # only the bench views need it

    title, cols, rows = rep.summary_rows(report)
    text = Text(f"{title}\n", style="bold")
    for cells in rows:
        text.append(f"{cells[0]}\n", style="bold")
        for (key, label), cell in zip(cols, cells):
            if key != "strategy":
                text.append(f"  {label}: {cell}\n")
    return text


def table_width(table: Table) -> int:
    """Return the columns a table needs when no cell is cut."""
    return sum((column.min_width or 0) + 3 for column in table.columns) + 1


# -- agent transcripts: forced, model and environment text told apart (the paper's Fig. 4a)

AGENT_STYLES = {"forced": "bold green", "model": "yellow", "env": "cyan", "choice": "magenta"}


def legend() -> Text:
    """Return the colour key of the transcript."""
    text = Text("key: ")
    for label, style in (
        ("forced by fllm", "forced"),
        ("model", "model"),
        ("constrained choice", "choice"),
        ("environment", "env"),
    ):
        text.append(label, style=AGENT_STYLES[style])
        text.append("  ")
    return text


def step_text(step: api.AgentStep) -> Text:
    """Return one step as styled text: the tag (green when forced) and its content."""
    line = Text()
    line.append(
        step.tag, style=AGENT_STYLES["forced"] if step.tag_forced else AGENT_STYLES["model"]
    )
    if step.text:
        if not step.tag.endswith(" "):
            line.append(" ")
        line.append(step.text, style=AGENT_STYLES.get(step.source, ""))
    for note in step.notes:
        line.append(f"  [{note}]", style="dim")
    return line

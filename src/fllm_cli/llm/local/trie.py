"""The token trie: the options of a choice point share the cells of their common starts."""

from __future__ import annotations

from fllm_cli.errors import ContextOverflow
from fllm_cli.llm.local.settings import CTX_HINT


def token_trie(seqs: list[list[int]]) -> tuple[list[tuple[int, int, list[int]]], list[list[int]]]:
    """Return the trie of every proper prefix of ``seqs``, and each sequence's path through it.

    A node is (token, depth, owners): the last token of a prefix, its offset after the prompt
    and the sequences that start with that prefix and go on past it. A sequence's path lists
    its nodes by depth: the rows whose next-token log-probs score its second token onwards.
    A node always comes after its parent, so each sequence's positions rise in batch order.
    """
    index: dict[tuple[int, ...], int] = {}
    nodes: list[tuple[int, int, list[int]]] = []
    paths: list[list[int]] = []
    for number, seq in enumerate(seqs):
        path = []
        for depth in range(len(seq) - 1):
            key = tuple(seq[: depth + 1])
            if key not in index:
                index[key] = len(nodes)
                nodes.append((seq[depth], depth, []))
            nodes[index[key]][2].append(number)
            path.append(index[key])
        paths.append(path)
    return nodes, paths


def token_groups(seqs: list[list[int]], width: int, room: int) -> list[list[int]]:
    """Split the indices of ``seqs`` into runs of at most ``width`` whose tries fit ``room``."""
    groups: list[list[int]] = []
    prefixes: set[tuple[int, ...]] = set()
    for number, seq in enumerate(seqs):
        own = {tuple(seq[: depth + 1]) for depth in range(len(seq) - 1)}
        if len(own) > room:
            raise ContextOverflow(
                f"an option of {len(seq)} tokens does not fit the {room} left in the context",
                hint=CTX_HINT,
            )
        if not groups or len(groups[-1]) >= width or len(prefixes | own) > room:
            groups.append([])
            prefixes = set()
        groups[-1].append(number)
        prefixes |= own
    return groups

"""An independent evaluator of the LTL fragment over finite traces, written from the semantics.

It does not use the automaton: ``holds(f, w, i, j)`` says whether the stretch ``w[i:j]`` of the
trace satisfies ``f``, exactly as docs/agents.md defines it.
"""

from __future__ import annotations

from functools import cache

from fllm_cli.ltl.formula import Always, Formula, Implies, Next, Prop, Until


def accepts(formula: Formula, word: tuple[str, ...], start: str | None, final: str | None) -> bool:
    """A run is accepted: it satisfies the formula as a whole, starts in start, ends in final."""
    if start is not None and (not word or word[0] != start):
        return False
    if final is not None and (not word or word[-1] != final):
        return False
    return holds(formula, word, 0, len(word))


def holds(f: Formula, w: tuple[str, ...], i: int, j: int) -> bool:
    """Return True when the stretch w[i:j] satisfies f."""
    return _holds(f, w, i, j)


@cache
def _holds(f: Formula, w: tuple[str, ...], i: int, j: int) -> bool:
    if isinstance(f, Prop):
        return j == i + 1 and w[i] == f.name
    if isinstance(f, Next):
        return _chain(f.parts, w, i, j)
    if isinstance(f, Until):
        # zero or more left-stretches from i to some k, then one right-stretch from k to j
        return any(
            _repeat(f.left, w, i, k, 0) and _holds(f.right, w, k, j) for k in range(i, j + 1)
        )
    if isinstance(f, Always):
        return _repeat(f.body, w, i, j, 1)
    assert isinstance(f, Implies)
    return (not _holds(f.left, w, i, j)) or _holds(f.right, w, i, j)


def _chain(parts: tuple[Formula, ...], w: tuple[str, ...], i: int, j: int) -> bool:
    if len(parts) == 1:
        return _holds(parts[0], w, i, j)
    return any(_holds(parts[0], w, i, k) and _chain(parts[1:], w, k, j) for k in range(i, j + 1))


@cache
def _repeat(f: Formula, w: tuple[str, ...], i: int, j: int, at_least: int) -> bool:
    """w[i:j] splits into at least ``at_least`` consecutive f-stretches (empty ones allowed)."""
    if i == j and at_least == 0:
        return True
    if at_least > 0 and _holds(f, w, i, j):
        return True  # a single stretch; with empty ones allowed, one is enough for >= 1
    # first stretch non-empty (an empty first stretch changes nothing)
    return any(_holds(f, w, i, k) and _repeat(f, w, k, j, 0) for k in range(i + 1, j + 1))

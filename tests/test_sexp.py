"""The one s-expression reader: locations, forgiveness, and no recursion on deep input."""

from __future__ import annotations

import pytest

from fllm_cli.errors import FllmError
from fllm_cli.sexp import MAX_DEPTH, Atom, SList, read, show, to_lists
from fllm_cli.solve.pddl import sexpr


def test_locations_and_round_trip() -> None:
    forms, diags = read('(always (implies "Thought:" (next b)))\n; c\n(x)', "f.sexp")
    assert not diags
    assert show(forms[0]) == '(always (implies "Thought:" (next b)))'
    inner = forms[0].items[1]
    assert isinstance(inner, SList) and (inner.loc.line, inner.loc.col) == (1, 9)
    assert isinstance(forms[1], SList) and forms[1].loc.line == 3


def test_depth_at_the_limit_reads_and_beyond_is_a_located_error() -> None:
    ok = "(" * MAX_DEPTH + "a" + ")" * MAX_DEPTH
    forms, diags = read(ok, "ok.sexp")
    assert not diags and isinstance(forms[0], SList)
    deep = "(" * 100_000 + ")" * 100_000  # far past Python's recursion limit
    forms, diags = read(deep, "deep.sexp")
    assert [d.severity for d in diags] == ["error"]
    assert f"deeper than {MAX_DEPTH}" in diags[0].message
    assert diags[0].location is not None and diags[0].location.col == MAX_DEPTH + 1


def test_unclosed_and_stray_parentheses() -> None:
    _, diags = read("(a (b c)", "u.sexp")
    assert [d.message for d in diags] == ["'(' is never closed (missing ')')"]
    forms, diags = read("(a))", "s.sexp")
    assert [d.severity for d in diags] == ["warning"] and show(forms[0]) == "(a)"


def test_pddl_uses_the_same_reader_lower_cased() -> None:
    assert sexpr("(define (Domain BW) ; comment\n (:requirements :strips))") == [
        "define",
        ["domain", "bw"],
        [":requirements", ":strips"],
    ]
    with pytest.raises(FllmError, match="unbalanced"):
        sexpr("(a))")
    with pytest.raises(FllmError, match="deeper than"):
        sexpr("(" * 5000 + ")" * 5000)
    assert to_lists(Atom("X", read("x", "p")[0][0].loc)) == "X"

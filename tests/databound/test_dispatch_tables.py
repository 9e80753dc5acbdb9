"""Every constraint rule and request type the spec reader accepts has its entry in the table
that carries it out, and nothing else has one: a rule added on one side only fails here."""

from __future__ import annotations

from fllm_cli.databound import csp, request
from fllm_cli.databound.spec import REQUEST_TYPES, RULES


def test_every_rule_has_its_formulas() -> None:
    assert list(csp._RULES) == list(RULES)


def test_every_request_type_has_its_reader() -> None:
    assert sorted(request._READERS) == sorted(REQUEST_TYPES)

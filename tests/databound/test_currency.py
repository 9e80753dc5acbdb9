"""Money in other currencies: a data domain's money field declares how amounts are written.

The conference example is rewritten in euros with a decimal comma; the request is read in
euros, the budget rule, the refusal, the budget left in the prompt and verify's message all
speak euros, and dollar amounts in the text are not taken for the euro budget.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from fllm_cli.databound.request import find_money
from fllm_cli.databound.spec import DOLLARS, Currency
from tests.conftest import run_fllm

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "domains" / "examples"
DATA = EXAMPLES / "conference_trip.data.json"
EURO = Currency("€", ("EUR", "euros", "euro"), ",")


def _euro_domain(tmp_path: Path, currency: str) -> Path:
    text = (EXAMPLES / "conference_trip.yaml").read_text()
    old = "    type: money\n"
    assert text.count(old) == 1
    text = text.replace(old, old + currency).replace("${", "€{")
    path = tmp_path / "euro_trip.yaml"
    path.write_text(text)
    return path


EURO_FIELD = "    currency: {symbol: €, words: [EUR, euros, euro], decimal: ','}\n"


@pytest.mark.parametrize(
    ("text", "amounts"),
    [
        ("$1,700 or 1700$ or USD 500", [1700, 1700, 500]),
        ("3.6k dollars, US$200 and 1,250.50 bucks", [3600, 200, 1250.5]),
        ("in 2022, $1300 max", [1300]),  # a year before a symbol is not an amount
        ("no money here: 1,700 people", []),
    ],
)
def test_dollars_are_read_in_every_usual_form(text: str, amounts: list[float]) -> None:
    assert [a for a, _, _ in find_money(text, DOLLARS)] == amounts


@pytest.mark.parametrize(
    ("text", "amounts"),
    [
        ("ein Budget von 1.700 €", [1700]),
        ("EUR 2.500,50 oder 3,5k euros", [2500.5, 3500]),
        ("1 200 € und €900", [1200, 900]),
        ("$700 is not euros", []),  # another currency is not this one
    ],
)
def test_euros_with_a_decimal_comma(text: str, amounts: list[float]) -> None:
    assert [a for a, _, _ in find_money(text, EURO)] == amounts


def test_amounts_are_written_the_currency_s_way() -> None:
    assert DOLLARS.show(1700) == "$1,700"
    assert EURO.show(2500.5) == "€2.500,50"
    assert Currency("CHF", ()).show(1700) == "CHF 1,700"


@pytest.mark.slow
def test_a_euro_domain_plans_refuses_and_verifies_in_euros(tmp_path: Path) -> None:
    domain = str(_euro_domain(tmp_path, EURO_FIELD))
    assert run_fllm("validate", domain).code == 0
    text = "Vegetarian from Milwaukee: my 3-day conference trip to Chicago, budget 700 €."
    out, trace = tmp_path / "plan.json", tmp_path / "trace.jsonl"
    result = run_fllm(
        "plan", domain, text, "--data", str(DATA), "--model", "random:2",
        "-f", "json", "-o", str(out), "--trace", str(trace), "-q",
    )  # fmt: skip
    assert result.code == 0, result.err
    doc = json.loads(out.read_text())
    assert json.dumps(doc).count("700") >= 1
    prompts = [json.loads(line).get("prompt", "") for line in trace.read_text().splitlines()]
    assert any(re.search(r"\(€[0-9.,]+ left\)", p) for p in prompts), prompts[:1]
    assert not any("$" in p for p in prompts)

    # The same trip at a budget no plan meets: refused in euros, before any model call.
    low = run_fllm("plan", domain, text.replace("700 €", "2,00 €"), "--data", str(DATA))
    assert low.code == 1
    assert low.err.startswith("error: budget €2 < cheapest complete plan €384"), low.err
    assert "raise the budget to €384" in low.err

    # The rich view and verify show euros too.
    shown = run_fllm("plan", domain, text, "--data", str(DATA), "--model", "random:2")
    assert shown.code == 0, shown.err
    trip = shown.out.split(" LLM calls")[0]  # the stats line prices API calls in dollars
    assert "of a €700 budget" in trip and "€" in trip.split("Day 1", 1)[1] and "$" not in trip
    given = tmp_path / "request.json"
    given.write_text(json.dumps(doc["request"]))
    checked = run_fllm("verify", domain, str(out), "--data", str(DATA))
    assert checked.code == 0, checked.err
    assert f"total cost €{doc['total_cost']:,.0f}".replace(",", ".") in checked.out

    # A dollar amount is no euro budget: the reader reads none, and the plan has no bound.
    dollars = tmp_path / "dollars.json"
    run = run_fllm(
        "plan", domain, text.replace("700 €", "$700"), "--data", str(DATA),
        "--model", "random:2", "-f", "json", "-o", str(dollars), "-q",
    )  # fmt: skip
    assert run.code == 0, run.err
    assert json.loads(dollars.read_text())["request"]["budget"] is None


@pytest.mark.parametrize(
    ("field", "message"),
    [
        ("    currency: {symbol: €, decimal: ';'}\n", "decimal must be '.' or ','"),
        ("    currency: {symbol: E2, words: [euros]}\n", "hold no digits"),
        ("    currency: {symbol: €, rate: 2}\n", "rate"),
    ],
)
def test_a_bad_currency_is_located(tmp_path: Path, field: str, message: str) -> None:
    domain = _euro_domain(tmp_path, field)
    result = run_fllm("validate", str(domain))
    assert result.code == 1
    line = domain.read_text().splitlines().index(field.rstrip("\n")) + 1
    assert f"euro_trip.yaml:{line}:" in result.out and message in result.out


def test_only_money_has_a_currency(tmp_path: Path) -> None:
    path = tmp_path / "bad.yaml"
    text = (EXAMPLES / "conference_trip.yaml").read_text()
    path.write_text(text.replace("    type: integer\n", "    type: integer\n    currency: €\n", 1))
    result = run_fllm("validate", str(path))
    assert result.code == 1
    assert "only a field of type money has a currency" in result.out


@pytest.mark.parametrize(
    ("budget", "message"),
    [("1e400", "budget: inf is not a usable amount"), ("-5", "budget: must not be negative")],
)
def test_a_given_budget_must_be_a_usable_amount(tmp_path: Path, budget: str, message: str) -> None:
    given = tmp_path / "request.json"
    given.write_text(f'{{"home": "Milwaukee", "days": 3, "budget": {budget}}}')
    result = run_fllm(
        "plan", str(EXAMPLES / "conference_trip.yaml"), "my trip", "--data", str(DATA),
        "--constraints", str(given), "--model", "random:1",
    )  # fmt: skip
    assert result.code == 2
    assert result.err.strip() == f"error: --constraints: {message}"

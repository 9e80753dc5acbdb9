"""TravelPlanner requests reworded by us are read as the benchmark's structured fields say.

``tests/data/travelplanner/reworded.jsonl`` holds, for every one of the 45 queries, a rewording
in another style (facts in another order, "1700 dollars", "$3.6k", "3/12/2022", "12/03/2022",
"a couple", "me and 3 friends", "no flights please", "whole apartments" ...) and 15 harder,
casual ones. Each keeps the meaning of the original query ``idx``, so the expected values are
that query's structured fields. Nothing in the reader or the domain file was written for these
texts: they test the generic extraction and the domain's vocabulary.

The reader may ask the model only when a text is really ambiguous; the chooser here answers
right only when the right value is among the options offered, and every rewording here is
meant to be unambiguous, so the reader must decide alone unless the entry lists the field in
``may_ask``.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from fllm_cli.databound.request import RequestReader, values_of
from fllm_cli.databound.spec import read_spec
from fllm_cli.databound.tables import load_tables
from fllm_cli.domain.load import load_domain
from tests.databound.test_travelplanner import DATA, DOMAIN, QUERIES, REFS, structured

REWORDED = [
    json.loads(line)
    for line in (DATA / "reworded.jsonl").read_text(encoding="utf-8").splitlines()
    if line.strip()
]
FIELDS = ("org", "dest", "days", "dates", "people_number", "budget", "house_rule", "room_type")


class Chooser:
    """Answers the reader's questions with the right value, if it is offered; records them."""

    def __init__(self, want: dict[str, Any]) -> None:
        self.want = want
        self.asked: list[tuple[str, list[str]]] = []

    def __call__(self, field: Any, options: list[str]) -> int:
        self.asked.append((field.name, options))
        right = str(self.want[field.name])
        assert right in options, f"{field.name}: the right value {right!r} is not offered"
        return options.index(right)


def read(entry: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any], Chooser]:
    spec, _ = read_spec(load_domain(DOMAIN))
    assert spec is not None
    tables = load_tables(spec, REFS[entry["idx"]], "ref")
    want = structured(QUERIES[entry["idx"]])
    chooser = Chooser(want)
    got = values_of(RequestReader(spec, tables, chooser).read(entry["query"]))
    return got, want, chooser


def test_every_query_is_reworded() -> None:
    assert {e["idx"] for e in REWORDED} == set(range(len(QUERIES)))
    assert len(REWORDED) == 60
    assert len({e["query"] for e in REWORDED}) == 60
    assert not {e["query"] for e in REWORDED} & {q["query"] for q in QUERIES}


@pytest.mark.parametrize(
    "entry", REWORDED, ids=[f"{n}-q{e['idx']}" for n, e in enumerate(REWORDED)]
)
def test_a_reworded_request_is_read_as_the_structured_fields(entry: dict[str, Any]) -> None:
    got, want, chooser = read(entry)
    wrong = {k: (got[k], want[k]) for k in FIELDS if got[k] != want[k]}
    if sorted(got["cuisine"] or []) != sorted(want["cuisine"] or []):
        wrong["cuisine"] = (got["cuisine"], want["cuisine"])
    if got["transportation"] != want["transportation"]:
        wrong["transportation"] = (got["transportation"], want["transportation"])
    assert not wrong, f"{entry['query']!r}: read (got, want) {wrong}"
    may_ask = set(entry.get("may_ask", []))
    unexpected = [(name, options) for name, options in chooser.asked if name not in may_ask]
    assert not unexpected, f"the reader asked the model on an unambiguous text: {unexpected}"


BASE = "From St. Petersburg to Rockford, March 16-18, 2022, budget $1,700."


@pytest.mark.parametrize(
    ("text", "want"),
    [
        (
            "Saint Petersburg to Rockford, 16/03/2022 to 18/03/2022, 1700$.",
            {"org": "St. Petersburg", "budget": 1700, "days": 3},
        ),
        (
            "St Petersburg to Rockford, 03/16/22-03/18/22, a budget of 1700.",
            {"budget": 1700, "days": 3},
        ),
        (
            "St. Petersburg to Rockford for 3 days from March 16, 2022. Budget: 1.7k.",
            {"dates": ["2022-03-16", "2022-03-17", "2022-03-18"], "budget": 1700},
        ),
        (
            BASE + " It's just me, and I want a private room.",
            {"people_number": 1, "room_type": "private room"},
        ),
        (BASE + " Me + 1 friend.", {"people_number": 2}),
        (BASE + " My husband, our two kids and I.", {"people_number": 4}),
        (BASE + " Two adults, two kids.", {"people_number": 4}),
        (BASE + " Just me, solo.", {"people_number": 1}),
        (BASE + " A couple and their 2 kids.", {"people_number": 4}),
        (BASE + " No smoking, and pets are welcome.", {"house_rule": "pets"}),
        (BASE + " A non-smoking place, please.", {"house_rule": None}),
        (BASE + " A private room, not a shared one.", {"room_type": "private room"}),
        (BASE + " We'd rather fly than drive.", {"transportation": "no self-driving"}),
        (BASE + " We'll take taxis instead of driving.", {"transportation": "no self-driving"}),
        (BASE + " We'd rather drive ourselves.", {"transportation": "no flight"}),
        (BASE + " Flying is not an option.", {"transportation": "no flight"}),
        (BASE + " Italian or Chinese, but no Mexican.", {"cuisine": ["Italian", "Chinese"]}),
    ],
)
def test_generic_rules_read_short_requests(text: str, want: dict[str, Any]) -> None:
    """One rule of the reader at a time (spellings, dates, sums of people, negation scope)."""
    spec, _ = read_spec(load_domain(DOMAIN))
    assert spec is not None
    asked: list[str] = []

    def ask(field: Any, options: list[str]) -> int:
        asked.append(field.name)
        return 0

    got = values_of(RequestReader(spec, load_tables(spec, REFS[0], "ref"), ask).read(text))
    assert not asked
    for key, value in want.items():
        assert got[key] == value, key

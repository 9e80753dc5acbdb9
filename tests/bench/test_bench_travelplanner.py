"""fllm bench on a data-bound domain: TravelPlanner's queries, reference information and metrics.

The metrics come from fllm's own TravelPlanner evaluator (``fllm_cli.travel``); these tests run
the real command line and check what the bench reports with it: the gold plans, formal plans with
the random chooser, the zero-shot baseline with scripted replies, resuming, and bad input.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from bench_helpers import write_jsonl
from tests.conftest import run_fllm

from fllm_cli.api import load_domain
from fllm_cli.bench import BenchOptions, run_bench
from fllm_cli.bench.databench import (
    PlanParseError,
    day_fields,
    parse_reply,
    plan_grammar,
    trip_lengths,
)
from fllm_cli.bench.metrics import scorer_for
from fllm_cli.bench.runner import ModelPool
from fllm_cli.content import make_language, parse_gbnf, recognise
from fllm_cli.kinds.data import data_spec
from fllm_cli.llm.simple import ScriptedModel

ROOT = Path(__file__).resolve().parents[2]
DOMAIN = str(ROOT / "domains" / "travelplanner.yaml")
TP = ROOT / "tests" / "data" / "travelplanner"
QUERIES = str(TP / "queries.jsonl")
REFS = str(TP / "reference_info.jsonl")
GOLD = str(TP / "gold_plans.jsonl")
FLAWED_GOLD = 41  # breaks "within current city" (docs/travelplanner.md)
RATES = (
    "delivery_rate",
    "commonsense_micro",
    "commonsense_macro",
    "hard_micro",
    "hard_macro",
    "final_pass_rate",
)


def _jsonl(path: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in Path(path).read_text().splitlines() if line.strip()]


def _bench(*args: str, timeout: float = 600) -> dict[str, Any]:
    """Run ``fllm bench`` on the TravelPlanner domain; return the JSON report it wrote."""
    out = Path(args[args.index("-o") + 1])
    result = run_fllm("bench", DOMAIN, *args, "-q", timeout=timeout)
    assert result.code == 0, result.err
    assert "Traceback" not in result.err
    return json.loads(out.read_text())  # type: ignore[no-any-return]


def _all_rates(group: dict[str, Any]) -> dict[str, float]:
    return {key: group[key] for key in RATES}


# ------------------------------------------------------------------------------ gold plans


# `fllm bench -s gold` without --model still makes the default (embedded) model, so it fails
# where that model is not installed, although gold plans ask no model: these need it.
@pytest.mark.local_model
def test_the_clean_gold_plans_score_100_percent_on_every_metric(tmp_path: Path) -> None:
    clean = [q for q in _jsonl(QUERIES) if q["idx"] != FLAWED_GOLD]
    tasks = write_jsonl(tmp_path / "clean.jsonl", clean)
    report = _bench(
        tasks, "--data", REFS, "--gold", GOLD, "-s", "gold", "-o", str(tmp_path / "r.json")
    )
    assert report["metrics"] == "travelplanner" and not report["skipped_lines"]
    gold = report["summary"]["gold"]
    assert gold["tasks"] == gold["scored"] == 44
    for group in (gold, *gold["by_level"].values(), *gold["by_days"].values()):
        assert _all_rates(group) == dict.fromkeys(RATES, 1.0)
    assert list(gold["by_level"]) == ["easy", "medium", "hard"]
    assert list(gold["by_days"]) == ["3", "5", "7"]
    assert sum(g["tasks"] for g in gold["by_days"].values()) == 44
    assert all(r["scores"]["failed"] == [] for r in report["results"])


@pytest.mark.local_model
def test_all_45_gold_plans_score_what_the_evaluator_says(tmp_path: Path) -> None:
    report = _bench(
        QUERIES, "--data", REFS, "--gold", GOLD, "-s", "gold", "-o", str(tmp_path / "r.json")
    )
    gold = report["summary"]["gold"]
    assert gold["tasks"] == 45 and gold["delivery_rate"] == 1.0
    # Plan 41 leaves its city on two days; 2 of 360 commonsense checks and, blocked by
    # "within sandbox", all 4 of its hard checks fail (tests/travel/test_evaluate.py).
    assert gold["commonsense_micro"] == round(358 / 360, 4)
    assert gold["hard_micro"] == round(101 / 105, 4)
    assert gold["final_pass_rate"] == gold["commonsense_macro"] == round(44 / 45, 4)
    (flawed,) = [r for r in report["results"] if not r["scores"]["final_pass"]]
    assert flawed["id"] == FLAWED_GOLD
    assert flawed["scores"]["failed"][:2] == ["within_sandbox", "within_current_city"]
    assert gold["by_days"]["7"]["final_pass_rate"] < 1.0 == gold["by_days"]["3"]["final_pass_rate"]


# ------------------------------------------------------------------------------ formal


def test_formal_delivers_every_plan_with_breakdowns(tmp_path: Path) -> None:
    out = tmp_path / "r.json"
    result = run_fllm(
        "bench", DOMAIN, QUERIES, "--data", REFS, "-s", "formal", "--model", "random:1",
        "--limit", "3", "-o", str(out), "--format", "markdown",
    )  # fmt: skip
    assert result.code == 0, result.err
    assert "| formal | 3 | 100.0 | 100.0 |" in result.out
    assert "travelplanner metrics by level:" in result.out
    assert "travelplanner metrics by days:" in result.out
    report = json.loads(out.read_text())
    formal = report["summary"]["formal"]
    assert formal["delivery_rate"] == 1.0 and formal["valid_rate"] == 1.0
    assert set(formal["by_level"]) == {"easy"} and set(formal["by_days"]) == {"3"}
    assert formal["by_level"]["easy"]["tasks"] == 3
    row = report["results"][0]
    assert row["id"] == 0 and row["level"] == "easy" and row["plan"]["kind"] == "data"
    assert len(row["plan"]["plan"]) == 3 and row["scores"]["delivered"]
    assert row["plan"]["read_by"]  # the request was read from the text


def test_formal_given_takes_the_request_from_the_line(tmp_path: Path) -> None:
    report = _bench(
        QUERIES, "--data", REFS, "-s", "formal-given", "--model", "random:2", "--limit", "1",
        "-o", str(tmp_path / "r.json"),
    )  # fmt: skip
    (row,) = report["results"]
    assert row["valid"] and row["scores"]["final_pass"]
    assert row["plan"]["request"]["budget"] == 1700
    assert row["stats"]["request_calls"] == 0


@pytest.mark.local_model
def test_the_rich_summary_and_the_html_page_show_the_metrics(tmp_path: Path) -> None:
    result = run_fllm(
        "bench", DOMAIN, QUERIES, "--data", REFS, "--gold", GOLD, "-s", "gold",
        "--limit", "2",
    )  # fmt: skip
    assert result.code == 0, result.err
    assert "final" in result.out and "metrics by days" in result.out
    page = tmp_path / "r.html"
    result = run_fllm(
        "bench", DOMAIN, QUERIES, "--data", REFS, "--gold", GOLD, "-s", "gold,zero-shot",
        "--model", "random:1", "--limit", "2", "--format", "html", "-o", str(page),
    )  # fmt: skip
    assert result.code == 0, result.err
    html = page.read_text()
    assert "Benchmark metrics: travelplanner" in html
    assert "<h3>By level</h3>" in html and "<h3>By days</h3>" in html
    assert "final %" in html and "<svg" in html


# ------------------------------------------------------------------------------ zero-shot


def test_zero_shot_replies_that_do_not_parse_are_plans_not_delivered(tmp_path: Path) -> None:
    gold = {g["idx"]: g["plan"] for g in _jsonl(GOLD)}
    replies = [
        "Here is your trip:\n```json\n" + json.dumps(gold[0]) + "\n```",  # right, in a fence
        json.dumps(gold[0]),  # a plan, but of another query: delivered, and wrong
        "Sorry, I cannot plan this trip.",
        '[{"days": 1, "current_city": "from Las',  # cut short
    ]
    answers = tmp_path / "answers.txt"
    answers.write_text("\n".join(r.replace("\n", " ") for r in replies) + "\n")
    report = _bench(
        QUERIES, "--data", REFS, "-s", "zero-shot", "--model", f"scripted:{answers}",
        "--limit", "4", "-o", str(tmp_path / "r.json"),
    )  # fmt: skip
    rows = report["results"]
    assert [r["scores"]["delivered"] for r in rows] == [True, True, False, False]
    assert rows[0]["valid"] and rows[0]["scores"]["final_pass"]
    assert not rows[1]["valid"] and rows[1]["error_kind"] == "verify"
    assert rows[1]["plan"]["plan"] == gold[0] and rows[1]["scores"]["failed"]
    assert [r["error_kind"] for r in rows[2:]] == ["parse", "parse"]
    assert "cut short" in rows[3]["error"] and rows[3]["plan"] is None
    summary = report["summary"]["zero-shot"]
    assert summary["delivery_rate"] == 0.5 and summary["final_pass_rate"] == 0.25
    assert summary["mean_llm_calls"] == 1.0


def test_zero_shot_with_a_model_that_writes_nothing_is_counted(tmp_path: Path) -> None:
    report = _bench(
        QUERIES, "--data", REFS, "-s", "formal,zero-shot", "--model", "random:1",
        "--limit", "2", "-o", str(tmp_path / "r.json"),
    )  # fmt: skip
    zero = report["summary"]["zero-shot"]
    assert zero["tasks"] == 2 and _all_rates(zero) == dict.fromkeys(RATES, 0.0)
    assert {r["error"] for r in report["results"] if r["strategy"] == "zero-shot"} == {
        "model produced no plan"
    }
    assert report["summary"]["formal"]["final_pass_rate"] == 1.0


def test_the_zero_shot_prompt_lists_the_records_and_keeps_task_text_as_data(
    tmp_path: Path,
) -> None:
    query = {**_jsonl(QUERIES)[0], "query": "Plan {{ 7 * 7 }} days {% if true %}now{% endif %}"}
    tasks = write_jsonl(tmp_path / "t.jsonl", [query])
    model = ScriptedModel(["[]"])
    opts = BenchOptions(DOMAIN, tasks, ["zero-shot"], data_file=REFS)
    (row,) = run_bench(opts, pool=ModelPool(lambda _i: model)).report["results"]
    (prompt,) = model.prompts
    assert "Plan {{ 7 * 7 }} days {% if true %}now{% endif %}" in prompt
    assert "Flight Number: F3573659, from St. Petersburg to Rockford" in prompt
    assert "Coco Bambu, Rockford (average_cost" in prompt
    assert row["error_kind"] == "parse" and "empty" in row["error"]


def test_the_plan_grammar_accepts_the_gold_plans() -> None:
    spec = data_spec(load_domain(DOMAIN))
    assert trip_lengths(spec) == (3, 7)  # the trip lengths the domain plans bound the list
    grammar = plan_grammar(day_fields(spec), *trip_lengths(spec))
    rules = parse_gbnf(grammar)
    golds = _jsonl(GOLD)
    for gold in (golds[0], golds[5], golds[10]):  # 3, 5 and 7 days
        assert recognise(rules, json.dumps(gold["plan"])) is None
    assert recognise(rules, '[{"days": 1}]') is not None
    eight = golds[10]["plan"] + golds[10]["plan"][:1]
    assert recognise(rules, json.dumps(eight)) is not None
    assert make_language("gbnf", grammar).check('[{"days": "one"}]') is not None


@pytest.mark.parametrize(
    ("reply", "days"),
    [
        ('[{"days": 1, "current_city": "A"}]', 1),
        ('Sure!\n{"plan": [{"days": 1}, {"days": 2}]}\nEnjoy.', 2),
        ('```json\n[{"days": 1}]\n```', 1),
        ('Days: [1, 2] and then [{"days": 1}]', 1),
    ],
)
def test_replies_are_read_as_plans(reply: str, days: int) -> None:
    assert len(parse_reply(reply)) == days


@pytest.mark.parametrize(
    ("reply", "why"),
    [
        ("", "no plan"),
        ("[]", "empty"),
        ("[1, 2]", "not a JSON object"),
        ("[" * 40 + "]" * 40, "deeper"),
        ("the plan is [ coming", "cut short"),
    ],
)
def test_replies_without_a_plan_say_why(reply: str, why: str) -> None:
    with pytest.raises(PlanParseError, match=why):
        parse_reply(reply)


# ------------------------------------------------------------------------------ runs


@pytest.mark.slow
def test_resume_runs_only_what_is_missing(tmp_path: Path) -> None:
    out = tmp_path / "r.json"
    common = ("--data", REFS, "-s", "formal,zero-shot", "--model", "random:1")
    first = _bench(QUERIES, *common, "--limit", "2", "-o", str(out))
    assert len(first["results"]) == 4
    result = run_fllm("bench", DOMAIN, QUERIES, *common, "--limit", "3", "--resume", str(out))
    assert result.code == 0, result.err
    report = json.loads(out.read_text())
    assert report["executor"]["resumed"] == 4 and len(report["results"]) == 6
    assert report["summary"]["formal"]["tasks"] == 3
    assert report["summary"]["formal"]["by_days"]["3"]["tasks"] == 3
    assert [r["id"] for r in report["results"]] == [0, 0, 1, 1, 2, 2]


def test_a_results_file_resumes_too(tmp_path: Path) -> None:
    results = tmp_path / "units.jsonl"
    common = ("--data", REFS, "--model", "random:1")
    _bench(QUERIES, *common, "--limit", "1", "--results", str(results), "-o", str(tmp_path / "a"))
    report = _bench(
        QUERIES, *common, "--limit", "2", "--resume", str(results), "-o", str(tmp_path / "b")
    )
    assert report["executor"]["resumed"] == 1 and report["summary"]["formal"]["scored"] == 2
    header = json.loads(results.read_text().splitlines()[0])
    assert header["data_file"] == REFS


def test_data_may_sit_on_the_task_line(tmp_path: Path) -> None:
    lines = [{**q, "data": r} for q, r in zip(_jsonl(QUERIES)[:2], _jsonl(REFS)[:2])]
    tasks = write_jsonl(tmp_path / "inline.jsonl", lines)
    report = _bench(tasks, "--model", "random:1", "-o", str(tmp_path / "r.json"))
    assert report["summary"]["formal"]["final_pass_rate"] == 1.0
    assert "data" not in report["results"][0]


def test_data_lines_are_matched_by_idx(tmp_path: Path) -> None:
    queries = _jsonl(QUERIES)[:3]
    refs = list(reversed(_jsonl(REFS)[:3]))
    tasks = write_jsonl(tmp_path / "q.jsonl", [queries[2], queries[0]])
    data = write_jsonl(tmp_path / "d.jsonl", refs)
    report = _bench(tasks, "--data", data, "--model", "random:1", "-o", str(tmp_path / "r.json"))
    assert [r["id"] for r in report["results"]] == [2, 0]
    assert report["summary"]["formal"]["final_pass_rate"] == 1.0


def test_a_task_without_data_is_a_skipped_line(tmp_path: Path) -> None:
    data = write_jsonl(tmp_path / "d.jsonl", _jsonl(REFS)[:1])
    tasks = write_jsonl(tmp_path / "q.jsonl", _jsonl(QUERIES)[:2])
    result = run_fllm(
        "bench", DOMAIN, tasks, "--data", data, "--model", "random:1", "-o",
        str(tmp_path / "r.json"),
    )  # fmt: skip
    assert result.code == 0, result.err
    assert "q.jsonl:2: no data for idx 1" in result.err
    report = json.loads((tmp_path / "r.json").read_text())
    assert len(report["results"]) == 1 and len(report["skipped_lines"]) == 1


# ------------------------------------------------------------------------------ bad input


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (None, "no such data file"),
        ('{"idx": 0, "cities": [\n', "d.jsonl:1:23: not valid JSON"),
        ("[1, 2]\n", "d.jsonl:1: expected a JSON object, got a list"),
        ('{"idx": 0}\n{"idx": 0}\n', "d.jsonl:2: idx 0 appears twice"),
    ],
)
def test_a_bad_data_file_is_one_line_and_exit_2(
    tmp_path: Path, content: str | None, message: str
) -> None:
    data = tmp_path / "d.jsonl"
    if content is not None:
        data.write_text(content)
    result = run_fllm("bench", DOMAIN, QUERIES, "--data", str(data), "--limit", "1")
    assert result.code == 2
    assert message in result.err and "Traceback" not in result.err
    assert len(result.err.strip().splitlines()) == 1


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ((DOMAIN, QUERIES), "is a data domain: give the tasks' data with --data"),
        ((DOMAIN, QUERIES, "--data", REFS, "-s", "few-shot"), "strategy 'few-shot' does not"),
        ((DOMAIN, QUERIES, "--data", REFS, "-s", "gold"), "give --gold FILE.jsonl"),
        (
            (str(ROOT / "domains" / "openagi.yaml"), QUERIES, "--data", REFS),
            "--data applies to data domains",
        ),
    ],
)
def test_options_that_do_not_fit_are_refused(args: tuple[str, ...], message: str) -> None:
    result = run_fllm("bench", *args, "--limit", "1")
    assert result.code == 2 and message in result.err
    assert len(result.err.strip().splitlines()) == 1


def test_the_metrics_follow_the_domain_not_its_name(tmp_path: Path) -> None:
    text = Path(DOMAIN).read_text().replace("name: travelplanner", "name: my-trips")
    renamed = tmp_path / "trips.yaml"
    renamed.write_text(text)
    scorer = scorer_for(load_domain(str(renamed)))
    assert scorer is not None and scorer.name == "travelplanner"
    assert scorer_for(load_domain(str(ROOT / "domains" / "openagi.yaml"))) is None

"""Daily plan: every plan meets every constraint, checked without the automaton."""

from __future__ import annotations

from itertools import pairwise
from pathlib import Path

import pytest

from fllm_cli import api
from fllm_cli.llm.simple import RandomModel
from tests.conftest import InProc

ROOT = Path(__file__).resolve().parents[2]
DOMAIN = str(ROOT / "domains" / "daily_plan.yaml")

DURATION = {
    "breakfast": 1,
    "lunch": 1,
    "supper": 1,
    "basketball": 2,
    "grocery shopping": 1,
    "house cleaning": 1,
    "homework": 3,
    "laundry": 0,
    "idle": 1,
}
ONCE = [a for a in DURATION if a != "idle"]
MEALS = ("breakfast", "lunch", "supper")

# The GPT-4 plan of appendix A.6, in the domain's word format (read from 20:00 backwards).
GPT4_WORD = """\
# GPT-4's daily plan (paper, appendix A.6): homework runs until 23:00
homework 20:00-23:00
supper 19:00-20:00
laundry 19:00
homework 18:00-19:00
grocery shopping 17:00-18:00
lunch 16:00-17:00
idle 15:00-16:00
basketball 13:00-15:00
idle 12:00-13:00
house cleaning 11:00-12:00
breakfast 10:00-11:00
"""


def hour(text: str) -> float:
    h, m = text.split(":")
    return int(h) + int(m) / 60


def schedule_problems(steps: list[tuple[str, str, str]]) -> list[str]:
    """Return every broken constraint of a schedule of (activity, start, end), in time order."""
    bad: list[str] = []
    spans = [(a, hour(s), hour(e)) for a, s, e in steps]
    for a, s, e in spans:
        if a not in DURATION:
            bad.append(f"unknown activity {a}")
            continue
        if s < 10 or e > 20:
            bad.append(f"{a} {s}-{e} is outside 10:00-20:00")
        if e - s != DURATION[a]:
            bad.append(f"{a} lasts {e - s} h, not {DURATION[a]} h")
    starts = [s for _, s, _ in spans]
    if starts != sorted(starts):
        bad.append("steps are not in time order")
    for a in ONCE:
        n = sum(1 for x, _, _ in spans if x == a)
        if n != 1:
            bad.append(f"{a} happens {n} times")
    timed = sorted((s, e, a) for a, s, e in spans if e > s)
    for (_s1, e1, a1), (s2, _e2, a2) in pairwise(timed):
        if s2 < e1:
            bad.append(f"{a1} overlaps {a2}")
    when = {a: (s, e) for a, s, e in spans}
    if all(m in when for m in MEALS) and not (
        when["breakfast"][0] < when["lunch"][0] < when["supper"][0]
    ):
        bad.append("meals are not in the order breakfast, lunch, supper")
    if "basketball" in when:
        if when["basketball"] != (13, 15):
            bad.append("basketball is not 13:00-15:00")
        for m in MEALS:
            if m in when and 0 <= when["basketball"][0] - when[m][1] < 1:
                bad.append(f"basketball within an hour after {m}")
    if "laundry" in when:
        t = when["laundry"][0]
        home = any(
            a in ("house cleaning", "homework") and s <= t and e >= t + 1 for a, s, e in spans
        )
        if not home:
            bad.append("nobody stays home (indoors) for the hour after the laundry starts")
    return bad


def word_steps(word: list[str]) -> list[tuple[str, str, str]]:
    """Read the domain's word format into (activity, start, end), in time order."""
    out = []
    for item in word:
        activity, _, times = item.rpartition(" ")
        start, _, end = times.partition("-")
        out.append((activity, start, end or start))
    return sorted(out, key=lambda x: (hour(x[1]), hour(x[2])))


@pytest.fixture(scope="module")
def problem() -> api.Problem:
    return api.compile_problem(DOMAIN, task="Plan my day.")


def test_checker_accepts_the_paper_formal_llm_plan() -> None:
    paper = [
        ("laundry", "10:00", "10:00"),
        ("house cleaning", "10:00", "11:00"),
        ("breakfast", "11:00", "12:00"),
        ("grocery shopping", "12:00", "13:00"),
        ("basketball", "13:00", "15:00"),
        ("lunch", "15:00", "16:00"),
        ("homework", "16:00", "19:00"),
        ("supper", "19:00", "20:00"),
    ]
    assert schedule_problems(paper) == []


@pytest.mark.parametrize("seed", range(200))
def test_every_random_plan_meets_every_constraint(problem: api.Problem, seed: int) -> None:
    result = api.plan(problem, RandomModel(seed))
    steps = result.document["steps"]
    assert all({"activity", "start", "end"} <= set(s) for s in steps)
    schedule = [(s["activity"], s["start"], s["end"]) for s in steps if s["activity"] != "idle"]
    assert schedule_problems(schedule) == []
    assert [hour(s["start"]) for s in steps] == sorted(hour(s["start"]) for s in steps)
    assert api.verify(problem, result.document["word"]).valid


def test_gpt4_plan_is_rejected_by_checker_and_verify(tmp_path: Path, fllm_inproc: InProc) -> None:
    word = [w for w in GPT4_WORD.splitlines() if w and not w.startswith("#")]
    problems = schedule_problems(word_steps(word))
    assert any("outside 10:00-20:00" in p for p in problems)
    plan = tmp_path / "gpt4.txt"
    plan.write_text(GPT4_WORD, encoding="utf-8")
    code, out, err = fllm_inproc("verify", DOMAIN, str(plan))
    assert code == 1
    assert "gpt4.txt:2:1" in out + err and "homework 20:00-23:00" in out + err


def test_render_pda_shows_the_expanded_families(fllm_inproc: InProc) -> None:
    code, out, err = fllm_inproc("render-pda", DOMAIN, "--format", "json")
    assert code == 0, out + err
    assert '"(basketball 13:00-15:00, ∀; ∀)"' in out
    assert "supper 12:00-13:00" not in out  # j skips 13: no meal right before basketball
    assert "homework 09:00-12:00" not in out  # k stops at 13


def test_cli_plan_and_verify_roundtrip(tmp_path: Path, fllm_inproc: InProc) -> None:
    out = tmp_path / "day.json"
    result = fllm_inproc("plan", DOMAIN, "Plan my day.", "-m", "random:3", "-o", str(out))
    assert result.code == 0, result.out + result.err
    check = fllm_inproc("verify", DOMAIN, str(out))
    assert check.code == 0 and "valid plan" in check.out + check.err

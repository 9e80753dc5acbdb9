"""The run meter: counts, the cost ceiling, the wall clock, forks and the trace schema."""

from __future__ import annotations

from dataclasses import dataclass

import pytest
from tests.fake_backends import Priced

from fllm_cli.errors import BudgetExceeded, TimeBudgetExceeded
from fllm_cli.llm.base import ChoiceRequest, ChoiceResult, GenerateRequest
from fllm_cli.llm.meter import ModelStats, RunMeter
from fllm_cli.llm.simple import ScriptedModel

CHOICE = ChoiceRequest("Pick:\n1: a\n2: b", ("a", "b"), "plan")


def priced(n: int = 10) -> Priced:
    return Priced(ScriptedModel(["2"] * n))


def test_choice_records_follow_the_schema() -> None:
    meter = RunMeter(priced())
    result = meter.choose(CHOICE, choice_point=1)
    assert result.index == 1
    (record,) = meter.records
    assert record["type"] == "choice" and record["kind"] == "plan"
    assert record["prompt"] == CHOICE.prompt and record["options"] == ["a", "b"]
    assert (record["reply"], record["choice"], record["chosen"]) == ("2", 1, "b")
    assert record["usage"] == {"prompt_tokens": 10, "completion_tokens": 1, "cost_usd": 0.01}
    assert record["calls"] == 1 and record["cached"] is False and record["fallback"] is False
    assert isinstance(record["latency"], float) and record["choice_point"] == 1


def test_generate_records_and_events() -> None:
    meter = RunMeter(ScriptedModel(["some text"]))
    gen = meter.generate(GenerateRequest("Write:", kind="definer"), state="s")
    meter.event("exec", kind="execute", ok=True)
    assert gen.text == "some text"
    first, second = meter.records
    assert first["type"] == "generate" and first["kind"] == "definer"
    assert (first["prompt"], first["reply"], first["state"]) == ("Write:", "some text", "s")
    assert {"usage", "latency", "cached", "calls"} <= first.keys()
    assert second == {"type": "event", "event": "exec", "kind": "execute", "ok": True}


def test_cost_ceiling_stops_before_the_next_call() -> None:
    model = priced()
    meter = RunMeter(model, max_cost=0.015)
    meter.choose(CHOICE)
    meter.choose(CHOICE)  # spent 0.02 >= 0.015 after this one
    with pytest.raises(BudgetExceeded, match=r"cost budget of \$0.0150 spent"):
        meter.choose(CHOICE)
    assert model.asked == 2  # the third call never reached the model
    assert meter.summary()["cost_usd"] == 0.02 and meter.summary()["llm_calls"] == 2


def test_a_free_model_never_hits_a_zero_ceiling() -> None:
    meter = RunMeter(ScriptedModel(["1"] * 3), max_cost=0.0)
    for _ in range(3):
        meter.choose(CHOICE)
    assert meter.calls == 3


def test_wall_clock_names_the_stage() -> None:
    meter = RunMeter(priced(), max_seconds=0.0, budget_flag="--max-seconds")
    with pytest.raises(TimeBudgetExceeded, match="in stage 'plan'") as info:
        meter.choose(CHOICE)
    assert info.value.stage == "plan"


def test_forks_report_to_their_parent() -> None:
    seen: list[int] = []
    parent = RunMeter(priced(), max_cost=0.025, on_call=lambda t: seen.append(t.calls))
    mine: list[dict[str, object]] = []
    child = parent.fork(max_cost=0.015, records=mine)
    child.choose(CHOICE)
    child.choose(CHOICE)
    with pytest.raises(BudgetExceeded):  # the child's own ceiling
        child.choose(CHOICE)
    assert len(mine) == 2 and parent.records == mine and parent.calls == 2
    other = parent.fork()
    other.choose(CHOICE)  # the parent has 0.005 left
    with pytest.raises(BudgetExceeded):  # now the parent's ceiling
        other.choose(CHOICE)
    assert parent.calls == 3 and len(parent.records) == 3 and seen[-1] == 3


def test_wrap_keeps_an_existing_meter() -> None:
    meter = RunMeter(priced())
    assert RunMeter.wrap(meter) is meter
    assert RunMeter.wrap(priced()) is not meter


def test_choices_made_without_the_model_are_marked() -> None:
    meter = RunMeter(priced())
    result = meter.decided(CHOICE, 0)
    assert result.fallback and meter.records[0]["asked"] is False
    assert meter.stats.fallbacks == 1 and meter.calls == 0


def test_a_fork_charges_the_stats_object_it_is_given() -> None:
    @dataclass
    class Mine(ModelStats):
        searches: int = 0

    parent = RunMeter(priced())
    mine = Mine(searches=4)
    child = parent.fork(stats=mine)
    child.choose(CHOICE)
    child.decided(CHOICE, 1)
    parent.choose(CHOICE)
    assert (mine.llm_calls, mine.fallbacks, mine.prompt_tokens) == (1, 1, 10)
    assert mine.cost_usd == pytest.approx(0.01) and mine.model_seconds >= 0
    assert (parent.stats.llm_calls, parent.stats.fallbacks) == (2, 1)
    assert parent.stats.cost_usd == pytest.approx(0.02)
    # The JSON form carries the subclass's own fields; the usage form only the model's.
    assert mine.as_dict()["searches"] == 4 and mine.as_dict()["cost_usd"] == 0.01
    assert "searches" not in child.summary() and child.summary()["llm_calls"] == 1


def test_the_way_a_choice_was_asked_is_recorded() -> None:
    class Schema(ScriptedModel):
        def choose(self, request: ChoiceRequest) -> ChoiceResult:
            result = super().choose(request)
            result.mode = "schema"
            return result

    meter = RunMeter(Schema(["2"]))
    meter.choose(CHOICE)
    meter2 = RunMeter(ScriptedModel(["2"]))
    meter2.choose(CHOICE)
    assert meter.records[0]["mode"] == "schema" and "mode" not in meter2.records[0]

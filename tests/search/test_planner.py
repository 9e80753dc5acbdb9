"""Planner behaviour: the paper's examples, forced moves, fallbacks, budgets, refusal.

These are tests of the step-by-step planner, so they ask for it (``search="greedy"``): with the
default strategy a request such as "t" is planned by the beam from the tool reader's evidence
against tools (search/beam.py), and the model is not asked step by step.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from fllm_cli import api
from fllm_cli.errors import BudgetExceeded, NoPlanError
from fllm_cli.llm.base import ChoiceRequest, ChoiceResult, GenerateRequest, Generation, Model, Usage
from fllm_cli.llm.simple import RandomModel, ScriptedModel
from fllm_cli.search.planner import Budgets, Planner
from fllm_cli.search.prompting import Prompter

GOLDEN = Path(__file__).parent / "golden"
A3_TASK = "Given a grayscale image, how to return the regular image step by step?"


def test_paper_a3_example_prompt(openagi: str, golden: Callable[[Path, str], None]) -> None:
    problem = api.compile_problem(openagi, inputs=["image"], output="image", task=A3_TASK)
    model = ScriptedModel(["2", "5"])
    result = api.plan(problem, model, search="greedy")
    assert result.document["word"] == ["Image Super Resolution", "input:image"]
    golden(GOLDEN / "a3_root_prompt.txt", model.prompts[0])
    golden(GOLDEN / "a3_second_prompt.txt", model.prompts[1])
    second = model.prompts[1]
    # The structure of the paper's example: progress, the slot being filled, five choices.
    assert "Step n: Use Image Super Resolution;\nStep (n-1): ?" in second
    assert 'To get the input image of "Image Super Resolution"' in second
    assert "5: the task's input image." in second
    assert "Image Super Resolution," not in second.split("choices:")[1]  # used once already
    # The very first choice never offers a bare task input (a plan needs a tool step).
    assert "input image" not in model.prompts[0].split("choices:")[1]


def test_tree_plan_e1_a1_i_b1_i(openagi: str) -> None:
    """Section 4.3's derivation: VQA(Colorization(i), Image Classification(i))."""
    problem = api.compile_problem(openagi, inputs=["image"], output="text", task="t")
    answers = iter(
        [
            "Visual Question Answering",
            "Colorization",
            "input image",
            "Image Classification",
            "input image",
        ]
    )

    def reply(prompt: str, options: tuple[str, ...]) -> str:
        want = next(answers)
        return str(1 + next(i for i, o in enumerate(options) if want in o))

    model = ScriptedModel([reply] * 5)
    result = api.plan(problem, model, search="greedy")  # the paper's step-by-step derivation
    doc = result.document
    assert doc["word"] == [
        "Visual Question Answering",
        "Colorization",
        "input:image",
        "Image Classification",
        "input:image",
    ]
    assert doc["steps"] == [
        {"id": 1, "tool": "Colorization", "inputs": ["input:image"], "output": "image"},
        {"id": 2, "tool": "Image Classification", "inputs": ["input:image"], "output": "text"},
        {
            "id": 3,
            "tool": "Visual Question Answering",
            "inputs": ["step:1", "step:2"],
            "output": "text",
        },
    ]
    assert 'the first input (image) of "Visual Question Answering"' in model.prompts[1]
    assert 'the second input (text) of "Visual Question Answering"' in model.prompts[3]
    assert doc["tree"]["tool"] == "Visual Question Answering"
    assert [c["tool"] for c in doc["tree"]["inputs"]] == ["Colorization", "Image Classification"]
    assert result.stats.llm_calls == 5 and result.stats.choice_points == 5


class Recording(Model):
    """Wraps a model and records how many options every question had."""

    def __init__(self, inner: Model) -> None:
        self.inner = inner
        self.sizes: list[int] = []
        self.name = inner.name

    def choose(self, request: ChoiceRequest) -> ChoiceResult:
        self.sizes.append(len(request.options))
        return self.inner.choose(request)

    def generate(self, request: GenerateRequest) -> Generation:
        return self.inner.generate(request)


@pytest.mark.parametrize("reply", ["banana", "99", "", "0", "-3", "the output of nothing"])
def test_unusable_replies_fall_back_and_plan_stays_valid(openagi: str, reply: str) -> None:
    problem = api.compile_problem(openagi, inputs=["image"], output="text", task="t")
    model = ScriptedModel([reply] * 100)
    result = api.plan(problem, model, search="greedy")
    assert api.verify(problem, result.document["word"]).valid
    assert result.stats.fallbacks == result.stats.choice_points > 0
    assert result.stats.llm_calls == 2 * result.stats.choice_points  # one correction each
    assert "does not name one of the options" in model.prompts[1]


def test_reply_by_option_text(openagi: str) -> None:
    problem = api.compile_problem(openagi, inputs=["image"], output="text", task="t")
    model = ScriptedModel(["I would use Image Captioning here.", "the task's input image"])
    result = api.plan(problem, model, search="greedy")
    assert result.document["word"] == ["Image Captioning", "input:image"]
    assert result.stats.fallbacks == 0


def test_impossible_task_is_refused_before_any_call(tmp_path: Path, openagi: str) -> None:
    text = Path(openagi).read_text(encoding="utf-8")
    cut = text.replace(
        "  - name: Text to Image Generation\n    description: draws a picture that matches a "
        "text prompt\n    inputs: [text]\n    output: image\n",
        "",
    )
    assert cut != text
    spec = tmp_path / "no_t2i.yaml"
    spec.write_text(cut, encoding="utf-8")
    problem = api.compile_problem(str(spec), inputs=["text"], output="image", task="draw it")
    model = ScriptedModel([])
    with pytest.raises(NoPlanError, match="no valid plan can produce an image output"):
        api.plan(problem, model)
    assert model.prompts == []


def test_max_llm_calls_falls_back_to_defaults(openagi: str) -> None:
    problem = api.compile_problem(openagi, inputs=["image"], output="text", task="t")
    model = ScriptedModel(["3"] * 50)
    result = api.plan(problem, model, search="greedy", budgets=Budgets(max_llm_calls=1))
    assert result.stats.llm_calls == 1
    assert result.stats.budget_exhausted == "max_llm_calls"
    assert api.verify(problem, result.document["word"]).valid


class Pricey(RandomModel):
    """Random choices that each cost a cent."""

    def choose(self, request: ChoiceRequest) -> ChoiceResult:
        result = super().choose(request)
        result.calls = 1
        result.usage = Usage(10, 1, 0.01)
        return result


def test_max_cost_stops_cleanly(openagi: str) -> None:
    problem = api.compile_problem(openagi, inputs=["image"], output="text", task="t")
    with pytest.raises(BudgetExceeded, match="cost budget"):
        api.plan(problem, Pricey(1), search="greedy", budgets=Budgets(max_cost=0.015))


def test_max_steps_is_a_clean_error(openagi: str) -> None:
    problem = api.compile_problem(openagi, inputs=["image"], output="text", task="t")
    with pytest.raises(NoPlanError, match="--max-moves 2"):
        api.plan(problem, RandomModel(0), budgets=Budgets(max_steps=2))


class NoLookahead:
    """Offers every move the automaton allows, dead ends included (to exercise backtracking)."""

    def __init__(self, pda) -> None:  # type: ignore[no-untyped-def]
        self.pda = pda

    def feasible_moves(self, config):  # type: ignore[no-untyped-def]
        out = []
        for index in self.pda.applicable(config):
            nxt = self.pda.step(config, index)
            if nxt is not None:
                out.append((index, nxt))
        return out


TOY = """
fllm: 1
name: toy
modalities: [image, text]
tools:
  - {name: Caption, description: describe a picture, inputs: [image], output: text}
  - {name: Merge, description: join two texts, inputs: [text, text], output: text}
  - {name: Polish, description: tidy a text, inputs: [text], output: text}
task: {inputs: [image], outputs: [text]}
"""


def toy_problem(tmp_path: Path) -> api.Problem:
    spec = tmp_path / "toy.yaml"
    spec.write_text(TOY, encoding="utf-8")
    return api.compile_problem(str(spec), inputs=["image"], output="text", task="t")


def test_lookahead_never_offers_a_dead_end(tmp_path: Path) -> None:
    """Merge needs two texts but only one Caption exists: it must never be offered."""
    import random

    for seed in range(20):
        rng = random.Random(seed)
        offered: list[tuple[str, ...]] = []

        def pick(
            prompt: str,
            options: tuple[str, ...],
            rng: random.Random = rng,
            offered: list[tuple[str, ...]] = offered,
        ) -> str:
            offered.append(options)  # a Merge option would be taken whenever it is offered
            merge = [i for i, o in enumerate(options, 1) if "Merge" in o]
            return str(merge[0] if merge else rng.randint(1, len(options)))

        model = ScriptedModel([pick] * 30)
        result = api.plan(toy_problem(tmp_path), model, search="greedy")
        assert offered, "the toy task has choice points"
        assert "Merge" not in result.document["word"]
        assert not any("Merge" in o for options in offered for o in options), seed


def test_backtracking_recovers_from_dead_ends(tmp_path: Path) -> None:
    """Without look-ahead the search meets dead ends, backtracks, and still returns valid plans."""
    total_backtracks = 0
    for seed in range(30):
        problem = toy_problem(tmp_path)
        prompter = Prompter(problem.domain, problem.grammar, problem.pda, problem.task)
        planner = Planner(
            problem.pda,
            NoLookahead(problem.pda),
            RandomModel(seed),
            prompter,
            Budgets(max_backtracks=10_000, max_steps=100_000),
        )
        final = planner.run()
        assert api.verify(problem, final.word_list()).valid
        total_backtracks += planner.stats.backtracks
    assert total_backtracks > 0


def test_out_of_calls_the_planner_heads_for_the_shortest_plan(tmp_path: Path) -> None:
    """With no model calls left, a left-recursive rule must not loop to the move budget."""
    spec = tmp_path / "ss.yaml"
    spec.write_text(
        "name: g\nkind: grammar\ngrammar:\n  start: S\n  terminals: [open]\n"
        '  productions:\n    S: ["S S", "open"]\n',
        encoding="utf-8",
    )
    problem = api.compile_problem(str(spec))
    result = api.plan(problem, RandomModel(1), budgets=Budgets(max_llm_calls=0, max_steps=50))
    assert result.document["word"] == ["open"]
    assert result.stats.budget_exhausted == "max_llm_calls"

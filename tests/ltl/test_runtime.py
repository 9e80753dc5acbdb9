"""The runtime keeps every run inside the spec, whatever the model does."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fllm_cli.llm.simple import RandomModel, ScriptedModel
from fllm_cli.ltl.api import AgentOptions, answer_language, load_agent, run_agent
from fllm_cli.ltl.languages import content_rules
from fllm_cli.ltl.output import bare_transcript, to_json
from fllm_cli.ltl.runtime import AgentRun, Budget
from fllm_cli.ltl.tools import builtin_input_languages
from fllm_cli.ltl.trace import check_transcript

from .models import BehaviourModel, RandomTextModel, is_choice, last_tag

ROOT = Path(__file__).resolve().parents[2]
AGENTS = ROOT / "domains" / "agents"
CORPUS = str(Path(__file__).parent / "data" / "corpus.jsonl")
REACT = str(AGENTS / "react.sexp")
ABLATED = str(AGENTS / "react_ablation.sexp")


def assert_valid(
    path: str,
    run: AgentRun,
    budget: Budget,
    tools: tuple[str, ...] | None = None,
    answer: str | None = None,
) -> None:
    """The transcript fllm writes passes check-trace (content languages included) as one
    example that reads back every step's text exactly, ends in the final state, and fits the
    budget."""
    spec, dfa = load_agent(path)
    rules = content_rules(spec, builtin_input_languages(tools or ()), answer_language(answer))
    text = bare_transcript(run)
    results = check_transcript(spec, dfa, text, tools=tools, rules=rules)
    assert len(results) == 1, f"the transcript reads as {len(results)} examples"
    assert results[0].ok, results[0].violation
    assert [(s.state, s.text) for s in results[0].segments] == [
        (s.state, s.text.strip()) for s in run.steps
    ]
    assert to_json(run)["transcript"] == text
    assert run.reached_final
    assert run.steps[-1].state == spec.final
    assert len(run.steps) <= budget.max_steps
    if budget.max_loops is not None:
        assert sum(s.state == spec.start for s in run.steps) <= budget.max_loops


# Each misbehaviour is a reply function over the prompt (choice prompts included).
def skips_action_input(prompt: str) -> str:
    if is_choice(prompt):
        return "1"
    return "Let me search.\nAction: search\nObservation: I made this up\nFinal Thought: done"


def wrong_tag(prompt: str) -> str:
    if is_choice(prompt):
        return "2"
    return "Hmm.\nAnswer: 42\nThought: more"


def never_tags(prompt: str) -> str:
    if is_choice(prompt):
        return "1"
    return "I keep talking without ever labelling anything " * 3


def bad_tool(prompt: str) -> str:
    if is_choice(prompt):
        return "the hammer, obviously"  # names no option: correction, then fallback
    return "Use the hammer.\nAction: hammer\nAction Input: nail"


def forever(prompt: str) -> str:
    if is_choice(prompt):
        return "1"  # always pick the first option: Thought again
    return "Still thinking.\nThought:"


MISBEHAVIOURS = [skips_action_input, wrong_tag, never_tags, bad_tool, forever]


@pytest.mark.parametrize("spec", [REACT, ABLATED, str(AGENTS / "reflexion.sexp")], ids=Path)
@pytest.mark.parametrize("reply", MISBEHAVIOURS, ids=lambda f: f.__name__)
@pytest.mark.parametrize("strip", [False, True], ids=["raw", "chat-api"])
def test_misbehaving_models_still_produce_valid_transcripts(spec: str, reply, strip: bool) -> None:  # type: ignore[no-untyped-def]
    budget = Budget(max_steps=30, max_loops=3)
    options = AgentOptions(tools=("search", "lookup"), corpus=CORPUS, budget=budget)
    run = run_agent(
        spec, "Which film is based on Iron Henry?", BehaviourModel(reply, strip), options
    )
    assert_valid(spec, run, budget, ("search", "lookup"))


def test_wrong_tag_is_dropped_and_an_allowed_one_forced() -> None:
    run = run_agent(REACT, "q", BehaviourModel(wrong_tag), AgentOptions(budget=Budget(20, 1)))
    first = run.steps[0]
    assert first.state == "Thought" and first.text == "Hmm."
    assert run.steps[1].state == "Action" and run.steps[1].tag_forced
    assert any("dropped 'Answer:'" in n for n in run.steps[1].notes)
    assert run.stats.dropped_tags >= 1


def test_an_allowed_tag_written_by_the_model_is_followed_not_forced() -> None:
    def reply(prompt: str) -> str:
        if is_choice(prompt):
            return "2"
        return {"Thought:": "Add them.\nAction:", "Final Thought:": "Done.\nAnswer:"}.get(
            last_tag(prompt), "2 + 2"
        )

    run = run_agent(REACT, "2+2?", BehaviourModel(reply), AgentOptions(budget=Budget(20, 1)))
    action = run.steps[1]
    assert action.state == "Action" and not action.tag_forced
    assert run.steps[2].tag_forced  # 'Action Input:' was forced: the Action was a choice
    assert run.steps[3].text == "4"  # the calculator ran on the Action Input
    assert run.steps[-1].state == "Answer" and not run.steps[-1].tag_forced


def test_budget_closes_a_runaway_run_by_the_shortest_path() -> None:
    budget = Budget(max_steps=12)
    # 'Still thinking.' is no arithmetic: without the calculator's input language the run loops.
    options = AgentOptions(budget=budget, tool_languages=False)
    run = run_agent(REACT, "q", BehaviourModel(forever), options)
    assert_valid(REACT, run, budget)
    assert [s.state for s in run.steps[-2:]] == ["Final-Thought", "Answer"]
    assert run.stats.budget_hit == "max-states 12"
    assert len(run.steps) == 10  # two full loops, then the only way out


def test_time_budget_closes_the_run_validly_without_more_model_calls() -> None:
    import time

    def slow(prompt: str) -> str:
        time.sleep(0.3)
        return forever(prompt)

    model = BehaviourModel(slow)
    budget = Budget(max_steps=100, max_loops=50, max_seconds=1.0)
    run = run_agent(REACT, "q", model, AgentOptions(budget=budget))
    assert_valid(REACT, run, budget)
    assert run.stats.budget_hit == "max-seconds 1"
    assert run.steps[-1].state == "Answer"
    # At most the call in flight when the clock ran out comes after the deadline.
    assert len(model.prompts) <= 1.0 / 0.3 + 2
    assert run.steps[-1].source == "forced"


def test_max_loops_caps_the_react_loop_as_in_the_paper() -> None:
    budget = Budget(max_steps=100, max_loops=3)
    options = AgentOptions(budget=budget, tool_languages=False)
    run = run_agent(REACT, "q", BehaviourModel(forever), options)
    assert sum(s.state == "Thought" for s in run.steps) == 3
    assert run.stats.budget_hit == "max-loops 3"


def test_too_small_a_budget_is_a_usage_error() -> None:
    from fllm_cli.errors import UsageError

    with pytest.raises(UsageError, match="too small"):
        run_agent(REACT, "q", RandomModel(0), AgentOptions(budget=Budget(max_steps=3)))


def test_figure_5_failure_happens_only_under_the_ablated_spec() -> None:
    def iron_man(prompt: str) -> str:  # the same misbehaving model for both specs
        if is_choice(prompt):
            return "1 lookup" if "lookup" in prompt.lower().split("options:")[-1] else "1"
        return "I think Iron Man is the closest one.\nAction: Lookup"

    budget = Budget(max_steps=40, max_loops=3)
    options = AgentOptions(tools=("search", "lookup"), corpus=CORPUS, budget=budget)
    ablated = run_agent(
        ABLATED, "Which movie is based on Iron Henry?", BehaviourModel(iron_man, True), options
    )
    observations = [s.text for s in ablated.steps if s.state == "Observation"]
    assert len(observations) == 3 and all("has no input" in o for o in observations)
    assert ablated.answer is None  # the ablated agent ends in Final Thought with no answer

    full = run_agent(
        REACT, "Which movie is based on Iron Henry?", BehaviourModel(iron_man, True), options
    )
    assert_valid(REACT, full, budget, ("search", "lookup"))
    states = [s.state for s in full.steps]
    for i, state in enumerate(states):
        if state == "Observation":
            assert states[i - 2 : i] == ["Action", "Action-Input"]
    assert not any("has no input" in s.text for s in full.steps)
    assert full.answer is not None


def test_content_constraints_use_the_constrained_choice() -> None:
    model = ScriptedModel(["Check it.", "1", "Iron Henry", "2", "It is a tale.", "REFUTES"])
    run = run_agent(
        str(AGENTS / "fever_react.yaml"),
        "Iron Henry is a film.",
        model,
        AgentOptions(tools=("search", "lookup"), corpus=CORPUS),
    )
    assert [s.state for s in run.steps] == [
        "Thought",
        "Action",
        "Action-Input",
        "Observation",
        "Final-Thought",
        "Answer",
    ]
    assert run.steps[1].text == "search" and run.steps[1].source == "choice"
    assert run.steps[3].text.startswith("Iron Henry is a fairy tale")
    assert run.answer == "REFUTES"
    assert "1. SUPPORTS" in model.history[-1]["prompt"]


def test_chat_bot_reads_the_user_until_end_of_input() -> None:
    lines = iter(["hello", "what is 2+2?"])
    replies = iter(["Hi! How can I help?", "Hello again.", "It is 4."])
    model = BehaviourModel(lambda p: next(replies))
    run = run_agent(
        str(AGENTS / "chat_bot.sexp"), "", model, read_user=lambda tag: next(lines, None)
    )
    assert [(s.state, s.text) for s in run.steps] == [
        ("Chat-Bot", "Hi! How can I help?"),
        ("User", "hello"),
        ("Chat-Bot", "Hello again."),
        ("User", "what is 2+2?"),
        ("Chat-Bot", "It is 4."),
        ("User", ""),
    ]
    assert run.ended_by == "environment" and run.reached_final


def test_reflexion_evaluator_compares_with_the_expected_answer() -> None:
    def reply(prompt: str) -> str:
        if is_choice(prompt):
            return "3" if "Generation complete!" in prompt.split("Options:")[-1] else "1"
        return {"Answer:": "4", "Action Input:": "2+2"}.get(last_tag(prompt), "ok")

    budget = Budget(max_steps=30, max_loops=2)
    run = run_agent(
        str(AGENTS / "reflexion.sexp"),
        "2+2?",
        BehaviourModel(reply),
        AgentOptions(budget=budget, expected="4"),
    )
    assert_valid(str(AGENTS / "reflexion.sexp"), run, budget, ("calculator",))
    assert next(s.text for s in run.steps if s.state == "Evaluator") == "The answer is correct."


SPECS = [p for p in sorted(AGENTS.glob("*.*")) if p.suffix in (".sexp", ".yaml")]


@settings(max_examples=40, deadline=None)
@given(
    st.sampled_from(SPECS),
    st.integers(0, 10_000),
    st.integers(12, 40),
    st.sampled_from([None, 1, 3]),
)
def test_random_models_always_yield_valid_runs(
    path: Path, seed: int, steps: int, loops: int | None
) -> None:
    budget = Budget(max_steps=steps, max_loops=loops)
    users = iter(["a", "b", "c"])
    options = AgentOptions(tools=("calculator", "search", "lookup"), corpus=CORPUS, budget=budget)
    run = run_agent(
        str(path), "q", RandomModel(seed), options, read_user=lambda tag: next(users, None)
    )
    assert_valid(str(path), run, budget, ("calculator", "search", "lookup"))


HOSTILE = (
    "Thought:", "Action:", "Action Input:", "Observation: forged", "Final Thought:",
    "Answer: 42", "Claim:", "\n\nQuestion: What next?", "\nQuestion: q2", "Question:",
    "\n\n", "\\Thought:", "\\\\Answer:", "\x1b[2J\x1b[31m", "\u2028Answer: 9",
    "\u2029Thought: x", "\r\nAction: calculator", "Reflection:", "Response:", "User:",
    "SUPPORTS", "52.8", "1 + 2", "  ", "yes",
)  # fmt: skip


class HostileTextModel(RandomTextModel):
    """Replies built from the spec's keywords, example breaks, escapes, terminal controls and
    Unicode line separators; random choices."""

    PIECES = HOSTILE


@settings(max_examples=60, deadline=None)
@given(st.sampled_from(SPECS), st.integers(0, 10_000), st.sampled_from(["q", *HOSTILE[:10]]))
def test_hostile_model_text_round_trips_through_check_trace(
    path: Path, seed: int, question: str
) -> None:
    """Whatever the model writes and however the question reads, the transcript fllm writes is
    one example that check-trace accepts and reads back step by step (assert_valid)."""
    budget = Budget(max_steps=30, max_loops=2)
    users = iter(["Thought: hi", "\n\nQuestion: again", None])
    options = AgentOptions(tools=("calculator", "search", "lookup"), corpus=CORPUS, budget=budget)
    run = run_agent(
        str(path), question, HostileTextModel(seed), options,
        read_user=lambda tag: next(users, None),
    )  # fmt: skip
    assert_valid(str(path), run, budget, ("calculator", "search", "lookup"))


@pytest.mark.parametrize("spec", [REACT, ABLATED, str(AGENTS / "reflexion.sexp")], ids=Path)
def test_a_full_context_window_closes_the_run_validly(spec: str) -> None:
    """When the prompt outgrows the model's context, the run ends validly instead of failing."""
    from fllm_cli.errors import ContextOverflow

    calls = {"n": 0}

    def reply(prompt: str) -> str:
        if is_choice(prompt):
            return "1"
        calls["n"] += 1
        if calls["n"] > 3:
            raise ContextOverflow("prompt has 9000 tokens, the local context holds 8192")
        return "Thinking hard about it."

    budget = Budget(max_steps=40, max_loops=5)
    options = AgentOptions(tools=("search", "lookup"), corpus=CORPUS, budget=budget)
    run = run_agent(spec, "Which film is based on Iron Henry?", BehaviourModel(reply), options)
    assert_valid(spec, run, budget, ("search", "lookup"))
    assert run.stats.budget_hit == "context window"
    assert calls["n"] == 4  # no model call after the overflow


KEYWORDS = ("Thought:", "Final Thought:", "Action:", "Action Input:", "Answer:", "Observation:")


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.sampled_from(
            [*KEYWORDS, "Question:", "Claim:", "\\", " ", "\n", "\u2028", "x", "Final"]
        ),
        max_size=12,
    )
)
def test_escaped_text_reads_back_and_hides_every_keyword(pieces: list[str]) -> None:
    from fllm_cli.ltl.trace import SPLIT_WORDS, escape_text, unescape_text

    text = "".join(pieces)
    escaped = escape_text(text, KEYWORDS)
    assert unescape_text(escaped, KEYWORDS) == text
    for word in (*KEYWORDS, *SPLIT_WORDS):  # nothing a reader would take for a tag or a break
        for at in range(len(escaped)):
            if escaped.startswith(word, at):
                assert at > 0 and not escaped[at - 1].isspace(), (word, escaped)


def test_a_state_bounds_its_own_text(tmp_path: Path) -> None:
    from fllm_cli.llm.base import GenerateRequest, Generation
    from fllm_cli.ltl.spec import parse_spec

    spec = tmp_path / "short.sexp"
    spec.write_text(
        '(define short (:states (Thought (:text "Thought:") (:max-tokens 7))'
        ' (Answer (:text "Answer:"))) (:behavior (next Thought Answer)))'
    )
    asked: dict[str, int] = {}

    class Recording(BehaviourModel):
        def generate(self, request: GenerateRequest) -> Generation:
            asked[last_tag(request.prompt)] = request.max_tokens
            return super().generate(request)

    run = run_agent(str(spec), "q", Recording(lambda p: "1" if is_choice(p) else "ok"))
    assert run.reached_final
    assert asked == {"Thought:": 7, "Answer:": Budget().max_tokens}
    _, diagnostics = parse_spec(spec.read_text().replace("7", "0"), str(spec))
    assert any(":max-tokens takes a whole number" in d.message for d in diagnostics)

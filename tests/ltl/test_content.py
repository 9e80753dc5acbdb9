"""Content languages: reading, checking, decoding grammars, the runtime and check-trace."""

from __future__ import annotations

import random
import re
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fllm_cli.content import (
    Alt,
    Cls,
    LanguageError,
    Lit,
    Node,
    Ref,
    Rep,
    Seq,
    language_from_text,
    make_language,
)
from fllm_cli.errors import SpecError, UsageError
from fllm_cli.llm.base import GenerateRequest, Generation
from fllm_cli.ltl.api import AgentOptions, answer_language, load_agent, run_agent
from fllm_cli.ltl.calculator import CalculatorError, evaluate
from fllm_cli.ltl.languages import content_rules
from fllm_cli.ltl.runtime import Budget
from fllm_cli.ltl.spec import parse_spec
from fllm_cli.ltl.tools import builtin_input_languages
from fllm_cli.ltl.trace import check_transcript

from .models import BehaviourModel, RandomTextModel, is_choice, last_tag
from .test_runtime import AGENTS, REACT, assert_valid

# ------------------------------------------------------------------ languages


@pytest.mark.parametrize(
    ("spelling", "good", "bad"),
    [
        ("number", ["52.8", "-3", "180"], ["", "52.", "fifty", "5 2", "1,000"]),
        ("integer", ["180", "-7"], ["1.5", "x"]),
        ("yes|no", ["yes", "no"], ["Yes", "maybe", "yesno"]),
        ("yes-no", ["yes", "no"], ["y"]),
        ("query", ["Ferris wheel", "a"], ["", " lead", "two\nlines", "x" * 121]),
        (
            "arithmetic",
            ["0.17 * 240 + 12", "17% * 240", "sqrt(16) + 2**3", "-(1+2)"],
            ["", "1. 17% of 240", "3 +", "x"],
        ),
        (r"regex:[A-Z]{2}\d+", ["AB12"], ["A12", "ab12", "AB"]),
        (r"^(?:ab|c)*$", ["", "abc", "cab"], ["a", "abd"]),
        (
            'json-schema:{"type": "object", "properties": '
            '{"n": {"type": "integer"}, "ok": {"type": "boolean"}}}',
            ['{"n": 3, "ok": true}', '{"n":-1,"ok":false}', '{\n  "n": 0,\n  "ok": true\n}'],
            ['{"n": 1.5, "ok": true}', '{"ok": true, "n": 1}', "[]"],
        ),
        (
            'json-schema:{"type": "array", "items": {"enum": ["a", "b"]}, "maxItems": 2}',
            ["[]", '["a"]', '["a", "b"]'],
            ['["a","b","a"]', '["c"]'],
        ),
        ('gbnf:root ::= "(" root ")" | ""', ["", "()", "(())"], ["(", "())"]),
    ],
)
def test_languages_accept_and_reject(spelling: str, good: list[str], bad: list[str]) -> None:
    language = language_from_text(spelling)
    for text in good:
        assert language.check(text) is None, text
    for text in bad:
        problem = language.check(text)
        assert problem and "\n" not in problem, text


@pytest.mark.parametrize(
    ("spelling", "message"),
    [
        ("a(?=b)", "column 3: only (?:...) groups"),
        ("(a", "missing ')'"),
        (r"(a)\1", r"unsupported escape '\1'"),
        ("[z-a]", "bad range"),
        ("gbnf:root ::= item", "undefined rule 'item'"),
        ('gbnf:x ::= "a"', "no 'root' rule"),
        ('gbnf:root ::= root "a" | "a"', "left-recursive"),
        ('gbnf:root ::= "a', "grammar, line 1 column 10: unclosed string"),
        ('json-schema:{"type": "object", "patternProperties": {}}', "unsupported keyword"),
        ("json-schema:{nope", "not JSON"),
    ],
)
def test_bad_languages_are_one_line_errors(spelling: str, message: str) -> None:
    with pytest.raises(LanguageError, match=re.escape(message)):
        language_from_text(spelling)


REGEXES = [
    r"-?[0-9]+(\.[0-9]+)?",
    r"(ab|a)*b?",
    r"[^a-c]{1,3}x",
    r"\w+\s\d{2,}",
    r"a.c|\.",
    r"(?:x|yz)+",
]


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(REGEXES), st.text(alphabet="abcxyz019.- \n_", max_size=8))
def test_regex_languages_agree_with_python_re(pattern: str, text: str) -> None:
    ours = language_from_text(f"regex:{pattern}").check(text) is None
    assert ours == (re.fullmatch(pattern, text, re.ASCII) is not None)


def sample(rules: dict[str, Node], node: Node, rng: random.Random, depth: int = 0) -> str:
    """A random word of the grammar (deep down it takes the last option and fewest repeats)."""
    if isinstance(node, Lit):
        return node.text
    if isinstance(node, Cls):
        if node.negated:
            return rng.choice([c for c in "aZ5 _.;" if node.matches(c)])
        lo, hi = rng.choice(node.ranges)
        return chr(rng.randint(lo, hi))
    if isinstance(node, Ref):
        return sample(rules, rules[node.name], rng, depth + 1)
    if isinstance(node, Seq):
        return "".join(sample(rules, item, rng, depth) for item in node.items)
    if isinstance(node, Alt):
        options = node.options if depth < 12 else node.options[-1:]
        return sample(rules, rng.choice(options), rng, depth)
    assert isinstance(node, Rep)
    high = node.high if node.high is not None else node.low + 3
    count = rng.randint(node.low, high if depth < 12 else node.low)
    return "".join(sample(rules, node.item, rng, depth + 1) for _ in range(count))


@settings(max_examples=200, deadline=None)
@given(st.integers(0, 10**6))
def test_every_arithmetic_word_is_accepted_and_computable(seed: int) -> None:
    """The calculator's input grammar is inside what the calculator parses."""
    language = language_from_text("arithmetic")
    text = sample(language.rules, language.rules["root"], random.Random(seed))
    assert language.check(text) is None
    try:
        evaluate(text)
    except CalculatorError as exc:
        # Only arithmetic failures remain (0 divisors, huge powers), never a parse failure.
        assert "not an arithmetic expression" not in str(exc), (text, exc)
    except (ZeroDivisionError, OverflowError, ValueError):
        pass


@pytest.mark.local_model
def test_gbnf_grammars_are_accepted_by_llama_cpp() -> None:
    """llama.cpp's own parser accepts what we write (it needs the model's vocabulary)."""
    pytest.importorskip("llama_cpp")
    from fllm_cli.errors import BackendError
    from fllm_cli.llm import local

    try:
        model = local.LocalModel(path=local.find_default_gguf())
    except BackendError:
        pytest.skip("the embedded model is not installed")
    spellings = [
        "number",
        "arithmetic",
        "query",
        "line",
        "yes|no",
        r"regex:[^\"\\]{2}\x41",
        'json-schema:{"type": "object", "properties": '
        '{"a": {"type": "string"}, "b": {"type": ["number", "null"]}}}',
        'gbnf:root ::= "a" [\\x20-\\x7e]* # comment',
    ]
    for spelling in spellings:
        assert model._grammar(language_from_text(spelling).gbnf()) is not None


def test_gbnf_round_trips_through_our_writer() -> None:
    language = make_language("gbnf", 'root ::= item ("," item){0,2}\nitem ::= [a-c]+ | "\\"q\\""')
    written = make_language("gbnf", language.gbnf())  # our own output reads back
    for text in ["a", "ab,c", '"q",a,b', "a,b,c,a", "", "d", "a,"]:
        assert (written.check(text) is None) == (language.check(text) is None), text
    assert written.check(" a,b\n") is None  # the decoding wrapper: a space before, a newline after


# ------------------------------------------------------------------ specs


def test_language_spellings_in_sexp_and_yaml() -> None:
    sexp = """(define a
      (:states
        (Thought (:text "Thought:") (:language line))
        (Query (:text "Query:") (:language (:regex "[a-z]+")))
        (Data (:text "Data:") (:language (:json-schema "{\\"type\\": \\"integer\\"}")))
        (Expr (:text "Expr:") (:language (:gbnf "root ::= [0-9]+")))
        (Answer (:text "Answer:") (:language "yes|no")))
      (:behavior (next Thought Query Data Expr Answer)))"""
    spec, diags = parse_spec(sexp, "a.sexp")
    assert spec is not None, diags
    forms = {s.name: s.language.form for s in spec.states if s.language}
    assert forms == {
        "Thought": "name",
        "Query": "regex",
        "Data": "json-schema",
        "Expr": "gbnf",
        "Answer": "regex",
    }
    yaml = """agent:
  states:
    Thought: {text: "Thought:", language: line}
    Data: {text: "Data:", language: {json-schema: {type: array, items: {type: integer}}}}
    Answer: {text: "Answer:", language: {regex: "[0-9]+"}}
  behavior: [next, Thought, Data, Answer]
"""
    spec, diags = parse_spec(yaml, "a.yaml")
    assert spec is not None, diags
    data = spec.state("Data").language
    assert data is not None and data.check("[1, 2]") is None and data.check("[1.5]")


def test_language_errors_in_specs_are_located() -> None:
    sexp = """(define a
  (:states
    (Thought (:text "Thought:") (:language (:regex "(oops")))
    (Answer (:text "Answer:") (:choices "a" "b") (:language number))
    (Obs (:text "Observation:") (:flags :env-input) (:language line)))
  (:behavior (next Thought Obs Answer)))"""
    spec, diags = parse_spec(sexp, "a.sexp")
    assert spec is None
    messages = [
        f"{d.location.line}:{d.location.col} {d.message}"
        for d in diags
        if d.severity == "error" and d.location
    ]
    assert any(
        m.startswith("3:44 state 'Thought': regex") and "missing ')'" in m for m in messages
    ), messages
    assert any("both :choices and :language" in m for m in messages), messages
    assert any("filled by the environment and cannot have :language" in m for m in messages)
    yaml = 'agent:\n  states:\n    A: {text: "A:", language: {regx: "a"}}\n  behavior: A\n'
    spec, diags = parse_spec(yaml, "a.yaml")
    assert spec is None
    assert any(
        d.location and d.location.line == 3 and "language must be" in d.message for d in diags
    )


# ------------------------------------------------------------------ the runtime


class GrammarRecorder(BehaviourModel):
    """Records the grammar each generate request carries."""

    supports_grammar = True

    def __init__(self, reply) -> None:  # type: ignore[no-untyped-def]
        super().__init__(reply)
        self.grammars: list[tuple[str, str | None]] = []

    def generate(self, request: GenerateRequest) -> Generation:
        if request.kind.startswith("agent-state"):
            self.grammars.append((last_tag(request.prompt), request.grammar))
        return super().generate(request)


def good_react(prompt: str) -> str:
    if is_choice(prompt):
        return "2" if "Final Thought:" in prompt and "Observation:" in prompt else "1"
    return {
        "Thought:": "Compute it.",
        "Action Input:": "0.17 * 240 + 12",
        "Final Thought:": "Done.",
    }.get(last_tag(prompt), "52.8")


def test_requests_carry_the_grammar_of_their_state() -> None:
    model = GrammarRecorder(good_react)
    options = AgentOptions(budget=Budget(20, 1), answer="number")
    run = run_agent(REACT, "What is 17% of 240, plus 12?", model, options)
    by_tag = dict(model.grammars)
    assert by_tag["Thought:"] is None and by_tag["Final Thought:"] is None
    assert by_tag["Action Input:"] and "c-fn ::=" in by_tag["Action Input:"]
    assert by_tag["Answer:"] and 'root ::= " "? c-root' in by_tag["Answer:"]
    assert run.answer == "52.8" and run.stats.content_rejects == 0


def test_a_reply_outside_the_language_is_asked_again_with_the_error() -> None:
    replies = iter(["17% of 240, plus 12", "0.17 * 240 + 12"])

    def reply(prompt: str) -> str:
        if is_choice(prompt):
            return "2" if "Observation:" in prompt else "1"
        tag = last_tag(prompt)
        if tag == "Action Input:":
            return next(replies)
        return {"Thought:": "Compute.", "Final Thought:": "Done."}.get(tag, "52.8")

    model = BehaviourModel(reply)
    budget = Budget(20, 1)
    run = run_agent(REACT, "q", model, AgentOptions(budget=budget))
    observation = next(s for s in run.steps if s.state == "Observation")
    assert observation.text == "52.8"  # the calculator only ever saw the corrected input
    assert run.stats.content_rejects == 1 and run.stats.content_retries == 1
    retry = next(p for p in model.prompts if "was rejected" in p)
    assert "'17% of 240, plus 12'" in retry and "arithmetic expression" in retry
    assert retry.rstrip().endswith("Action Input:")
    assert run.answer == "52.8"  # react.sexp's answer is grounded: copied from the observation
    assert_valid(REACT, run, budget, ("calculator",))


def test_a_reply_that_never_parses_is_built_in_its_language_by_choices() -> None:
    def reply(prompt: str) -> str:
        if is_choice(prompt):
            return "2" if "(more)" in prompt else "1"
        return "fifty-two point eight" if last_tag(prompt) == "Answer:" else "0.5 * 2"

    budget = Budget(30, 2, content_retries=3)
    model = BehaviourModel(reply)
    run = run_agent(REACT, "q", model, AgentOptions(budget=budget, answer="number"))
    answer = run.steps[-1]
    assert answer.state == "Answer" and answer.source == "built"
    assert re.fullmatch(r"-?[0-9]+(\.[0-9]+)?", answer.text)  # a number, built by choices
    assert run.answer == answer.text and run.reached_final
    assert run.stats.content_rejects == 4 and run.stats.content_retries == 3
    assert run.stats.content_built == 1 and run.stats.content_failures == 0
    assert any("built the text in the language by choices" in n for n in answer.notes)
    assert_valid(REACT, run, budget, ("calculator",), answer="number")


def test_an_answer_the_observations_do_not_support_is_never_written() -> None:
    """react.sexp's answer is observed-span: with an observation the model's reply is not in
    it is rejected; with no observation at all nothing can be written, and the run says so."""

    def reply(prompt: str) -> str:
        if is_choice(prompt):
            return "1"
        return "Paris" if last_tag(prompt) == "Answer:" else "1 + 1"

    budget = Budget(30, 1, content_retries=1)
    run = run_agent(REACT, "q", BehaviourModel(reply), AgentOptions(budget=budget))
    observation = [s.text for s in run.steps if s.state == "Observation"][-1]
    assert run.answer is not None and run.answer in observation and run.answer != "Paris"
    assert_valid(REACT, run, budget, ("calculator",))


def test_a_bad_tool_input_never_reaches_the_tool() -> None:
    def reply(prompt: str) -> str:
        if is_choice(prompt):
            return "1"
        return "I will compute 17% of 240."

    budget = Budget(30, 3, content_retries=0)
    run = run_agent(REACT, "q", BehaviourModel(reply), AgentOptions(budget=budget))
    states = [s.state for s in run.steps]
    assert states[:4] == ["Thought", "Action", "Action-Input", "Observation"]
    built = run.steps[2]
    assert built.source == "built" and built.text != "I will compute 17% of 240."
    assert "error" not in run.steps[3].text.lower()  # the calculator got an expression
    assert run.stats.content_built >= 1
    assert_valid(REACT, run, budget, ("calculator",))


def test_answer_needs_an_answer_state_and_a_good_spelling() -> None:
    with pytest.raises(UsageError, match="has no answer state"):
        run_agent(
            str(AGENTS / "react_ablation.sexp"),
            "q",
            RandomTextModel(0),
            AgentOptions(answer="number"),
        )
    with pytest.raises(UsageError, match=r"--answer: regex, line 1 column 3: missing '\)'"):
        answer_language("(a")
    with pytest.raises(UsageError, match="has :choices"):  # FEVER's answer is a label
        run_agent(
            str(AGENTS / "fever_react.yaml"),
            "q",
            RandomTextModel(0),
            AgentOptions(answer="number", tools=("calculator",)),
        )


SPECS = [p for p in sorted(AGENTS.glob("*.*")) if p.suffix in (".sexp", ".yaml")]


@settings(max_examples=60, deadline=None)
@given(
    st.sampled_from(SPECS),
    st.integers(0, 10_000),
    st.integers(12, 40),
    st.sampled_from([None, 1, 3]),
    st.sampled_from([None, "number", "yes|no", "regex:[a-z ]+"]),
    st.integers(0, 2),
)
def test_random_text_models_never_produce_a_transcript_check_trace_rejects(
    path: Path, seed: int, steps: int, loops: int | None, answer: str | None, retries: int
) -> None:
    spec, _ = load_agent(str(path))
    has_answer = any(s.text.strip() == "Answer:" and not s.choices for s in spec.states)
    budget = Budget(max_steps=steps, max_loops=loops, content_retries=retries)
    users = iter(["a", "b", "c"])
    options = AgentOptions(
        tools=("calculator",),
        budget=budget,
        answer=answer if has_answer else None,
        expected="4",
    )
    run = run_agent(
        str(path), "q", RandomTextModel(seed), options, read_user=lambda t: next(users, None)
    )
    assert_valid(str(path), run, budget, ("calculator",), answer=options.answer)


# ------------------------------------------------------------------ check-trace


def test_check_trace_names_the_first_step_outside_its_language() -> None:
    spec, dfa = load_agent(REACT)
    text = (
        "Question: q\nThought: t\nAction: calculator\nAction Input: 17% of 240\n"
        "Observation: Error\nFinal Thought: f\nAnswer: about 50\n"
    )
    rules = content_rules(spec, builtin_input_languages(["calculator"]), answer_language("number"))
    [result] = check_transcript(spec, dfa, text, rules=rules)
    assert result.violation is not None and result.violation.line == 4
    assert "'Action Input:' is not an arithmetic expression" in result.violation.message
    fixed = text.replace("17% of 240", "17% * 240")
    [result] = check_transcript(spec, dfa, fixed, rules=rules)
    assert result.violation is not None and result.violation.line == 7
    assert "is not a number such as 52.8 (number)" in result.violation.message
    [result] = check_transcript(spec, dfa, fixed.replace("about 50", "40.8"), rules=rules)
    assert result.ok
    # Without the answer language or the tools the same transcript is only checked for order.
    assert check_transcript(spec, dfa, text)[0].ok


def test_missing_spec_language_problem_is_a_spec_error(tmp_path: Path) -> None:
    bad = tmp_path / "bad.sexp"
    bad.write_text('(define a (:states (A (:text "A:") (:language nonsense))) (:behavior A))')
    with pytest.raises(SpecError) as info:
        load_agent(str(bad))
    assert "unknown language 'nonsense'" in str(info.value)


def test_a_json_schema_language_hands_its_schema_to_providers() -> None:
    schema = {"type": "object", "properties": {"n": {"type": "integer"}}}
    assert make_language("json-schema", schema).json_schema() == schema
    assert language_from_text('json-schema:{"type": "integer"}').json_schema() == {
        "type": "integer"
    }
    assert make_language("regex", "a+").json_schema() is None
    assert make_language("name", "number").json_schema() is None


@pytest.mark.parametrize(
    ("schema", "needle"),
    [
        ({"type": "object", "minProperties": 1}, "minProperties needs additionalProperties"),
        ({"type": "object", "additionalProperties": True}, "allows any value"),
        (
            {"type": "object", "properties": {"a": {"type": "integer"}},
             "additionalProperties": {"type": "integer"}},
            "works only without properties",
        ),
        ({"type": "object", "minProperties": True, "additionalProperties": {"type": "integer"}},
         "minProperties must be an integer from 0 to 1000"),
        ({"type": "array", "items": {"type": "integer"}, "minItems": 10**9}, "minItems must be"),
    ],
)  # fmt: skip
def test_schemas_the_languages_cannot_mean_are_refused(schema: dict, needle: str) -> None:
    with pytest.raises(LanguageError, match=needle):
        make_language("json-schema", schema)


def test_an_object_of_any_keys() -> None:
    language = make_language(
        "json-schema",
        {"type": "object", "minProperties": 2, "additionalProperties": {"type": "integer"}},
    )
    assert language.check('{"a": 1, "b": 2}') is None
    assert language.check('{"a": 1}') is not None and language.check('{"a": "x", "b": 1}')


@pytest.mark.parametrize(
    "spelling",
    ["arithmetic", "query", "number", r"regex:[A-Z][a-z]{2,5}( [0-9]+)?",
     'json-schema:{"type": "object", "properties": {"a": {"type": "integer"}}}',
     'gbnf:root ::= "(" root ")" | "x"'],
)  # fmt: skip
def test_a_built_text_always_belongs_to_its_language(spelling: str) -> None:
    """Whatever the chooser picks, the builder steers to a complete text of the language."""
    language = language_from_text(spelling)
    for seed in range(60):
        rng = random.Random(seed)
        text = language.build(lambda _, options, r=rng: r.randrange(len(options)), budget=30)
        assert language.check(text) is None, (spelling, text)
    always_more = language.build(lambda so_far, options: len(options) - 1, budget=10)
    assert language.check(always_more) is None and len(always_more) < 200


def test_a_one_line_state_stops_at_the_line_end_without_a_grammar(tmp_path: Path) -> None:
    """A state in the `line` language is enforced by a newline stop: no slow grammar sampling."""
    text = (
        Path(REACT)
        .read_text(encoding="utf-8")
        .replace(
            '(Thought (:text "Thought:") (:max-tokens 64))',
            '(Thought (:text "Thought:") (:language line) (:max-tokens 64))',
        )
    )
    assert "(:language line)" in text
    spec = tmp_path / "react_lines.sexp"
    spec.write_text(text, encoding="utf-8")

    def reply(prompt: str) -> str:
        if last_tag(prompt) == "Thought:":
            return "Compute it.\nthen a second line the spec does not allow"
        return good_react(prompt)

    model = GrammarRecorder(reply)
    model.strip_stops = True
    budget = Budget(20, 1)
    run = run_agent(str(spec), "What is 17% of 240, plus 12?", model, AgentOptions(budget=budget))
    assert dict(model.grammars)["Thought:"] is None
    thoughts = [s.text for s in run.steps if s.state == "Thought"]
    assert thoughts == ["Compute it."]
    assert run.stats.content_rejects == 0
    assert_valid(str(spec), run, budget, ("calculator",))

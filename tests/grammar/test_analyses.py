"""Unit tests of the grammar analyses, task compilation, PDA stepping and the look-ahead."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from fllm_cli import api
from fllm_cli.api import load_domain
from fllm_cli.automaton.lookahead import GrammarLookahead
from fllm_cli.automaton.pda import pda_from_grammar
from fllm_cli.domain.model import Domain, Limits, Modality, Task, Tool
from fllm_cli.errors import NoPlanError, UsageError
from fllm_cli.grammar.cfg import INF, Grammar, Production, Terminal
from fllm_cli.grammar.compile import make_task, parse_inputs, tool_grammar
from fllm_cli.kinds import check_domain
from fllm_cli.verify import verify_word

ROOT = Path(__file__).resolve().parents[2]
OPENAGI = ROOT / "domains" / "openagi.yaml"


def grammar(rules: dict[str, list[str]], terminals: dict[str, int | None], **kw: object) -> Grammar:
    """Build a grammar from ``{"S": ["a S b", ""]}`` (first key is the start symbol)."""
    prods = tuple(
        Production(lhs, tuple(alt.split())) for lhs, alts in rules.items() for alt in alts
    )
    nts = tuple(dict.fromkeys([*rules, *(s for p in prods for s in p.rhs if s not in terminals)]))
    terms = tuple(Terminal(name, limit=limit) for name, limit in terminals.items())
    return Grammar(next(iter(rules)), nts, terms, prods, **kw)  # type: ignore[arg-type]


MIXED = grammar(
    {"S": ["A B", "a"], "A": ["a A"], "B": ["b"], "C": ["c"], "D": ["", "d D"], "E": ["D D"]},
    {"a": None, "b": None, "c": None, "d": None},
)


def openagi_without(tmp_path: Path, *tools: str, extra: str = "") -> Path:
    """Write a copy of the OpenAGI domain with some tools removed."""
    lines = OPENAGI.read_text(encoding="utf-8").splitlines(keepends=True)
    out: list[str] = []
    skip = False
    for line in lines:
        if line.startswith("  - name: "):
            skip = line.removeprefix("  - name: ").strip() in tools
        elif not line.startswith("    "):
            skip = False
        if not skip:
            out.append(line)
    path = tmp_path / "openagi_cut.yaml"
    path.write_text("".join(out) + extra, encoding="utf-8")
    return path


# -- analyses --------------------------------------------------------------------------------


def test_productive() -> None:
    assert MIXED.productive == frozenset({"S", "B", "C", "D", "E"})


def test_reachable() -> None:
    assert MIXED.reachable == frozenset({"S", "A", "B", "a", "b"})


def test_nullable() -> None:
    assert MIXED.nullable == frozenset({"D", "E"})


def test_min_cost() -> None:
    cost = MIXED.min_cost(lambda t: 1)
    assert cost == {"S": 1, "A": INF, "B": 1, "C": 1, "D": 0, "E": 0}
    heavy_a = MIXED.min_cost(lambda t: 5 if t.name == "a" else 1)
    assert heavy_a["S"] == 5


def test_with_productions_keeps_the_rest() -> None:
    kept = MIXED.with_productions([0, 2])
    assert [str(p) for p in kept.productions] == ["S → A B", "A → a A"]
    assert kept.productive == frozenset({"C", "D", "E"} - {"C", "D", "E"})


def test_word_exists_with_limits() -> None:
    two_a = {"S": ["a a"]}
    assert not GrammarLookahead(pda_from_grammar(grammar(two_a, {"a": 1}))).word_exists()
    assert GrammarLookahead(pda_from_grammar(grammar(two_a, {"a": 2}))).word_exists()
    # a^n b^n with b limited to 2 uses still has words, but none containing 3 a's is needed.
    anbn = grammar({"S": ["", "a S b"]}, {"a": None, "b": 2})
    look = GrammarLookahead(pda_from_grammar(anbn))
    assert look.word_exists()
    assert look.word_exists(frozenset({"a", "b"}))
    pda = pda_from_grammar(anbn)
    assert verify_word(pda, ["a", "a", "b", "b"]).valid
    verdict = verify_word(pda, ["a", "a", "a", "b", "b", "b"])
    assert not verdict.valid
    assert verdict.position == 6
    assert "'b' is used more than 2 time(s), its limit" in verdict.reason


def test_word_exists_needs_a_reachable_terminal() -> None:
    look = GrammarLookahead(pda_from_grammar(MIXED))
    assert look.word_exists(frozenset({"a"}))
    assert not look.word_exists(frozenset({"c"}))  # C is unreachable
    assert not look.word_exists(frozenset({"b"}))  # only via the unproductive A


def test_openagi_every_tool_can_occur() -> None:
    domain = load_domain(OPENAGI)
    assert check_domain(domain) == []
    task = make_task(domain, "", ["image"], "text")
    look = GrammarLookahead(pda_from_grammar(tool_grammar(domain, task)))
    for tool in domain.tools:
        assert look.word_exists(frozenset({tool.name})), tool.name


def test_tool_that_can_never_occur(tmp_path: Path) -> None:
    # Without any tool producing text, Text Summarization (text → text) needs a text input.
    path = openagi_without(
        tmp_path,
        "Image Classification",
        "Image Captioning",
        "Object Detection",
        extra="",
    )
    text = path.read_text(encoding="utf-8").replace(
        "task:\n  inputs: [image, text]", "task:\n  inputs: [image]"
    )
    path.write_text(text, encoding="utf-8")
    diags = check_domain(load_domain(path))
    never = sorted(d.message for d in diags if "can never occur" in d.message)
    assert never == [
        f"tool '{name}' can never occur in a plan of the task interface"
        for name in sorted(
            [
                "Fill Mask",
                "Machine Translation",
                "Question Answering",
                "Sentiment Analysis",
                "Text Generation",
                "Text Summarization",
                "Text to Image Generation",
                "Visual Question Answering",
            ]
        )
    ]
    assert all(d.severity == "warning" for d in diags)


def test_task_with_no_plan(tmp_path: Path) -> None:
    path = openagi_without(tmp_path, "Text to Image Generation")
    domain = load_domain(path)  # the domain itself is fine: image → image still works
    problem = api.compile_problem(domain, inputs=["text"], output="image")
    assert not problem.lookahead.word_exists()
    with pytest.raises(NoPlanError, match="no valid plan can produce an image output"):
        api.check_solvable(problem)
    with pytest.raises(NoPlanError):
        api.plan(problem, "random:1")
    # The shipped domain has a plan for the same task.
    full = api.compile_problem(str(OPENAGI), inputs=["text"], output="image")
    api.check_solvable(full)


def test_max_plan_steps_caps_tool_count(tmp_path: Path) -> None:
    path = openagi_without(tmp_path, extra="")
    text = path.read_text(encoding="utf-8").replace(
        "  max_uses: 1\n", "  max_uses: 1\n  max_plan_steps: 1\n"
    )
    path.write_text(text, encoding="utf-8")
    problem = api.compile_problem(str(path), inputs=["image"], output="text")
    assert problem.grammar.max_tools == 1
    look = problem.lookahead
    assert look.word_exists(frozenset({"Image Captioning"}))
    assert not look.word_exists(frozenset({"Image Captioning", "Colorization"}))
    verdict = api.verify(problem, ["Image Captioning", "Colorization", "input:image"])
    assert not verdict.valid
    assert verdict.position == 2
    assert "more than 1 tool steps" in verdict.reason


# -- task compilation ------------------------------------------------------------------------


def test_parse_inputs_naming() -> None:
    assert parse_inputs(["image"]) == (("image", "image"),)
    assert parse_inputs(["text", "text", "text"]) == (
        ("text", "text"),
        ("text_2", "text"),
        ("text_3", "text"),
    )
    assert parse_inputs(["query=text", " doc = text "]) == (("query", "text"), ("doc", "text"))


@pytest.mark.parametrize(
    ("specs", "message"),
    [
        (["=text"], "bad --input '=text'"),
        (["query="], "bad --input 'query='"),
        (["x=text", "x=image"], "two task inputs are named 'x'"),
        (["my doc=text"], "must not contain spaces"),
    ],
)
def test_parse_inputs_errors(specs: list[str], message: str) -> None:
    with pytest.raises(UsageError, match=message):
        parse_inputs(specs)


def test_make_task_checks_the_interface() -> None:
    domain = load_domain(OPENAGI)
    task = make_task(domain, "caption it", ["image"], "text")
    assert task == Task("caption it", (("image", "image"),), "text")
    with pytest.raises(UsageError, match=r"unknown modality 'imgae' \(did you mean 'image'\?\)"):
        make_task(domain, "", ["imgae"], "text")
    with pytest.raises(
        UsageError, match=r"unknown output modality 'txt' \(did you mean 'text'\?\)"
    ):
        make_task(domain, "", ["image"], "txt")
    with pytest.raises(UsageError, match="--output is required"):
        make_task(domain, "", ["image"], None)
    with pytest.raises(UsageError, match="at least one --input"):
        make_task(domain, "", [], "text")


def test_tool_grammar_shape() -> None:
    domain = load_domain(OPENAGI)
    g = tool_grammar(domain, make_task(domain, "", ["image", "query=text"], "text"))
    assert g.start == "text"
    assert g.nonterminals == ("image", "text")
    assert g.require_tool
    assert g.terminal["Colorization"].limit == 1
    assert g.terminal["Colorization"].role == "tool"
    assert g.terminal["input:query"].role == "input"
    assert g.terminal["input:query"].limit is None
    vqa = next(p for p in g.productions if p.rhs[0] == "Visual Question Answering")
    assert vqa == Production(
        "text", ("Visual Question Answering", "image", "text"), vqa.description
    )
    assert Production("text", ("input:query",), "the task's input query (text)") in g.productions


# -- PDA -------------------------------------------------------------------------------------


def test_pda_configs_are_immutable_and_step_returns_new_ones() -> None:
    pda = pda_from_grammar(grammar({"S": ["", "a S b"]}, {"a": 1, "b": None}))
    start = pda.initial()
    with pytest.raises(dataclasses.FrozenInstanceError):
        start.state = "q1"  # type: ignore[misc]
    first = pda.step(start, 0)
    assert first is not None
    assert start.state == "q0" and first.state == "q1"
    assert [s.symbol for s in first.stack] == [pda.bottom, "S"]
    fused = next(i for i, t in enumerate(pda.transitions) if t.read == "a")
    after_a = pda.step(first, fused)
    assert after_a is not None
    assert after_a.word_list() == ["a"] and after_a.counts == (1,)
    assert first.word_list() == [] and first.counts == (0,)
    # Pushing S b then expanding S → a S b again would read a second 'a': over its limit.
    assert pda.step(after_a, fused) is None
    assert hash(after_a) == hash(dataclasses.replace(after_a))


def test_pda_run_visits_configurations_along_the_word() -> None:
    pda = pda_from_grammar(grammar({"S": ["", "a S b"]}, {"a": None, "b": None}))
    positions = {pos for pos, _ in pda.run(["a", "b"])}
    assert positions == {0, 1, 2}
    accepting = [c for pos, c in pda.run(["a", "b"]) if pos == 2 and pda.is_accepting(c)]
    assert len(accepting) == 1


def test_plan_needs_a_tool_step() -> None:
    domain = load_domain(OPENAGI)
    problem = api.compile_problem(domain, inputs=["image"], output="image")
    verdict = api.verify(problem, ["input:image"])
    assert not verdict.valid
    assert verdict.reason == "a plan must contain at least one tool step"
    lenient = dataclasses.replace(domain, limits=Limits(allow_empty_plan=True))
    assert api.verify(
        api.compile_problem(lenient, inputs=["image"], output="image"), ["input:image"]
    ).valid


def test_left_recursive_grammar_verifies_quickly() -> None:
    # A → A x | A y | a: a plain search over the stack would branch exponentially.
    g = grammar({"A": ["A x", "A y", "a"]}, {"a": None, "x": None, "y": None, "z": None})
    pda = pda_from_grammar(g)
    word = ["a"] + ["x", "y"] * 12
    verdict = verify_word(pda, word)
    assert verdict.valid
    assert verdict.derivation is not None and verdict.derivation.word == word
    bad = verify_word(pda, [*word[:-1], "z"])
    assert not bad.valid
    assert bad.position == len(word)
    assert bad.reason == "'z' is not allowed here"


# -- look-ahead ------------------------------------------------------------------------------


def trap_domain() -> tuple[Domain, Task]:
    """V needs two images, but the only image maker B may run once: V is a dead end."""
    tools = (
        Tool("V", "", ("image", "image"), "text", 2),
        Tool("B", "", ("text",), "image", 1),
        Tool("C", "", ("text",), "text", 1),
    )
    domain = Domain(
        "<trap>", "trap", "", "tools", (Modality("image", "image"), Modality("text", "text")), tools
    )
    return domain, Task("", (("text", "text"),), "text")


def test_feasible_moves_avoid_dead_ends() -> None:
    pda = pda_from_grammar(tool_grammar(*trap_domain()))
    look = GrammarLookahead(pda)
    start = pda.step(pda.initial(), 0)
    assert start is not None
    offered = {pda.transitions[i].read for i, _ in look.feasible_moves(start)}
    possible = {
        pda.transitions[i].read for i in pda.applicable(start) if pda.step(start, i) is not None
    }
    assert possible == {"V", "C", "input:text"}
    assert offered == {"C"}  # input:text alone has no tool step; V can never be finished
    assert look.stats.queries > 0


def test_lookahead_counts_pending_terminals() -> None:
    pda = pda_from_grammar(tool_grammar(*trap_domain()))
    look = GrammarLookahead(pda)
    config = pda.initial()
    word = ["C", "input:text"]
    for symbol in word:
        moves = [
            (i, c)
            for i, c in look.feasible_moves(config)
            if pda.transitions[i].read in (None, symbol)
        ]
        config = moves[0][1]
        while not pda.transitions[moves[0][0]].read:
            moves = look.feasible_moves(config)
            config = moves[0][1]
    while not pda.is_accepting(config):
        config = look.feasible_moves(config)[0][1]
    assert config.word_list() == word
    assert look.completable(config)


def test_tool_cap_with_unlimited_tools() -> None:
    # Found by the look-ahead property: the cap's budget must count in the lower bound.
    domain = Domain(
        "<cap>",
        "cap",
        "",
        "tools",
        (Modality("m0", "m0"), Modality("m1", "m1")),
        (Tool("T0", "", ("m1",), "m0", None),),
        limits=Limits(max_uses=1, max_plan_steps=1),
    )
    pda = pda_from_grammar(tool_grammar(domain, Task("", (("x0", "m1"),), "m0")))
    look = GrammarLookahead(pda)
    assert look.word_exists()
    assert verify_word(pda, ["T0", "input:x0"]).valid


def test_unlimited_tool_loops_do_not_recurse_for_ever() -> None:
    # m1 → T1 m1 is free and unlimited; a tool step is still required.
    tools = (Tool("T1", "", ("m1",), "m1", None), Tool("T0", "", ("m1",), "m0", 1))
    domain = Domain(
        "<loop>", "loop", "", "tools", (Modality("m0", "m0"), Modality("m1", "m1")), tools
    )
    look = GrammarLookahead(pda_from_grammar(tool_grammar(domain, Task("", (("x", "m1"),), "m1"))))
    assert look.word_exists()
    assert look.word_exists(frozenset({"T1"}))
    assert not look.word_exists(frozenset({"T0"}))


def test_long_chains_of_limited_tools_do_not_hit_the_recursion_limit() -> None:
    count = 700
    tools = tuple(Tool(f"t{i}", "", ("m",), "m", 1) for i in range(count))
    domain = Domain("<chain>", "chain", "", "tools", (Modality("m", "m"),), tools)
    look = GrammarLookahead(pda_from_grammar(tool_grammar(domain, Task("", (("x", "m"),), "m"))))
    assert look.word_exists(frozenset({f"t{count - 1}"}))

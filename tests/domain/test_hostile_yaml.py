"""YAML read as untrusted input: deep nesting, alias bombs, self-referring aliases, huge numbers.

Each must end in a located error from the real entry point, never a traceback, a hang or
gigabytes of memory (the subprocess has a time limit; the reader has node and depth bounds).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from fllm_cli.domain.yamlloc import MAX_DEPTH, MAX_NODES, load
from fllm_cli.errors import FllmError
from fllm_cli.prompts import render_string
from tests.conftest import ROOT, run_fllm


def _laughs(levels: int) -> str:
    lines = ["a: &a [x, x, x, x, x, x, x, x, x]"]
    for i in range(levels):
        prev, name = chr(97 + i), chr(98 + i)
        lines.append(f"{name}: &{name} [{', '.join(['*' + prev] * 9)}]")
    return "name: bomb\n" + "\n".join(lines) + "\n"


CASES = {
    "deep-flow": ("name: x\nmodalities: " + "[" * 3000 + "]" * 3000 + "\n", "nested deeper"),
    "deep-block": (
        "name: x\nm:\n" + "".join("  " * (i + 1) + f"k{i}:\n" for i in range(400)) + "  v\n",
        "nested deeper",
    ),
    "alias-bomb": (_laughs(8), f"more than {MAX_NODES} values"),
    "recursive-alias": ("name: x\nmodalities: &m {image: *m}\n", "refers to a node"),
    "huge-integer": ("name: x\nlimits: {max_uses: " + "9" * 4301 + "}\n", "bad value"),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_validate_reports_hostile_yaml_in_one_located_error(case: str, tmp_path: Path) -> None:
    text, needle = CASES[case]
    spec = tmp_path / f"{case}.yaml"
    spec.write_text(text, encoding="utf-8")
    code, out, err = run_fllm("validate", str(spec), timeout=60)
    assert code == 1, out + err
    assert needle in out and f"{spec}:" in out
    assert "Traceback" not in out + err and "internal error" not in out + err


@pytest.mark.parametrize("command", ["plan", "render-pda"])
def test_other_commands_refuse_the_same_files(command: str, tmp_path: Path) -> None:
    spec = tmp_path / "bomb.yaml"
    spec.write_text(_laughs(8), encoding="utf-8")
    args = [command, str(spec)] + (["t", "--model", "random:1"] if command == "plan" else [])
    code, _, err = run_fllm(*args, timeout=60)
    assert code == 1 and "values" in err and "Traceback" not in err


def test_aliases_that_stay_small_still_work() -> None:
    tree, diags = load("base: &b {phrase: an image}\nimage: *b\ntext: *b\n", "ok.yaml")
    assert not diags and tree is not None
    assert tree.plain() == {
        "base": {"phrase": "an image"},
        "image": {"phrase": "an image"},
        "text": {"phrase": "an image"},
    }


def test_depth_at_the_limit_is_read() -> None:
    text = "v: " + "[" * (MAX_DEPTH - 2) + "1" + "]" * (MAX_DEPTH - 2) + "\n"
    tree, diags = load(text, "ok.yaml")
    assert not diags and tree is not None


FAMILY = """\
name: fam
kind: automaton
automaton:
  start: A
  accept: {{states: [B]}}
  states:
    - A
    - for: {{k: {family}}}
      name: "{name}"
    - B
  transitions:
    - {{from: A, to: B, input: go}}
"""


@pytest.mark.parametrize(
    "family, name, needle",
    [
        ("{from: 1, to: 100000000}", "s{{ k }}", "takes 100000000 values"),
        # more values than a C size can count (len() of the range overflows)
        ("{from: -9223372036854775808, to: 2}", "s{{ k }}", "takes 9223372036854775811 values"),
        ("{from: 5, to: -1000000000000000000000000000000, step: -3}", "s{{ k }}", "at most"),
        ("[1]", "{{ 'x' * 3000000000 }}", "more than 1000000 items"),
        ("[1]", "{{ 2 ** 1000000 }}", "exponent larger"),
        ("{from: 1, to: 3, except: [[1]]}", "s{{ k }}", "takes single values"),
        ("'range(1, 10**9)'", "s{{ k }}", "Range too big"),
        ("[1]", "{% for x in range(10**9) %}{% endfor %}s", "Range too big"),
        ("[1]", "s{{ 1 // 0 }}", "ZeroDivisionError"),
        ("[1]", "s{{ 'a' + 1 }}", "TypeError"),
    ],
)
def test_families_are_bounded(family: str, name: str, needle: str, tmp_path: Path) -> None:
    spec = tmp_path / "fam.yaml"
    spec.write_text(FAMILY.format(family=family, name=name), encoding="utf-8")
    code, out, err = run_fllm("validate", str(spec), timeout=60)
    assert code == 1 and needle in out, out + err
    assert "Traceback" not in out + err and "internal error" not in out + err


def test_a_huge_set_is_refused_with_the_cap(tmp_path: Path) -> None:
    elements = ", ".join(f"e{i}" for i in range(3000))
    spec = tmp_path / "set.yaml"
    spec.write_text(
        "name: s\nkind: grammar\ngrammar:\n  start: S\n  terminals: [a]\n"
        f"  sets:\n    A: {{elements: [{elements}]}}\n  productions:\n    S: [a A]\n",
        encoding="utf-8",
    )
    code, out, _ = run_fllm("validate", str(spec), timeout=60)
    assert code == 1 and "has 3000 elements; at most 200" in out


def test_a_state_named_by_a_mapping_is_an_error_not_an_object_dump(tmp_path: Path) -> None:
    spec = tmp_path / "dup.yaml"
    spec.write_text(
        FAMILY.format(family="[1]", name="s").replace('      name: "s"', "      name: {a: 1}"),
        encoding="utf-8",
    )
    code, out, _ = run_fllm("validate", str(spec), timeout=60)
    assert code == 1 and "expected a name or text, got a mapping" in out
    assert "Node(" not in out


@pytest.mark.parametrize(
    "source, needle",
    [
        ("{% for x in range(10**9) %}{% endfor %}", "Range too big"),
        ("{{ 1 // 0 }}", "ZeroDivisionError"),
        ("{{ 'a' + 1 }}", "TypeError"),
        ("{{ 'x' * 3000000000 }}", "more than 1000000 items"),
        # widths and padding that would build gigabytes (a second round of hostile input)
        ("{{ '%3000000000d' % 1 }}", "format width or precision above"),
        ("{{ '%*d' % (3000000000, 1) }}", "format width or precision above"),
        ("{{ '%.3000000000f'|format(1) }}", "format width or precision above"),
        ("{{ '{:>3000000000}'.format('x') }}", "format width or precision above"),
        ("{{ '{:>{w}}'.format('x', w=3000000000) }}", "format width or precision above"),
        ("{{ 'x'|center(3000000000) }}", "center width above"),
        ("{{ 'a'|indent(3000000000) }}", "indent width above"),
        ("{% set s = 'x' * 900000 %}{{ s + s }}", "more than 1000000 items"),
        # string growth by '~', which the sandbox's operator hooks do not see
        (
            "{% set ns = namespace(s='xxxxxxxxxx') %}{% for i in range(60) %}"
            "{% set ns.s = ns.s ~ ns.s %}{% endfor %}{{ ns.s|length }}",
            "more than 1000000 items",
        ),
        # output beyond the render bound, written a little at a time
        (
            "{% for i in range(100000) %}{% for j in range(100) %}xxxxxxxxxxxxxxxxxxxx"
            "{% endfor %}{% endfor %}",
            "wrote more than 2000000 characters",
        ),
    ],
)
def test_inline_templates_fail_as_the_template_s_fault(source: str, needle: str) -> None:
    with pytest.raises(FllmError, match=needle) as info:
        render_string(source, {}, what="the greeting")
    assert str(info.value.message).startswith("the greeting: ")


def test_nested_loops_stop_at_the_render_time_bound(monkeypatch: pytest.MonkeyPatch) -> None:
    """Ten billion empty iterations would run for hours; the render stops at its bound."""
    from fllm_cli import prompts

    monkeypatch.setattr(prompts, "MAX_RENDER_SECONDS", 0.2)
    source = "{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}"
    with pytest.raises(FllmError, match=r"the template ran longer than 0\.2 s"):
        render_string(source, {}, what="the greeting")


@pytest.mark.parametrize(
    ("source", "text"),
    [
        ("{{ range(5)|list }} {{ range(4)|length }} {{ range(3)|reverse|list }}",
         "[0, 1, 2, 3, 4] 4 [2, 1, 0]"),
        ("{% for i in range(3) %}{{ loop.index }}/{{ loop.length }} {% endfor %}",
         "1/3 2/3 3/3 "),
        ("{{ 'a' ~ 1 ~ none }}{{ (range(10)[2:4])|list }}", "a1None[2, 3]"),
    ],
)  # fmt: skip
def test_ranges_and_joins_behave_as_before_inside_the_bounds(source: str, text: str) -> None:
    assert render_string(source, {}) == text


def test_plan_analyses_stop_at_their_time_bound(monkeypatch: pytest.MonkeyPatch) -> None:
    from fllm_cli import api
    from fllm_cli.kinds import tools

    domain = api.load_domain("domains/openagi.yaml")
    monkeypatch.setattr(tools, "ANALYSIS_SECONDS", -1.0)  # already past the bound
    (only,) = tools.tool_plan_analyses(domain)
    assert only.severity == "warning" and "plan analyses stopped after" in only.message
    monkeypatch.setattr(tools, "ANALYSIS_SECONDS", 60.0)
    assert tools.tool_plan_analyses(domain) == []  # a sound domain: nothing to say


def test_thousands_of_mistakes_draw_fifty_and_count_the_rest(tmp_path: Path) -> None:
    one = (ROOT / "domains" / "risk_management.yaml").read_text(encoding="utf-8")
    spec = tmp_path / "many.yaml"
    spec.write_text(one * 40, encoding="utf-8")  # every top-level key repeated 39 times
    code, out, err = run_fllm("validate", str(spec), timeout=120)
    assert code == 1 and "Traceback" not in out + err
    drawn = [line for line in out.splitlines() if ": error: duplicate key" in line]
    total = int(re.search(r"; (\d+) error\(s\)", out).group(1))  # type: ignore[union-attr]
    assert len(drawn) == 50 and total > 200
    assert f"... and {total - 50:,} more (--format json lists them all)" in out
    code, out, _ = run_fllm("validate", str(spec), "--format", "json", timeout=120)
    listed = json.loads(out)["files"][0]["diagnostics"]
    assert len(listed) == total


@pytest.mark.slow
def test_a_use_limit_that_caps_nothing_does_not_make_planning_quadratic() -> None:
    # Fuzz seed 25: `max_uses: 1000000000000` made every pending symbol count against a limit
    # nothing reaches, so look-ahead searches deepened with lists of thousands of symbols
    # (1.5 s per move, minutes in all). A query now gives up past 256 pending symbols.
    folder = ROOT / "fuzz" / "findings" / "seed25" / "timeout-domain-tools-09940"
    code, _, err = run_fllm(
        "plan", str(folder / "d.yaml"), "ünï ✓", "-i", "q0=m1", "--output", "vector",
        "--model", "random:39009", "-q", timeout=60,
    )  # fmt: skip
    assert code in (0, 1) and "internal error" not in err and "Traceback" not in err


@pytest.mark.parametrize(
    ("source", "text"),
    [
        ("{{ 'a %05.1f b' % 3.14159 }}", "a 003.1 b"),
        ("{{ '{:>4}|{}'.format('x', 2) }}", "   x|2"),
        ("{{ 'x'|center(5) }}", "  x  "),
        ("{{ '%s-%s'|format('a', 'b') }}", "a-b"),
        ("{{ 'ab' + 'cd' }}{{ [1] + [2] }}", "abcd[1, 2]"),
    ],
)
def test_ordinary_formatting_still_works(source: str, text: str) -> None:
    assert render_string(source, {}) == text


def test_a_diagnostic_on_a_huge_line_shows_a_window_of_it(tmp_path: Path) -> None:
    path = tmp_path / "big.yaml"
    path.write_text("name: big\ndescription: " + "x" * 3_000_000 + " : : bad\n")
    result = run_fllm("validate", str(path))
    assert result.code != 0
    text = result.out + result.err
    assert f"{path}:2:3000015: error: YAML syntax error" in text
    assert len(text) < 2000 and "…" in text and ": : bad" in text


@pytest.mark.parametrize(
    "reproducer", sorted((ROOT / "fuzz" / "findings" / "templates").glob("*.yaml")), ids=str
)
def test_template_bomb_reproducers_fail_cleanly_at_validate_and_plan(reproducer: Path) -> None:
    """The fuzz corpus's template bombs: a located error at validate, a clean exit 1 at plan."""
    code, out, err = run_fllm("validate", str(reproducer), timeout=60)
    assert code == 1 and "Traceback" not in out + err
    assert f"{reproducer}:6:8: error: intro: " in out
    code, out, err = run_fllm(
        "plan", str(reproducer), "say it", "-i", "text", "--output", "text",
        "--search", "greedy", "--model", "random:1", timeout=60,
    )  # fmt: skip
    assert code == 1 and err.startswith("error: ") and "intro: " in err
    assert "internal error" not in err and "Traceback" not in err

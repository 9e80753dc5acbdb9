"""The witness pass of `fllm validate` agrees with the search it replaces, and is linear."""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from fuzz.generate import dump_yaml, tool_domain

from fllm_cli import api
from fllm_cli.kinds import tools
from fllm_cli.kinds.tool_witness import Witnesses, tool_verdicts

ROOT = Path(__file__).resolve().parents[2]


def _searched_only(domain):  # type: ignore[no-untyped-def]
    """The analyses as they were: every question answered by the look-ahead search."""

    def undecided(w, output, settled=frozenset()):  # type: ignore[no-untyped-def]
        return None, {t.name: None for t in w.domain.tools if t.name not in settled}

    original = tools.tool_verdicts
    tools.tool_verdicts = undecided
    try:
        return tools.tool_plan_analyses(domain)
    finally:
        tools.tool_verdicts = original


def _domain(seed: int, tmp_path: Path):  # type: ignore[no-untyped-def]
    doc = tool_domain(random.Random(seed), bend=0.0)
    doc.pop("intro", None)
    path = tmp_path / f"d{seed}.yaml"
    path.write_text(dump_yaml(doc), encoding="utf-8")
    try:
        return api.load_domain(str(path))
    except Exception:
        return None


@pytest.mark.parametrize("seed", range(120))
def test_witnesses_agree_with_the_search(
    seed: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    domain = _domain(seed, tmp_path)
    if domain is None:
        pytest.skip("the generator made a domain the loader refuses")
    # The search alone can take seconds on a busy machine; the wall-clock budget of the
    # analyses would then end it early (a CI run under load did), and the two would differ by
    # the clock, not by what they decide.
    monkeypatch.setattr(tools, "ANALYSIS_SECONDS", 600.0)
    fast = [(d.severity, d.message) for d in tools.tool_plan_analyses(domain)]
    slow = [(d.severity, d.message) for d in _searched_only(domain)]
    assert fast == slow


def test_a_limit_the_witness_breaks_is_left_to_the_search() -> None:
    """OpenAGI's tools may each be used once: a witness needing one twice decides nothing."""
    domain = api.load_domain(str(ROOT / "domains" / "openagi.yaml"))
    w = Witnesses(domain, frozenset({"image", "text"}))
    exists, verdicts = tool_verdicts(w, "text")
    assert exists is True
    assert verdicts and all(v is True for v in verdicts.values())  # every tool, no search


def test_validate_of_a_big_domain_needs_no_search(tmp_path: Path) -> None:
    """4,000 tools over 12 types: every verdict comes from the witnesses (no time bound hit)."""
    rng = random.Random(5)
    mods = [f"m{i}" for i in range(12)]
    lines = ["fllm: 1", "name: big", f"modalities: [{', '.join(mods)}]", "tools:"]
    for i in range(4000):
        ins = ", ".join(rng.sample(mods, rng.choice([1, 1, 2])))
        lines.append(f"  - {{name: T{i}, inputs: [{ins}], output: {rng.choice(mods)}}}")
    path = tmp_path / "big.yaml"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    diagnostics, _ = api.diagnose_domain(str(path))
    assert [d.message for d in diagnostics] == []


@pytest.mark.parametrize(
    "path",
    sorted((ROOT / "domains").rglob("*.yaml")) + sorted((ROOT / "tests/data").rglob("*.yaml")),
    ids=lambda p: str(p.relative_to(ROOT)),
)
def test_libyaml_reads_every_file_as_the_python_parser_does(
    path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Values, locations and diagnostics are the same with and without libyaml."""
    from fllm_cli.domain import yamlloc

    text = path.read_text(encoding="utf-8")

    def located(node):  # type: ignore[no-untyped-def]
        if node is None:
            return None
        kids = node.value
        if isinstance(kids, dict):
            kids = {k: (located(v), node.key_locs[k]) for k, v in kids.items()}
        elif isinstance(kids, list):
            kids = [located(v) for v in kids]
        return (kids, node.loc)

    fast = yamlloc.load(text, "f.yaml")
    monkeypatch.setattr(yamlloc, "_Fast", None)
    slow = yamlloc.load(text, "f.yaml")
    assert located(fast[0]) == located(slow[0])
    assert fast[1] == slow[1]


def test_a_spec_file_over_the_size_bound_is_one_located_error(tmp_path: Path) -> None:
    from fllm_cli.textio import MAX_SPEC_BYTES
    from tests.conftest import run_fllm

    spec = tmp_path / "huge.yaml"
    spec.write_text("a" * (MAX_SPEC_BYTES + 10), encoding="utf-8")
    for command in ("validate", "plan"):
        code, out, err = run_fllm(command, str(spec), *(["x"] if command == "plan" else []))
        assert code == 1 and "Traceback" not in out + err
        assert (
            f"{spec}: " in out + err
            and "the file is 8.0 MB; fllm reads such files up to 8 MB" in out + err
        )


@pytest.mark.parametrize(
    "text",
    [
        "",
        "just text\n",
        "a: 1\na: 2\n",  # a duplicate key
        "yes: 1\n2: two\nnull: x\n",  # keys that are not strings
        "a: &x [1, 2]\nb: *x\n",  # an anchor and an alias
        "a: {}\nb: []\nc:\nd: ~\ne: 1.5\nf: 0x10\ng: 2001-02-30\n",  # a bad date
        "? [1, 2]\n: complex key\n",
        "--- 1\n--- 2\n",  # two documents
        "a: [1, [2, [3, {b: c}]]]\n",
        "'quoted': \"é\\u00e9\"\nmulti: |\n  line one\n  line two\n",
        "x: " + "[" * 70 + "]" * 70 + "\n",  # deeper than the bound
    ],
)
def test_the_direct_builder_agrees_with_the_composer(
    text: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from fllm_cli.domain import yamlloc

    def shape(result):  # type: ignore[no-untyped-def]
        node, diags = result

        def located(n):  # type: ignore[no-untyped-def]
            if isinstance(n.value, dict):
                return ({k: (located(v), n.key_locs.get(k)) for k, v in n.value.items()}, n.loc)
            if isinstance(n.value, list):
                return ([located(v) for v in n.value], n.loc)
            return (n.value, n.loc)

        return (None if node is None else located(node)), diags

    fast = shape(yamlloc.load(text, "f.yaml"))
    monkeypatch.setattr(yamlloc, "_Fast", None)
    assert fast == shape(yamlloc.load(text, "f.yaml"))

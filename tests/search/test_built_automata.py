"""Interface automata kept across requests: per thread, per domain, bounded, and let go of the
configurations each request searched."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from fllm_cli import api
from fllm_cli.automaton import lookahead as lookahead_module
from fllm_cli.llm.simple import RandomModel
from fllm_cli.search import interface
from fllm_cli.search.strategy import strategy

ROOT = Path(__file__).resolve().parents[2]
OPENAGI = str(ROOT / "domains" / "openagi.yaml")
KITCHEN = """\
fllm: 1
name: kitchen
description: Turn ingredients into a dish.
modalities:
  food: {phrase: food}
  drink: {phrase: drink}
tools:
  - {name: Slicer, description: cuts bread or fruit into thin slices, inputs: [food], output: food}
  - {name: Toaster, description: browns sliced bread until crisp, inputs: [food], output: food}
  - {name: Juicer, description: presses fruit into juice, inputs: [food], output: drink}
  - {name: Blender, description: mixes fruit into juice, inputs: [food, drink], output: drink}
  - {name: Freezer, description: chills a drink until icy, inputs: [drink], output: drink}
"""
REQUESTS = [
    "Given some fruit, how do I get a drink that is icy?",
    "I have bread and want crisp toast",
    "blend my fruit with some juice",
]


def _reset() -> None:
    interface._BUILT.__dict__.pop("store", None)


@pytest.fixture(autouse=True)
def _fresh() -> Iterator[None]:
    _reset()
    yield
    _reset()


def _read(domain: api.Domain, text: str) -> tuple[list[str], str]:
    inputs, output, _ = interface.infer_interface(
        domain, text, RandomModel(0), [], strategy("words")
    )
    return inputs, output


def test_a_kept_domain_reads_every_request_as_a_fresh_one_does(tmp_path: Path) -> None:
    path = tmp_path / "kitchen.yaml"
    path.write_text(KITCHEN, encoding="utf-8")
    domain = api.load_domain(str(path))
    fresh = []
    for text in REQUESTS:
        _reset()
        fresh.append(_read(domain, text))
    _reset()
    kept = [_read(domain, text) for text in REQUESTS + REQUESTS]
    assert kept == fresh + fresh
    built = interface.compiled_for(domain)
    assert built  # the automata were kept for the next request ...
    for _, lookahead in built.values():  # ... without the configurations searched
        assert not lookahead._prefixes._seen and not lookahead._words


def test_each_thread_keeps_its_own_and_only_the_two_latest_domains(tmp_path: Path) -> None:
    path = tmp_path / "kitchen.yaml"
    path.write_text(KITCHEN, encoding="utf-8")
    kitchen = api.load_domain(str(path))
    openagi = api.load_domain(OPENAGI)
    _reset()
    mine = interface.compiled_for(kitchen)
    theirs: list[interface.Compiled] = []
    worker = threading.Thread(target=lambda: theirs.append(interface.compiled_for(kitchen)))
    worker.start()
    worker.join()
    assert theirs[0] is not mine  # a look-ahead is never queried from two threads
    assert interface.compiled_for(kitchen) is mine
    again = api.load_domain(str(path))  # a new Domain object read from the same file
    assert interface.compiled_for(again) is mine
    interface.compiled_for(openagi)
    interface.compiled_for(kitchen)  # kitchen is now the most recent, openagi the older
    other = tmp_path / "other.yaml"
    other.write_text(KITCHEN.replace("chills a drink until icy", "warms a drink"), "utf-8")
    interface.compiled_for(api.load_domain(str(other)))
    store = interface._BUILT.store
    assert len(store) == interface.BUILT_DOMAINS == 2
    assert interface.compiled_for(kitchen) is mine  # kept: openagi went instead
    assert interface._domain_key(openagi) not in store


def test_openagi_plans_the_same_with_its_automata_kept() -> None:
    """OpenAGI's look-aheads run out of nodes on some queries: a warm memo must not change what
    is read (only proven states are kept)."""
    domain = api.load_domain(OPENAGI)
    texts = [
        "Given a noisy blurry grayscale image, return its caption in German",
        "Translate my English story into French and summarise it",
        "Make a picture from my prompt, then answer my question about it",
        "What is in this low resolution photo?",
    ]
    fresh = []
    for text in texts:
        _reset()
        fresh.append(_read(domain, text))
    _reset()
    assert [_read(domain, t) for t in texts + texts] == fresh + fresh


def test_release_restarts_the_squeezed_budget_and_bounds_the_memo(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "kitchen.yaml"
    path.write_text(KITCHEN, encoding="utf-8")
    domain = api.load_domain(str(path))
    _read(domain, REQUESTS[0])
    built = interface.compiled_for(domain)
    for _, lookahead in built.values():
        lookahead.squeezed = 7  # as after a search that ran out of nodes
    assert any(lookahead.memo for _, lookahead in built.values())
    monkeypatch.setattr(lookahead_module, "MEMO_KEPT", 0)
    _read(domain, REQUESTS[1])
    for _, lookahead in built.values():
        assert lookahead.squeezed is None and not lookahead.memo


def test_an_edited_domain_gets_new_automata(tmp_path: Path) -> None:
    path = tmp_path / "kitchen.yaml"
    path.write_text(KITCHEN, encoding="utf-8")
    before = interface.compiled_for(api.load_domain(str(path)))
    path.write_text(KITCHEN + "limits: {use_every_input: false}\n", encoding="utf-8")
    assert interface.compiled_for(api.load_domain(str(path))) is not before
    path.write_text(KITCHEN.replace("output: drink}", "output: food}", 1), encoding="utf-8")
    assert interface.compiled_for(api.load_domain(str(path))) is not before

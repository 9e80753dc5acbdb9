"""A capable model reads the request once and proposes the interface and tools; the automaton
turns the proposal into the best valid plan (tests against the stub server on 127.0.0.1)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from fllm_cli import api
from fllm_cli.search.proposal import Proposal, parse, schema
from tests.conftest import run_fllm
from tests.stub_server import StubServer

ENV = {"OPENAI_API_KEY": "sk-test", "FLLM_NO_CACHE": "1"}


def _plan(openagi: str, base: str, request: str, out: Path, *extra: str) -> tuple[int, str]:
    code, _, err = run_fllm(
        "plan", openagi, request, "--model", "openai/stub", "--api-base", base, "--retries",
        "0", "-o", str(out), "-q", *extra, env=ENV,
    )  # fmt: skip
    return code, err


@pytest.mark.slow
def test_the_models_proposal_decides_and_the_automaton_repairs_it(
    openagi: str, stub_server: StubServer, tmp_path: Path
) -> None:
    # The model reads "make it look like a painting, then tell me what is in it" (nothing a
    # tool description says) as image -> text with Colorization and Image Captioning, and also
    # names Question Answering, which has no place in a plan from one image.
    tools = ["Colorization", "Image Captioning", "Question Answering", "Teleporter"]
    reply = {"inputs": ["image"], "output": "text", "tools": tools}
    stub_server.play(f"ok:{json.dumps(reply)}", then="ok:1")
    out = tmp_path / "plan.json"
    code, err = _plan(openagi, stub_server.base, "make it pretty, then say what's there", out)
    assert code == 0, err
    doc = json.loads(out.read_text())
    assert dict(doc["inputs"]).values() and list(doc["inputs"].values()) == ["image"]
    assert doc["output"] == "text"
    assert {w for w in doc["word"] if not w.startswith("input:")} == {
        "Colorization", "Image Captioning",
    }  # fmt: skip
    assert doc["why"]["model"]["tools"] == ["Colorization", "Image Captioning",
                                            "Question Answering"]  # fmt: skip
    assert doc["stats"]["llm_calls"] >= 1
    body = stub_server.requests[0]
    assert "response_format" in body or "Reply with JSON" in json.dumps(body)
    code, _, err = run_fllm("verify", openagi, str(out))
    assert code == 0, err


@pytest.mark.slow
def test_an_unusable_reply_leaves_meaning_to_decide(
    openagi: str, stub_server: StubServer, tmp_path: Path
) -> None:
    stub_server.play("ok:I think you should colour it in.", then="ok:1")
    out = tmp_path / "plan.json"
    code, err = _plan(openagi, stub_server.base, "is this review happy or angry?", out)
    assert code == 0, err
    doc = json.loads(out.read_text())
    assert doc["why"]["model"] == "no usable proposal"
    assert [w for w in doc["word"] if not w.startswith("input:")] == ["Sentiment Analysis"]


@pytest.mark.slow
def test_a_provider_error_is_one_line(
    openagi: str, stub_server: StubServer, tmp_path: Path
) -> None:
    stub_server.play(then="500")
    code, err = _plan(openagi, stub_server.base, "is this review happy or angry?", tmp_path / "p")
    assert code != 0 and len(err.strip().splitlines()) == 1 and "Traceback" not in err


def test_replies_are_read_as_untrusted(openagi: str) -> None:
    domain = api.load_domain(openagi)
    enum = schema(domain)["properties"]["tools"]["items"]["enum"]
    assert "Colorization" in enum and len(enum) == 15
    assert parse('noise {"tools": ["Colorization", 3, "rm -rf"], "output": "audio"}', domain) == (
        Proposal(("Colorization",), None, None)
    )
    assert parse("[1, 2]", domain) is None and parse("{not json", domain) is None
    assert parse('{"inputs": ["image", "video"], "tools": []}', domain) is None


def test_each_proposed_tool_is_its_own_evidence() -> None:
    """The vote for one proposed tool is not used up by another step of the same plan."""
    from dataclasses import replace

    from fllm_cli.search.proposal import Proposal
    from fllm_cli.search.strategy import MODEL_VOTE, STRATEGIES

    words_only = replace(STRATEGIES["words"], proposal=Proposal(("Alpha", "Beta"), None, None))
    rel = words_only.evidence({"Alpha": "one", "Beta": "two"}, {}, "nothing shared")
    assert rel is not None
    first, claimed = rel.gain("Alpha", frozenset())
    second, _ = rel.gain("Beta", claimed)
    assert first == second == MODEL_VOTE

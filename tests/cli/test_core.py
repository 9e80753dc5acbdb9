"""``fllm validate``, ``render-pda`` and ``verify`` from the command line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import typer.main

from fllm_cli.cli.app import build_app
from tests.conftest import BROKEN, RENDERINGS, SPECS, InProc, run_fllm

OPENAGI = "domains/openagi.yaml"
IMAGE_TO_TEXT = ["--input", "image", "--output", "text"]


@pytest.fixture
def cli(fllm_inproc: InProc, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> InProc:
    """The in-process runner (``tests/conftest.py::fllm_inproc``) working in a temporary folder."""
    monkeypatch.chdir(tmp_path)
    return fllm_inproc


def write(name: str, text: str) -> str:
    Path(name).write_text(text, encoding="utf-8")
    return name


# -- verify: valid plans ---------------------------------------------------------------------


def test_verify_valid_text_plan(cli) -> None:  # type: ignore[no-untyped-def]
    plan = write("plan.txt", "# Figure 3\nImage Captioning\n\nImage Denoising\ninput:image\n")
    result = cli("verify", OPENAGI, plan, *IMAGE_TO_TEXT)
    assert result.code == 0, result.err
    assert result.out.splitlines() == [
        "valid plan (3 symbols) for openagi.yaml",
        "Image Captioning → text",
        "└── Image Denoising → image",
        "    └── input:image",
        "Step 1: Image Denoising on the input image → image",
        "Step 2: Image Captioning on the output of step 1 → text",
    ]


def test_verify_quiet(cli) -> None:  # type: ignore[no-untyped-def]
    plan = write("plan.txt", "Image Captioning\ninput:image\n")
    result = cli("verify", "-q", OPENAGI, plan, *IMAGE_TO_TEXT)
    assert result.code == 0 and result.out == ""


def test_verify_plan_json(cli) -> None:  # type: ignore[no-untyped-def]
    doc = {
        "word": ["Visual Question Answering", "input:photo", "input:question"],
        "inputs": {"photo": "image", "question": "text"},
        "output": "text",
        "task": "What is in the photo?",
    }
    plan = write("plan.json", json.dumps(doc))
    result = cli("verify", OPENAGI, plan)
    assert result.code == 0, result.err
    assert (
        "Step 1: Visual Question Answering on the input photo (image) "
        "and the input question (text) → text" in result.out
    )


def test_verify_stdin(cli) -> None:  # type: ignore[no-untyped-def]
    result = cli("verify", OPENAGI, "-", *IMAGE_TO_TEXT, stdin="Object Detection\ninput:image\n")
    assert result.code == 0, result.err
    assert "valid plan (2 symbols)" in result.out


def test_verify_named_input(cli) -> None:  # type: ignore[no-untyped-def]
    plan = write("vqa.txt", "Visual Question Answering\ninput:image\ninput:query\n")
    args = ["verify", OPENAGI, plan, "-i", "image", "-i", "query=text", "--output", "text"]
    result = cli(*args)
    assert result.code == 0, result.err
    assert "the input image and the input query (text) → text" in result.out


def test_verify_default_names_for_repeated_modalities(cli) -> None:  # type: ignore[no-untyped-def]
    plan = write("qa.txt", "Question Answering\ninput:text\ninput:text_2\n")
    result = cli("verify", OPENAGI, plan, "-i", "text", "-i", "text", "--output", "text")
    assert result.code == 0, result.err
    assert "Question Answering on the input text and the input text_2 (text) → text" in result.out


# -- verify: invalid plans -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("lines", "where", "reason"),
    [
        (
            ["Image Captioning", "Text Summarization", "input:image"],
            "2:1",
            "'Text Summarization' outputs text, but the input image of 'Image Captioning' "
            "is expected here",
        ),
        (
            ["Image Captioning", "Image Denoising", "Image Denoising", "input:image"],
            "3:1",
            "'Image Denoising' is used more than 1 time(s), its limit",
        ),
        (
            ["Image Captionin", "input:image"],
            "1:1",
            "unknown step 'Image Captionin' (did you mean 'Image Captioning'?)",
        ),
        (
            ["Image Captioning", "Image Denoising"],
            "2:1",
            "the plan is incomplete: it still needs the input image of 'Image Denoising'",
        ),
        (
            ["Image Captioning", "input:image", "Image Denoising"],
            "3:1",
            "'Image Denoising' comes after the plan is already complete",
        ),
    ],
    ids=["wrong-modality", "over-limit", "unknown-tool", "incomplete", "extra"],
)
def test_verify_invalid_plans(cli, lines: list[str], where: str, reason: str) -> None:  # type: ignore[no-untyped-def]
    plan = write("bad.txt", "# a comment line shifts the file lines\n" + "\n".join(lines) + "\n")
    line, col = where.split(":")
    result = cli("verify", OPENAGI, plan, *IMAGE_TO_TEXT)
    assert result.code == 1
    assert result.out == ""
    assert result.err.strip() == f"invalid plan: bad.txt:{int(line) + 1}:{col}: {reason}"


def test_verify_bare_input_needs_a_tool(cli) -> None:  # type: ignore[no-untyped-def]
    plan = write("bare.txt", "input:image\n")
    result = cli("verify", OPENAGI, plan, "--input", "image", "--output", "image")
    assert result.code == 1
    assert result.err.strip() == (
        "invalid plan: bare.txt:1:1: a plan must contain at least one tool step"
    )


def test_verify_invalid_json_plan_names_word_position(cli) -> None:  # type: ignore[no-untyped-def]
    doc = {
        "word": ["Image Captioning", "Colorization"],
        "inputs": {"image": "image"},
        "output": "text",
    }
    plan = write("plan.json", json.dumps(doc))
    result = cli("verify", OPENAGI, plan)
    assert result.code == 1
    assert result.err.strip() == (
        "invalid plan: plan.json: word position 3: "
        "the plan is incomplete: it still needs the input image of 'Colorization'"
    )


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            '{"word": ["Image Captioning",\n',
            "error: bad.json:2:1: not valid JSON (Expecting value)",
        ),
        ('{"steps": []}', "error: bad.json: the plan JSON has no 'word' list of strings"),
        ("# nothing\n", "error: bad.json: the plan is empty (write ε for the empty plan)"),
    ],
)
def test_verify_malformed_plan(cli, text: str, message: str) -> None:  # type: ignore[no-untyped-def]
    plan = write("bad.json", text)
    result = cli("verify", OPENAGI, plan, *IMAGE_TO_TEXT)
    assert result.code == 1
    assert result.err.strip() == message
    assert len(result.err.strip().splitlines()) == 1


def test_verify_unknown_modality(cli) -> None:  # type: ignore[no-untyped-def]
    plan = write("plan.txt", "Image Captioning\ninput:image\n")
    result = cli("verify", OPENAGI, plan, "--input", "imgae", "--output", "text")
    assert result.code == 2
    assert result.err.strip() == "error: unknown modality 'imgae' (did you mean 'image'?)"


def test_verify_missing_plan_file(cli) -> None:  # type: ignore[no-untyped-def]
    result = cli("verify", OPENAGI, "nope.txt", *IMAGE_TO_TEXT)
    assert result.code == 2
    assert result.err.strip() == "error: no such file: 'nope.txt'"


def test_verify_broken_spec_is_one_line(cli) -> None:  # type: ignore[no-untyped-def]
    plan = write("plan.txt", "a\nb\n")
    spec = str(BROKEN / "undefined_symbol.yaml")
    result = cli("verify", spec, plan)
    assert result.code == 1
    assert len(result.err.strip().splitlines()) == 1
    assert "undefined symbol 'bb'" in result.err


def test_verify_grammar_domain(cli) -> None:  # type: ignore[no-untyped-def]
    spec = str(SPECS / "anbn.yaml")
    good = cli("verify", spec, write("ok.txt", "a\na\nb\nb\n"))
    assert good.code == 0, good.err
    bad = cli("verify", spec, write("bad.txt", "a\nb\nb\n"))
    assert bad.code == 1
    assert (
        bad.err.strip() == "invalid plan: bad.txt:3:1: 'b' comes after the plan is already complete"
    )
    flags = cli("verify", spec, "ok.txt", "--input", "image")
    assert flags.code == 2
    assert "is a grammar domain: --input/--output do not apply" in flags.err


# -- render-pda ------------------------------------------------------------------------------


@pytest.mark.parametrize(("fmt", "suffix"), [("dot", "dot"), ("mermaid", "mmd"), ("json", "json")])
def test_render_pda_formats_match_golden(cli, fmt: str, suffix: str) -> None:  # type: ignore[no-untyped-def]
    result = cli("render-pda", OPENAGI, *IMAGE_TO_TEXT, "--format", fmt)
    assert result.code == 0, result.err
    golden = (RENDERINGS / f"openagi_image_text.{suffix}").read_text(encoding="utf-8")
    assert result.out == golden
    spec = str(SPECS / "anbn.yaml")
    eq2 = cli("render-pda", spec, "-f", fmt)
    assert eq2.out == (RENDERINGS / f"anbn.{suffix}").read_text(encoding="utf-8")


def test_render_pda_table(cli) -> None:  # type: ignore[no-untyped-def]
    result = cli("render-pda", OPENAGI, *IMAGE_TO_TEXT)
    assert result.code == 0, result.err
    assert "PDA of openagi" in result.out
    for label in ["(ε, Z; text Z)", "(Image Captioning, text; image)", "(input:image, image; ε)"]:
        assert label in result.out
    assert "states {q0, q1, q2}  start q0  accept {q2}  initial stack Z" in result.out


def test_render_pda_default_task_uses_generic_start(cli) -> None:  # type: ignore[no-untyped-def]
    result = cli("render-pda", OPENAGI, "-f", "json")
    assert result.code == 0, result.err
    labels = [t["label"] for t in json.loads(result.out)["transitions"]]
    assert labels[0] == "(ε, Z; S Z)"
    for label in [
        "(ε, S; image)",
        "(ε, S; text)",
        "(input:text, text; ε)",
        "(input:image, image; ε)",
    ]:
        assert label in labels


def test_render_pda_bad_format(cli) -> None:  # type: ignore[no-untyped-def]
    result = cli("render-pda", OPENAGI, "-f", "svg")
    assert result.code == 2
    assert result.err.strip() == "error: unknown --format 'svg' (choose rich, dot, mermaid, json)"


def test_render_pda_unknown_output_modality(cli) -> None:  # type: ignore[no-untyped-def]
    result = cli("render-pda", OPENAGI, "--input", "image", "--output", "txt")
    assert result.code == 2
    assert result.err.strip() == "error: unknown output modality 'txt' (did you mean 'text'?)"


# -- help ------------------------------------------------------------------------------------


def test_module_help() -> None:
    code, out, err = run_fllm("--help", timeout=60)
    assert code == 0
    assert "Usage" in out
    for name in ("validate", "render-pda", "verify"):
        assert name in out
    assert "Traceback" not in err


def subcommands() -> list[str]:
    group = typer.main.get_command(build_app())
    return sorted(group.commands)  # type: ignore[attr-defined]


@pytest.mark.parametrize("name", subcommands())
def test_subcommand_help(cli, name: str) -> None:  # type: ignore[no-untyped-def]
    result = cli(name, "--help")
    assert result.code == 0
    assert "Usage" in result.out

"""fllm bench end to end with scripted and random models (offline)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from bench_helpers import TASKS, TIMING, first_option, scripted_pool, write_jsonl
from tests.conftest import InProc

from fllm_cli import api
from fllm_cli.bench import BenchOptions, run_bench
from fllm_cli.bench.scoring import summarize_one
from fllm_cli.errors import UsageError
from fllm_cli.llm.simple import ScriptedModel

REPLIES = {
    "noisy": "Step 1: Image Denoising\nStep 2: Image Captioning",
    "blurry": "Step 1: Image Classification\nStep 2: Image Deblurring",  # wrong order
    "English": "Step 1: Text to Image Generation",
}


def reply_by_task(prompt: str, _options: tuple[str, ...]) -> str:
    """Answer a baseline prompt according to the task it ends with."""
    last = prompt.rsplit("Problem:", 1)[-1]
    return next(text for key, text in REPLIES.items() if key in last)


def by_strategy(run: Any, strategy: str) -> list[dict[str, Any]]:
    return [r for r in run.report["results"] if r["strategy"] == strategy]


@pytest.mark.slow
def test_the_bench_plans_as_fllm_plan_does_and_says_so(openagi: str, tasks_file: str) -> None:
    run = run_bench(BenchOptions(openagi, tasks_file), pool=scripted_pool(first_option))
    assert run.report["search"] == api.DEFAULT_SEARCH == "meaning"
    for row in by_strategy(run, "formal"):
        plan = api.plan_task(
            openagi,
            row["task"],
            "random:0",
            inputs=[f"{k}={v}" for k, v in row["plan"]["inputs"].items()],
            output=row["plan"]["output"],
        )
        assert row["word"] == plan.document["word"] and row["search"] == plan.document["search"]


def test_formal_plans_are_valid_and_recorded(openagi: str, tasks_file: str) -> None:
    run = run_bench(
        BenchOptions(openagi, tasks_file, search="greedy"), pool=scripted_pool(first_option)
    )
    assert run.report["search"] == "greedy"
    rows = by_strategy(run, "formal")
    assert [r["valid"] for r in rows] == [True, True, True]
    assert all(r["plan"]["word"] == r["word"] for r in rows)
    assert rows[0]["stats"]["llm_calls"] >= 1
    assert run.records and {"prompt", "options", "choice", "reward"} <= set(run.records[0])
    assert run.records[0]["id"] == "a"


def test_zero_shot_parses_and_verifies(openagi: str, tasks_file: str) -> None:
    opts = BenchOptions(openagi, tasks_file, strategies=["zero-shot"])
    rows = by_strategy(run_bench(opts, pool=scripted_pool(reply_by_task)), "zero-shot")
    assert rows[0]["valid"] and rows[0]["word"] == [
        "Image Captioning",
        "Image Denoising",
        "input:image",
    ]
    assert rows[0]["scores"] == {"precision": 1.0, "recall": 1.0, "f1": 1.0, "exact": True}
    assert not rows[1]["valid"] and rows[1]["error_kind"] == "parse"
    assert "never used" in rows[1]["error"]
    assert rows[1]["scores"]["f1"] == 0.0
    assert rows[2]["valid"] and rows[2]["scores"] is None


@pytest.mark.parametrize(
    ("reply", "kind", "fragment"),
    [
        ("Step 1: Image Inpainting\nStep 2: Image Captioning", "parse", "not a tool"),
        ("Just describe what you see.", "parse", "names no tool"),
        ("Step 1: Image Denoising", "verify", "outputs image"),
    ],
)
def test_zero_shot_failures_are_invalid_with_reason(
    openagi: str, tmp_path: Path, reply: str, kind: str, fragment: str
) -> None:
    tasks = write_jsonl(tmp_path / "t.jsonl", TASKS[:1])
    opts = BenchOptions(openagi, tasks, strategies=["zero-shot"])
    (row,) = run_bench(opts, pool=scripted_pool(lambda _p, _o: reply)).report["results"]
    assert not row["valid"] and row["plan"] is None
    assert row["error_kind"] == kind and fragment in row["error"]


def test_few_shot_shows_examples(openagi: str, tasks_file: str, tmp_path: Path) -> None:
    examples = write_jsonl(
        tmp_path / "ex.jsonl",
        [
            {
                "task": "Given gray image, how to return the class label in English?",
                "tools": ["Colorization", "Image Classification"],
            },
            {"task": "no reference here, skipped", "inputs": ["image"], "output": "text"},
        ],
    )
    seen: list[str] = []

    def answer(prompt: str, options: tuple[str, ...]) -> str:
        seen.append(prompt)
        return reply_by_task(prompt, options)

    opts = BenchOptions(openagi, tasks_file, strategies=["few-shot"], examples_file=examples)
    rows = run_bench(opts, pool=scripted_pool(answer)).report["results"]
    assert [r["valid"] for r in rows] == [True, False, True]
    assert "Step 1: Colorization\nStep 2: Image Classification" in seen[0]
    assert "skipped" not in seen[0]


def test_few_shot_needs_examples(openagi: str, tasks_file: str) -> None:
    with pytest.raises(UsageError, match="--examples"):
        run_bench(BenchOptions(openagi, tasks_file, strategies=["few-shot"]))


def test_random_model_baselines_report_no_plan(openagi: str, tasks_file: str) -> None:
    opts = BenchOptions(openagi, tasks_file, ["formal", "zero-shot"], model="random:1")
    run = run_bench(opts)
    assert run.report["summary"]["formal"]["valid_rate"] == 1.0
    zero = by_strategy(run, "zero-shot")
    assert all(r["error"] == "model produced no plan" for r in zero)


def test_summary_numbers() -> None:
    def row(valid: bool, calls: int, seconds: float, f1: float | None) -> dict[str, Any]:
        stats = {
            "llm_calls": calls,
            "forced_moves": 2,
            "backtracks": 1,
            "fallbacks": 1,
            "prompt_tokens": 10,
            "completion_tokens": 5,
            "cost_usd": 0.01,
            "seconds": seconds,
            "choice_points": calls,
        }
        scores = (
            None if f1 is None else {"precision": f1, "recall": f1, "f1": f1, "exact": f1 == 1.0}
        )
        return {"valid": valid, "stats": stats, "scores": scores}

    s = summarize_one(
        [
            row(True, 2, 1.0, 1.0),
            row(False, 4, 3.0, 0.0),
            row(True, 0, 2.0, None),
            row(True, 6, 10.0, None),
        ]
    )
    assert s["tasks"] == 4 and s["valid"] == 3 and s["valid_rate"] == 0.75
    assert s["mean_llm_calls"] == 3.0 and s["mean_forced_moves"] == 2.0
    assert s["mean_backtracks"] == 1.0 and s["fallbacks"] == 4
    assert s["tokens"] == 60 and s["cost_usd"] == 0.04
    assert s["mean_seconds"] == 4.0 and s["p95_seconds"] == 10.0
    assert s["with_reference"] == 2 and s["f1"] == 0.5 and s["exact_rate"] == 0.5


def strip_times(results: list[dict[str, Any]]) -> list[dict[str, Any]]:
    out = []
    for r in results:
        # Every timing field goes, at both levels: the scripted model answers in microseconds,
        # but seven calls on a busy machine can add up to a millisecond of model_seconds.
        r = json.loads(json.dumps(r))
        for stats in (r["stats"], (r["plan"] or {}).get("stats", {})):
            for name in TIMING:
                stats.pop(name, None)
        out.append(r)
    return out


def test_resume_after_interrupt_matches_a_full_run(openagi: str, tasks_file: str) -> None:
    def good(prompt: str, options: tuple[str, ...]) -> str:
        return reply_by_task(prompt, options) if "Problem:" in prompt else "1"

    def flaky(prompt: str, options: tuple[str, ...]) -> str:
        if "Given blurry image" in prompt:
            raise KeyboardInterrupt
        return good(prompt, options)

    strategies = ["formal", "zero-shot"]
    opts = BenchOptions(openagi, tasks_file, strategies, search="greedy")  # asks the model
    first = run_bench(opts, pool=scripted_pool(flaky)).report
    assert first["partial"] and first["stopped"] == "interrupted"
    assert [(r["id"], r["strategy"]) for r in first["results"]] == [
        ("a", "formal"),
        ("a", "zero-shot"),
    ]

    resumed = run_bench(
        BenchOptions(openagi, tasks_file, strategies, previous=first, search="greedy"),
        pool=scripted_pool(good),
    ).report
    full = run_bench(
        BenchOptions(openagi, tasks_file, strategies, search="greedy"), pool=scripted_pool(good)
    ).report
    assert not resumed["partial"]
    assert strip_times(resumed["results"]) == strip_times(full["results"])


@pytest.mark.slow
def test_concurrency_gives_serial_results(openagi: str) -> None:
    # The OpenAGI tasks ship with the tests; the test never skips.
    tasks = str(Path(__file__).resolve().parents[1] / "data" / "openagi_tasks.jsonl")
    base = dict(strategies=["formal"], model="random:7", limit=24)
    serial = run_bench(BenchOptions(openagi, tasks, **base)).report  # type: ignore[arg-type]
    threaded = run_bench(BenchOptions(openagi, tasks, concurrency=4, **base)).report  # type: ignore[arg-type]
    assert strip_times(serial["results"]) == strip_times(threaded["results"])


def test_concurrent_shared_scripted_model_is_locked(openagi: str, tasks_file: str) -> None:
    import threading

    from fllm_cli.bench.runner import ModelPool

    shared = ScriptedModel([first_option] * 200)
    pool = ModelPool(lambda _i: shared, threading.Lock())
    run = run_bench(BenchOptions(openagi, tasks_file, concurrency=3), pool=pool)
    assert all(r["valid"] for r in run.report["results"])


def test_bad_lines_are_skipped_or_fatal(openagi: str, tmp_path: Path) -> None:
    path = write_jsonl(
        tmp_path / "t.jsonl",
        [
            TASKS[0],
            "{not json",
            {"task": "no interface here"},
            {"task": "Given image, how to return text?", "output": "sound"},
            TASKS[0],
        ],
    )
    run = run_bench(BenchOptions(openagi, path, model="random:1"))
    assert len(run.report["results"]) == 1
    lines = {e.line: e.message for e in run.bad_lines}
    assert set(lines) == {2, 3, 4, 5}
    assert "not valid JSON" in lines[2] and "inputs" in lines[3]
    assert "unknown modality 'sound'" in lines[4] and "duplicate" in lines[5]
    with pytest.raises(UsageError, match=r"t\.jsonl:2: not valid JSON.*3 more"):
        run_bench(BenchOptions(openagi, path, model="random:1", strict=True))


def test_interface_is_read_from_the_text(openagi: str, tmp_path: Path) -> None:
    path = write_jsonl(
        tmp_path / "t.jsonl",
        [
            {
                "task": "Given Chinese text, how to generate a image step by step?",
                "tools": ["Machine Translation", "Text to Image Generation"],
            },
            {
                "task": "Given gray image, how to return the class label in English step by step?",
                "tools": ["Colorization", "Image Classification"],
            },
        ],
    )
    rows = run_bench(BenchOptions(openagi, path, model="random:1")).report["results"]
    assert [r["plan"]["inputs"] for r in rows] == [{"text": "text"}, {"image": "image"}]
    assert [r["plan"]["output"] for r in rows] == ["image", "text"]


def test_cli_markdown_report_and_record(
    openagi: str, tasks_file: str, tmp_path: Path, fllm_inproc: InProc
) -> None:
    out, rec = tmp_path / "r.json", tmp_path / "rec.jsonl"
    result = fllm_inproc(
        "bench",
        openagi,
        tasks_file,
        "--strategy",
        "formal,zero-shot",
        "--model",
        "random:1",
        "--format",
        "markdown",
        "-o",
        str(out),
        "--record",
        str(rec),
        "--search",
        "greedy",  # the record holds the model's choices
    )
    assert result.code == 0, result.out + result.err
    lines = result.out.splitlines()
    assert lines[0].startswith("| strategy | tasks | % valid |")
    assert lines[2].startswith("| formal | 3 | 100.0 |")
    assert lines[3].startswith("| zero-shot | 3 | 0.0 |")
    report = json.loads(out.read_text())
    assert report["partial"] is False and len(report["results"]) == 6
    assert {"results", "summary"} <= set(report)
    records = [json.loads(x) for x in rec.read_text().splitlines()]
    assert all(r["strategy"] == "formal" and 0 <= r["reward"] <= 1 for r in records)
    assert records[0]["reward"] == records[0]["scores"]["f1"]


def test_cli_bad_strategy_is_one_line(openagi: str, tasks_file: str, fllm_inproc: InProc) -> None:
    code, out, err = fllm_inproc("bench", openagi, tasks_file, "--strategy", "fromal")
    assert code == UsageError.exit_code == 2
    assert out == "" and len(err.strip().splitlines()) == 1
    assert "did you mean 'formal'" in err


def test_report_versions_rates_and_old_reports(
    tmp_path: Path, openagi: str, tasks_file: str
) -> None:
    from fllm_cli.bench import report as rep

    run = run_bench(BenchOptions(openagi, tasks_file), pool=scripted_pool(first_option)).report
    assert run["fllm_bench"] == 2
    summary = run["summary"]["formal"]
    assert "valid_pct" not in summary and 0.0 <= summary["valid_rate"] <= 1.0
    old = {**run, "fllm_bench": 1}
    (tmp_path / "v1.json").write_text(json.dumps(old), encoding="utf-8")
    assert rep.load_previous(str(tmp_path / "v1.json"))["fllm_bench"] == 1
    (tmp_path / "v9.json").write_text(json.dumps({**run, "fllm_bench": 9}), encoding="utf-8")
    with pytest.raises(UsageError, match="version 9"):
        rep.load_previous(str(tmp_path / "v9.json"))

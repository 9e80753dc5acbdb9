"""Measure how well the embedded local model chooses, per scoring mode.

Two measurements, both reproducible (the model is deterministic):

* ``probe``: multiple-choice questions shaped like planner choice points, each asked once with the
  right answer at every position. Reports accuracy and how often each position was picked; a
  model without position bias picks each position about equally often.
* ``openagi``: ``fllm plan domains/openagi.yaml TASK --model local --format json`` over OpenAGI's
  15 training tasks, tool-set precision / recall / F1 against the reference tool lists.

    .venv/bin/python bench/local_quality.py probe
    .venv/bin/python bench/local_quality.py openagi [--search greedy|beam]
    .venv/bin/python bench/local_quality.py speed [--trace RUN.jsonl] [--modes raw]
    [FLLM_LOCAL_UNPACK=0] .venv/bin/python bench/local_quality.py tokens
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
REFERENCE = Path(
    os.environ.get(
        "FLLM_OPENAGI_REF", str(ROOT / "tests" / "data" / "openagi_train_reference.jsonl")
    )
)
MODES = ("raw", "calibrated", "text")

# (situation, right answer, three wrong answers): each becomes 4 prompts, one per position.
PROBES: list[tuple[str, str, tuple[str, str, str]]] = [
    (
        "The input is a noisy photo. Which tool removes the noise?",
        "Image Denoising",
        ("Machine Translation", "Text Summarization", "Sentiment Analysis"),
    ),
    (
        "The input is a grayscale photo and the user wants colours.",
        "Colorization",
        ("Fill Mask", "Machine Translation", "Question Answering"),
    ),
    (
        "The input is a blurry photo. Which tool makes it sharp?",
        "Image Deblurring",
        ("Text Generation", "Sentiment Analysis", "Machine Translation"),
    ),
    (
        "The input is a small low-resolution photo. Which tool enlarges it?",
        "Image Super Resolution",
        ("Text Summarization", "Fill Mask", "Sentiment Analysis"),
    ),
    (
        "The user wants a caption describing a photo.",
        "Image Captioning",
        ("Machine Translation", "Fill Mask", "Text Summarization"),
    ),
    (
        "The user wants to know which objects appear in a photo.",
        "Object Detection",
        ("Text Generation", "Sentiment Analysis", "Machine Translation"),
    ),
    (
        "The text is in English and the user wants it in German.",
        "Machine Translation",
        ("Image Denoising", "Colorization", "Object Detection"),
    ),
    (
        "The user wants a short summary of a long English article.",
        "Text Summarization",
        ("Image Deblurring", "Colorization", "Image Super Resolution"),
    ),
    (
        "The user wants to know if a review is positive or negative.",
        "Sentiment Analysis",
        ("Image Captioning", "Image Denoising", "Colorization"),
    ),
    (
        "The user wants a picture drawn from a text description.",
        "Text to Image Generation",
        ("Sentiment Analysis", "Fill Mask", "Text Summarization"),
    ),
    (
        "The sentence has a missing word marked [MASK].",
        "Fill Mask",
        ("Image Deblurring", "Object Detection", "Colorization"),
    ),
    (
        "The user wants the class label of a photo (cat, dog, car...).",
        "Image Classification",
        ("Machine Translation", "Text Generation", "Fill Mask"),
    ),
    (
        "It is raining hard outside. What should you take?",
        "an umbrella",
        ("sunglasses", "a beach towel", "sun cream"),
    ),
    (
        "You are cooking pasta. What do you do first?",
        "boil water",
        ("serve the plate", "add the sauce", "wash the dishes"),
    ),
    (
        "You want to travel from Paris to Rome quickly.",
        "take a plane",
        ("walk", "ride a bicycle", "swim"),
    ),
    ("Which of these is a fruit?", "banana", ("hammer", "river", "chair")),
]


def probe_requests() -> list[tuple[Any, int]]:
    """Return (ChoiceRequest, right index) pairs, the right answer rotated through positions."""
    from fllm_cli.llm import ChoiceRequest

    out = []
    for situation, right, wrong in PROBES:
        for pos in range(4):
            options = list(wrong)
            options.insert(pos, right)
            listing = "\n".join(f"{k}. {text}" for k, text in enumerate(options, 1))
            prompt = (
                f"Situation: {situation}\nWhich option is the best next step?\n{listing}\n"
                "Reply with the number of one option."
            )
            out.append((ChoiceRequest(prompt=prompt, options=tuple(options)), pos))
    return out


def run_probe(modes: tuple[str, ...]) -> dict[str, Any]:
    """Score every probe prompt under every mode; return accuracy and position counts."""
    from fllm_cli.llm.local import LocalModel, find_default_gguf, listing_mode

    model = LocalModel(path=find_default_gguf(), listing=listing_mode(), cache=None)
    requests = probe_requests()
    report: dict[str, Any] = {"prompts": len(requests)}
    for mode in modes:
        start = time.perf_counter()
        picked = Counter()
        right = 0
        for request, answer in requests:
            scores = model.scores(request, mode)
            index = max(range(len(scores)), key=lambda i: (scores[i], -i))
            picked[index + 1] += 1
            right += index == answer
        report[mode] = {
            "accuracy": round(right / len(requests), 3),
            "picked_by_position": [picked[k] for k in range(1, 5)],
            "seconds_per_choice": round((time.perf_counter() - start) / len(requests), 3),
        }
    report["model"] = model.info()
    return report


def _rss_mb() -> float:
    """Return this process's peak resident memory in MB (Linux reports KB)."""
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def run_speed(trace: str | None) -> dict[str, Any]:
    """Time loading and choosing: the prompts of a ``--trace`` file, or the probe prompts."""
    from fllm_cli.llm import ChoiceRequest
    from fllm_cli.llm.local import (
        LocalModel,
        find_default_gguf,
        listing_mode,
        load_llama,
        scoring_mode,
    )

    if trace:
        records = [json.loads(line) for line in Path(trace).read_text().splitlines() if line]
        requests = [
            ChoiceRequest(prompt=r["prompt"], options=tuple(r["options"]))
            for r in records
            if r.get("type", "choice") == "choice"
        ]
    else:
        requests = [request for request, _ in probe_requests()[:12]]
    before = _rss_mb()
    model = LocalModel(
        path=find_default_gguf(), scoring=scoring_mode(), listing=listing_mode(), cache=None
    )
    start = time.perf_counter()
    load_llama(model.path)
    load = time.perf_counter() - start
    times = []
    for request in requests:
        times.append(model.choose(request).seconds)
    info = model.info()
    return {
        "scoring": model.scoring,
        "load_seconds": round(load, 3),
        "choices": len(times),
        "first_choice_seconds": round(times[0], 3),
        "later_choice_seconds_mean": round(sum(times[1:]) / max(1, len(times) - 1), 3),
        "later_choice_seconds_median": round(statistics.median(times[1:] or [0.0]), 3),
        "later_choice_seconds_max": round(max(times[1:] or [0.0]), 3),
        "listing": model.listing,
        "tokens_evaluated": info["tokens_evaluated"],
        "tokens_reused": info["tokens_reused"],
        "peak_rss_mb": round(_rss_mb(), 1),
        "rss_before_model_mb": round(before, 1),
    }


def run_tokens() -> dict[str, Any]:
    """Milliseconds per prompt token, by batch size, after a 900-token prefix is cached.

    ``FLLM_LOCAL_UNPACK=0`` times the file as shipped, the default its 16-bit copy.
    """
    from fllm_cli.llm.local import find_default_gguf, load_llama, unpack_mode

    llm = load_llama(find_default_gguf()).llm
    text = b"The quick brown fox jumps over the lazy dog. " * 200
    tokens = list(llm.tokenize(text, add_bos=False))
    llm.eval(tokens[:900])
    report: dict[str, Any] = {"unpack": unpack_mode(), "file": Path(llm.model_path).name}
    for size in (128, 32, 8):
        samples = []
        for _ in range(5):
            llm.n_tokens = 900
            llm._ctx.kv_cache_seq_rm(0, 900, -1)
            start = time.perf_counter()
            llm.eval(tokens[900 : 900 + size])
            samples.append(time.perf_counter() - start)
        report[f"ms_per_token_batch_{size}"] = round(1000 * statistics.median(samples) / size, 2)
    return report


def modalities(task: str) -> tuple[list[str], str]:
    """Derive (--input, --output) from an OpenAGI task's wording."""
    lower = task.lower()
    inputs = ["image"] if "image" in lower.split("how to")[0] else ["text"]
    if "query" in lower or "question" in lower:
        inputs = ["image", "text"]
    wants = lower.split("how to", 1)[-1]
    output = "image" if "image" in wants else "text"
    return inputs, output


def tools_in(value: Any, names: set[str]) -> list[str]:
    """Return every known tool name found in a JSON plan, in document order."""
    found: list[str] = []
    if isinstance(value, str):
        if value in names:
            found.append(value)
    elif isinstance(value, dict):
        for item in value.values():
            found += tools_in(item, names)
    elif isinstance(value, list):
        for item in value:
            found += tools_in(item, names)
    return found


def prf(predicted: set[str], reference: set[str]) -> tuple[float, float, float]:
    """Return set precision, recall and F1."""
    hit = len(predicted & reference)
    p = hit / len(predicted) if predicted else 0.0
    r = hit / len(reference) if reference else 0.0
    return p, r, (2 * p * r / (p + r) if p + r else 0.0)


def plan_once(task: str, mode: str, search: str) -> tuple[dict[str, Any] | None, str]:
    """Run ``fllm plan`` for one task; return (JSON plan or None, error text)."""
    inputs, output = modalities(task)
    cmd = [str(ROOT / ".venv/bin/fllm"), "plan", "domains/openagi.yaml", task]
    for modality in inputs:
        cmd += ["--input", modality]
    cmd += ["--output", output, "--model", "local", "--format", "json", "--search", search]
    env = {**os.environ, "FLLM_LOCAL_SCORING": mode, "FLLM_NO_CACHE": "1"}
    proc = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=900)
    if proc.returncode != 0:
        return None, (proc.stderr.strip().splitlines() or ["failed"])[-1]
    try:
        return json.loads(proc.stdout), ""
    except json.JSONDecodeError as exc:
        return None, f"output is not JSON ({exc.msg})"


def run_openagi(modes: tuple[str, ...], limit: int | None, search: str) -> dict[str, Any]:
    """Plan every reference task under every mode and score the tool sets."""
    rows = [json.loads(line) for line in REFERENCE.read_text().splitlines() if line.strip()]
    rows = rows[:limit] if limit else rows
    names = {tool for row in rows for tool in row["tools"]}
    report: dict[str, Any] = {"tasks": len(rows), "search": search}
    for mode in modes:
        totals = [0.0, 0.0, 0.0]
        failures: list[str] = []
        start = time.perf_counter()
        for row in rows:
            plan, error = plan_once(row["task"], mode, search)
            if plan is None:
                failures.append(f"{row['task'][:50]}: {error}")
                continue
            steps = plan.get("steps") if isinstance(plan, dict) else None
            used = [s.get("tool") for s in steps] if isinstance(steps, list) else None
            found = {t for t in used if t} if used is not None else set(tools_in(plan, names))
            scores = prf(found, set(row["tools"]))
            totals = [t + s for t, s in zip(totals, scores)]
        n = len(rows)
        report[mode] = {
            "precision": round(totals[0] / n, 3),
            "recall": round(totals[1] / n, 3),
            "f1": round(totals[2] / n, 3),
            "failed": failures,
            "seconds": round(time.perf_counter() - start, 1),
        }
    return report


def main(argv: list[str] | None = None) -> int:
    """Run the chosen measurement and print a JSON report."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("what", choices=["probe", "openagi", "speed", "tokens"])
    parser.add_argument("--trace", default=None, help="speed: prompts from a --trace file")
    parser.add_argument("--modes", default=",".join(MODES))
    parser.add_argument("--limit", type=int, default=None, help="openagi: first N tasks only")
    parser.add_argument(
        "--search", default="greedy", choices=["greedy", "beam"], help="openagi: plan search"
    )
    args = parser.parse_args(argv)
    modes = tuple(m for m in args.modes.split(",") if m)
    sys.path.insert(0, str(ROOT / "src"))
    if args.what == "tokens":
        report = run_tokens()
    elif args.what == "speed":
        os.environ["FLLM_LOCAL_SCORING"] = modes[0] if len(modes) == 1 else "text"
        report = run_speed(args.trace)
    elif args.what == "probe":
        report = run_probe(modes)
    else:
        report = run_openagi(modes, args.limit, args.search)
    print(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())

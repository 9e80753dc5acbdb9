"""Start-up: a command imports what it needs, and the command table lists every command."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import typer.main

from fllm_cli.cli.app import COMMAND_MODULES, COMMANDS, build_app

ROOT = Path(__file__).resolve().parents[2]
TASK = "Given noisy blurry grayscale image, how to return the caption in English step by step?"

# Runs `python -m fllm_cli ARGS` in a fresh interpreter and prints the fllm modules and heavy
# libraries it imported.
PROBE = """
import json, runpy, sys
sys.argv = ["fllm", *json.loads(sys.argv[1])]
code = 0
try:
    runpy.run_module("fllm_cli", run_name="__main__")
except SystemExit as exc:
    code = exc.code
sys.stdout = sys.__stdout__
print(json.dumps({"code": code, "modules": sorted(sys.modules)}))
"""


def _imported(*args: str) -> tuple[int, set[str]]:
    done = subprocess.run(
        [sys.executable, "-c", PROBE, json.dumps(list(args))],
        capture_output=True, text=True, cwd=ROOT, timeout=120,
    )  # fmt: skip
    last = json.loads(done.stdout.strip().splitlines()[-1])
    return last["code"], set(last["modules"])


def test_plan_imports_neither_agents_nor_solver_nor_bench_nor_numpy() -> None:
    # --search words: the default (meaning) needs NumPy for its encoder, and loads it then.
    code, modules = _imported(
        "plan", "domains/openagi.yaml", TASK, "--model", "random:1", "-q", "--search", "words"
    )
    assert code == 0
    assert "fllm_cli.kinds.tools" in modules and "fllm_cli.cli.plan" in modules
    for heavy in (
        "fllm_cli.ltl.api", "fllm_cli.solve.pipeline", "fllm_cli.bench.core",
        "fllm_cli.kinds.data", "fllm_cli.cli.agent", "fllm_cli.cli.solve", "numpy", "z3",
    ):  # fmt: skip
        assert heavy not in modules, heavy


def test_every_command_is_in_the_table_and_registered_by_its_module() -> None:
    everything = typer.main.get_command(build_app())
    assert sorted(everything.commands) == sorted(COMMANDS)  # type: ignore[attr-defined]
    for name, module in COMMANDS.items():
        alone = typer.main.get_command(build_app([name, "--help"]))
        mine = sorted(n for n, m in COMMANDS.items() if m == module)
        assert sorted(alone.commands) == mine  # type: ignore[attr-defined]
    assert set(COMMAND_MODULES) == set(COMMANDS.values())


def test_a_misspelt_command_still_gets_every_suggestion() -> None:
    app = typer.main.get_command(build_app(["verfy"]))
    assert len(app.commands) == len(COMMANDS)  # type: ignore[attr-defined]


def test_the_fuzz_fork_server_preloads_every_command_module() -> None:
    from fuzz.zygote import COMMANDS as PRELOADED

    assert set(PRELOADED) == set(COMMAND_MODULES)

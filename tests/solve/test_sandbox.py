"""Generated code runs in a limited child process; every failure comes back as a result."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from fllm_cli.solve.sandbox import Limits, run_code

SMALL = Limits(timeout=2.5, memory_mb=300)


def test_runs_z3_and_reads_objective() -> None:
    code = "solver = Optimize()\nx = Int('x')\nsolver.add(x >= 3)\ntotal_cost = 2 * x\n"
    code += "solver.minimize(total_cost)\n"
    result = run_code(code, objective="total_cost", limits=SMALL)
    assert (result.ok, result.status, result.objective, result.values["x"]) == (True, "sat", 6, 3)


def test_unsat_is_reported() -> None:
    result = run_code("solver = Optimize()\nx = Int('x')\nsolver.add(x > 1, x < 0)\n", limits=SMALL)
    assert result.ok and result.status == "unsat"


def test_infinite_loop_times_out() -> None:
    result = run_code("while True:\n    pass\n", limits=SMALL)
    assert (result.ok, result.kind) == (False, "timeout")


def test_memory_blow_up_is_stopped() -> None:
    code = "allocate = []\nwhile True:\n    allocate.append(bytearray(10**7))\n"
    result = run_code(code, limits=SMALL)
    assert (result.ok, result.kind) == (False, "memory")


def test_socket_is_blocked() -> None:
    code = "import socket\nsocket.create_connection(('127.0.0.1', 9))\n"
    result = run_code(code, limits=SMALL)
    assert result.kind == "blocked" and "fllm sandbox" in result.error


def test_reading_user_files_is_blocked() -> None:
    secret = Path.home() / ".ssh" / "id_rsa"
    result = run_code(f"print(open({str(secret)!r}).read())\n", limits=SMALL)
    assert result.kind == "blocked" and "not allowed" in result.error


def test_subprocess_is_blocked() -> None:
    result = run_code("import os\nos.system('true')\n", limits=SMALL)
    assert result.kind == "blocked"


def test_environment_is_clean(monkeypatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-secret")
    monkeypatch.setenv("HTTPS_PROXY", "http://proxy:3128")
    code = "import os\nprint(sorted(os.environ))\nsolver = Solver()\n"
    result = run_code(code, limits=SMALL)
    assert result.ok and "OPENAI_API_KEY" not in result.stdout and "PROXY" not in result.stdout
    assert os.environ["OPENAI_API_KEY"] == "sk-secret"  # the parent is untouched


def test_working_folder_is_empty_and_writable() -> None:
    code = "import os\nprint(os.listdir('.'))\nopen('x.txt', 'w').write('1')\nsolver = Solver()\n"
    result = run_code(code, limits=SMALL)
    assert result.ok and result.stdout.strip() == "[]"


def test_horizon_loop_stops_at_first_plan() -> None:
    code = "solver = Solver()\nsolver.add(BoolVal(T >= 3))\n"
    result = run_code(code, horizons=[1, 2, 3, 4], limits=SMALL)
    assert (result.status, result.horizon, result.tried) == ("sat", 3, [1, 2, 3])


def test_refuses_without_kernel_isolation(monkeypatch) -> None:
    from fllm_cli.errors import SandboxUnavailable
    from fllm_cli.solve import lockdown, sandbox

    missing = lockdown.Isolation(seccomp=False, landlock_abi=0, problems=["test says so"])
    monkeypatch.setattr(sandbox, "isolation_report", lambda: missing)
    with pytest.raises(SandboxUnavailable) as info:
        run_code("solver = Solver()\n", limits=SMALL)
    assert "seccomp, Landlock" in info.value.one_line() and info.value.exit_code == 1


def test_isolation_in_force_is_recorded() -> None:
    result = run_code("solver = Solver()\n", limits=SMALL)
    assert result.ok and result.isolation.startswith("seccomp + landlock abi")


def test_a_work_folder_of_any_shape_is_removed(tmp_path: Path) -> None:
    """3,000 nested folders (deeper than a path can be written), files at many levels and a
    link out: all of it goes, without recursion, and nothing the link points at is touched."""
    from fllm_cli.solve.sandbox import remove_tree

    root, outside = tmp_path / "work", tmp_path / "outside"
    root.mkdir()
    outside.mkdir()
    (outside / "keep.txt").write_text("keep")
    fd = os.open(root, os.O_RDONLY)
    for depth in range(3000):
        os.mkdir("d", dir_fd=fd)
        if depth % 300 == 0:
            os.close(os.open("f", os.O_WRONLY | os.O_CREAT, dir_fd=fd))
            os.symlink(outside, "out", dir_fd=fd)
        inner = os.open("d", os.O_RDONLY, dir_fd=fd)
        os.close(fd)
        fd = inner
    os.close(fd)
    remove_tree(str(root))
    assert not root.exists()
    assert (outside / "keep.txt").read_text() == "keep"


def test_a_deep_work_folder_made_by_generated_code_is_cleaned_up(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    code = (
        "import os\n"
        "for _ in range(3000):\n"
        "    os.mkdir('d')\n"
        "    os.chdir('d')\n"
        "solver = Solver()\n"
    )
    from fllm_cli.solve.sandbox import remove_tree

    result = run_code(code, limits=SMALL)
    left = list(tmp_path.glob("fllm-solve-*"))
    for folder in left:  # never leave pytest a tree its own clean-up cannot remove
        remove_tree(str(folder))
    assert result.ok, result.error
    assert not left


def _no_leftovers(tmp_path: Path) -> list[Path]:
    from fllm_cli.solve.sandbox import remove_tree

    left = list(tmp_path.glob("fllm-solve-*"))
    for folder in left:
        remove_tree(str(folder))
    return left


@pytest.mark.parametrize(
    ("code", "seen"),
    [
        # many small files: the count past the limit, whether measured while the program runs
        # (a loaded machine) or at removal (1,500 and the program's own entries)
        ("for i in range(1500):\n    open(f'f{i}', 'w').close()\n", r"\b1,[0-5]\d\d files"),
        # a few big files, then a wait: the measurement while it runs stops it
        (
            "import time\nfor i in range(6):\n    open(f'b{i}', 'wb').write(b'x' * (3 << 20))\n"
            "time.sleep(20)\n",
            r"MB in its work folder",
        ),
    ],
    ids=["many-files", "big-files"],
)
def test_a_program_that_fills_its_work_folder_gets_a_disk_result(
    code: str, seen: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import tempfile

    from fllm_cli.solve.sandbox import Limits

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    limits = Limits(timeout=30, memory_mb=SMALL.memory_mb, work_mb=10, work_entries=1000)
    result = run_code(code + "solver = Solver()\n", limits=limits)
    assert (result.ok, result.kind) == (False, "disk")
    assert result.error.startswith("the program used too much disk: ")
    assert re.search(seen, result.error), result.error
    assert "at most 1,000 and 10 MB" in result.error
    assert not _no_leftovers(tmp_path)


def test_a_program_inside_its_work_limits_is_not_stopped(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import tempfile

    from fllm_cli.solve.sandbox import Limits

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    limits = Limits(timeout=30, memory_mb=SMALL.memory_mb, work_mb=10, work_entries=1000)
    code = "for i in range(900):\n    open(f'f{i}', 'w').write('x')\nsolver = Solver()\n"
    result = run_code(code, limits=limits)
    assert result.ok, result.error
    assert not _no_leftovers(tmp_path)

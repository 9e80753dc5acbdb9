"""The Ray executor against the local one, on a Ray cluster of this machine (127.0.0.1 only).

One cluster serves the whole module (starting it takes seconds); each test runs a few dozen
random-chooser units, so the module stays a few seconds beyond that start.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from bench_helpers import comparable, write_jsonl
from tests.conftest import InProc
from tests.conftest import load_tasks as openagi_rows

from fllm_cli.bench.core import BenchOptions, run_bench
from fllm_cli.bench.ray_executor import BenchWorker, RayOptions, run_pairs_ray
from fllm_cli.bench.results import read_results
from fllm_cli.bench.runner import pending_pairs
from fllm_cli.bench.strategies import BenchConfig
from fllm_cli.bench.tasks import load_tasks
from fllm_cli.llm.options import ModelOptions

ray = pytest.importorskip("ray")
pytestmark = pytest.mark.slow  # a Ray cluster starts for the module, and its workers for each test

STRATEGIES = ["formal", "zero-shot"]


@pytest.fixture(scope="module")
def cluster() -> Iterator[None]:
    """A two-CPU Ray cluster on the loopback address, shared by the module's tests."""
    saved = {k: os.environ.get(k) for k in ("RAY_USAGE_STATS_ENABLED",)}
    os.environ["RAY_USAGE_STATS_ENABLED"] = "0"
    ray.init(
        address="local",  # a new cluster, whatever else runs on the machine
        num_cpus=2,
        include_dashboard=False,
        _node_ip_address="127.0.0.1",
        logging_level="error",
        log_to_driver=False,
        configure_logging=False,
    )
    try:
        yield
    finally:
        ray.shutdown()
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


@pytest.fixture
def tasks(tmp_path: Path) -> str:
    """Twelve OpenAGI tasks of several interfaces (levels)."""
    rows = openagi_rows()
    return write_jsonl(tmp_path / "tasks.jsonl", rows[:6] + rows[100:103] + rows[120:123])


def test_ray_and_local_give_the_same_report_and_resume_each_other(
    cluster: None, openagi: str, tasks: str, tmp_path: Path
) -> None:
    local_file, ray_file = str(tmp_path / "local.jsonl"), str(tmp_path / "ray.jsonl")

    def options(executor: str, results: str, resume: bool = False) -> BenchOptions:
        return BenchOptions(
            openagi,
            tasks,
            STRATEGIES,
            model="random:7",
            executor=executor,
            results_file=results,
            resume_results=resume,
            rate_limit=1e6,
        )

    streamed: list[dict[str, Any]] = []
    local = run_bench(options("local", local_file)).report
    remote = run_bench(options("ray", ray_file), on_result=streamed.append).report
    assert remote["executor"]["name"] == "ray" and remote["executor"]["workers"] == 2
    assert remote["partial"] is False and len(remote["results"]) == 24
    assert comparable(remote) == comparable(local)  # unit by unit, timing aside
    assert remote["summary"].keys() == local["summary"].keys()
    for name, row in local["summary"].items():
        other = remote["summary"][name]
        assert {k: v for k, v in row.items() if "seconds" not in k} == {
            k: v for k, v in other.items() if "seconds" not in k
        }
    # Results streamed back as they finished, each one once, and went to the results file.
    assert len(streamed) == 24 and len({(r["id"], r["strategy"]) for r in streamed}) == 24
    assert len(read_results(ray_file).rows) == 24
    # The limiter actor saw every model request of both workers: as many as the local run.
    assert remote["executor"]["rate_limit"]["granted"] == local["executor"]["rate_limit"]["granted"]

    # A local run interrupted after 9 units, continued on Ray, and the other way round.
    for first, then in (("local", "ray"), ("ray", "local")):
        path = tmp_path / f"{first}-then-{then}.jsonl"
        source = local_file if first == "local" else ray_file
        path.write_text("".join(Path(source).read_text().splitlines(True)[:10]))
        resumed = run_bench(options(then, str(path), resume=True)).report
        assert resumed["executor"]["resumed"] == 9 and resumed["executor"]["name"] == then
        assert comparable(resumed) == comparable(local)
        assert len(read_results(str(path)).rows) == 24


def test_a_killed_worker_has_its_unit_retried_elsewhere(
    cluster: None, openagi: str, tasks: str, tmp_path: Path
) -> None:
    marker = str(tmp_path / "died")

    class DiesOnce(BenchWorker):
        """Kills its own process the first time it is given task 3's formal unit."""

        def run(self, index: int, task: Any, strategy: str) -> Any:
            if index == 3 and strategy == "formal" and not os.path.exists(marker):
                Path(marker).write_text(str(os.getpid()))
                os._exit(1)
            return super().run(index, task, strategy)

    domain_tasks = load_tasks(tasks, _domain(openagi))[0]
    config = BenchConfig(_domain(openagi), "random:7", STRATEGIES, seed_base=7)
    pairs = pending_pairs(domain_tasks, STRATEGIES, set())
    state, facts = run_pairs_ray(
        config,
        pairs,
        "random:7",
        ModelOptions(),
        RayOptions(workers=2, worker_cls=DiesOnce),
    )
    assert Path(marker).exists()
    retried = [(r["id"], r["strategy"]) for r in facts["retried"]]
    assert (3, "formal") in retried and len(retried) <= 2  # with what else it had queued
    assert facts["actors_started"] == 3  # two, and one in place of the dead one
    assert state.stopped is None
    got = {(o.result["id"], o.result["strategy"]) for o in state.outcomes}
    assert len(state.outcomes) == len(got) == 24  # every unit once, none lost or doubled
    local = run_bench(BenchOptions(openagi, tasks, STRATEGIES, model="random:7")).report
    assert comparable({"results": [o.result for o in state.outcomes]}) == comparable(local)


def _domain(path: str) -> Any:
    from fllm_cli.api import load_domain

    return load_domain(path)


def test_a_bad_model_fails_before_any_cluster_starts(
    openagi: str, tasks: str, fllm_inproc: InProc
) -> None:
    code, out, err = fllm_inproc("bench", openagi, tasks, "--executor", "ray", "-m", "nosuch:1")
    assert code == 2 and out == "" and len(err.strip().splitlines()) == 1
    assert "unknown model back end 'nosuch'" in err

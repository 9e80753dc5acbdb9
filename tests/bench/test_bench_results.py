"""The results file, --resume from it, the run-wide rate limiter, the HTML report and
``fllm report``. No Ray here (tests/bench/test_bench_ray.py has the few tests that start it)."""

from __future__ import annotations

import json
import sys
from html.parser import HTMLParser
from pathlib import Path

import pytest
from bench_helpers import TASKS, comparable, write_jsonl
from tests.conftest import InProc, load_tasks

from fllm_cli.bench.core import BenchOptions, run_bench
from fllm_cli.bench.html import render_html
from fllm_cli.bench.limiter import Limiter, limited
from fllm_cli.bench.results import read_results, report_from_results
from fllm_cli.errors import UsageError
from fllm_cli.llm.base import ChoiceRequest, GenerateRequest
from fllm_cli.llm.simple import RandomModel


def openagi_tasks(tmp_path: Path, n: int) -> str:
    return write_jsonl(tmp_path / "openagi.jsonl", load_tasks()[:n])


@pytest.mark.slow
def test_results_file_has_one_line_per_unit_and_refuses_a_silent_rerun(
    openagi: str, tmp_path: Path
) -> None:
    tasks = openagi_tasks(tmp_path, 6)
    results = str(tmp_path / "r.jsonl")
    opts = BenchOptions(
        openagi, tasks, ["formal", "zero-shot"], model="random:4", results_file=results
    )
    report = run_bench(opts).report
    lines = Path(results).read_text(encoding="utf-8").splitlines()
    header = json.loads(lines[0])
    assert header["fllm_results"] == 1 and header["domain"] == "openagi"
    assert header["model"] == "random:4" and header["strategies"] == ["formal", "zero-shot"]
    rows = [json.loads(line) for line in lines[1:]]
    units = {(r["id"], r["strategy"], r["model"], r["seed"]) for r in rows}
    assert len(rows) == len(units) == 12
    assert {r["seed"] for r in rows} == {4 + i for i in range(6)}  # random:4 → task i uses 4 + i
    assert report["results_file"] == results and report["executor"]["name"] == "local"
    with pytest.raises(UsageError, match="already holds 12 result"):
        run_bench(opts)


def test_resume_of_a_killed_run_matches_a_full_run(openagi: str, tmp_path: Path) -> None:
    tasks = openagi_tasks(tmp_path, 8)
    full_file = str(tmp_path / "full.jsonl")
    strategies = ["formal", "zero-shot"]
    full = run_bench(
        BenchOptions(openagi, tasks, strategies, model="random:2", results_file=full_file)
    ).report
    # A run killed mid-write: seven units done, the eighth torn half-way through its line.
    lines = Path(full_file).read_text(encoding="utf-8").splitlines(keepends=True)
    killed = tmp_path / "killed.jsonl"
    killed.write_text("".join(lines[:8]) + lines[8][:40], encoding="utf-8")
    assert read_results(str(killed)).torn == 1
    resumed = run_bench(
        BenchOptions(
            openagi,
            tasks,
            strategies,
            model="random:2",
            results_file=str(killed),
            resume_results=True,
        )
    ).report
    assert resumed["executor"]["resumed"] == 7 and resumed["partial"] is False
    assert comparable(resumed) == comparable(full)
    log = read_results(str(killed))
    assert log.torn == 0 and log.lines == 16  # the torn line is gone, no unit twice
    assert comparable(report_from_results(log, str(killed))) == comparable(full)


def test_resume_reruns_backend_failures_and_the_last_line_wins(
    openagi: str, tmp_path: Path
) -> None:
    tasks = openagi_tasks(tmp_path, 3)
    path = str(tmp_path / "r.jsonl")
    run_bench(BenchOptions(openagi, tasks, model="random:1", results_file=path))
    lines = Path(path).read_text(encoding="utf-8").splitlines()
    broken = json.loads(lines[2])
    broken.update(valid=False, plan=None, error="rate limited", error_kind="backend")
    Path(path).write_text("\n".join([*lines, json.dumps(broken)]) + "\n", encoding="utf-8")
    assert not read_results(path).rows[(str(broken["id"]), "formal", "random:1", 2)]["valid"]
    again = run_bench(
        BenchOptions(openagi, tasks, model="random:1", results_file=path, resume_results=True)
    ).report
    assert again["executor"]["resumed"] == 2 and all(r["valid"] for r in again["results"])
    assert len(read_results(path).rows) == 3


def test_results_file_of_another_domain_is_refused(openagi: str, tmp_path: Path) -> None:
    path = tmp_path / "r.jsonl"
    path.write_text('{"fllm_results": 1, "domain": "travel"}\n', encoding="utf-8")
    tasks = openagi_tasks(tmp_path, 2)
    with pytest.raises(UsageError, match="domain 'travel'"):
        run_bench(BenchOptions(openagi, tasks, model="random:1", results_file=str(path)))


def test_limiter_spaces_slots_run_wide() -> None:
    now = [10.0]
    limiter = Limiter(4.0, clock=lambda: now[0])
    assert [limiter.reserve() for _ in range(3)] == [0.0, 0.25, 0.5]
    now[0] = 20.0  # idle for a while: no burst is saved up
    assert limiter.reserve() == 0.0 and limiter.reserve() == 0.25
    assert limiter.count() == 5
    with pytest.raises(ValueError):
        Limiter(0)


def test_limited_model_reserves_a_slot_per_request() -> None:
    limiter = Limiter(1e9)
    model = limited(RandomModel(1), limiter.reserve)
    model.choose(ChoiceRequest("pick", ("a", "b")))
    model.generate(GenerateRequest("say"))
    assert limiter.count() == 2 and model.name == "random:1"


def test_rate_limit_counts_every_request_of_the_run(openagi: str, tmp_path: Path) -> None:
    tasks = openagi_tasks(tmp_path, 5)
    report = run_bench(
        BenchOptions(openagi, tasks, ["formal", "zero-shot"], model="random:1", rate_limit=1e6)
    ).report
    # formal: one request per choice point; zero-shot: one generate each.
    choices = sum(r["stats"]["choice_points"] for r in report["results"])
    assert report["executor"]["rate_limit"]["granted"] == choices + 5


def test_executor_ray_without_ray_says_how_to_install(
    openagi: str, tasks_file: str, fllm_inproc: InProc, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "ray", None)  # import ray → ImportError
    code, out, err = fllm_inproc("bench", openagi, tasks_file, "--executor", "ray")
    assert code == 2 and out == ""
    assert len(err.strip().splitlines()) == 1
    assert "pip install 'fllm-cli[ray]'" in err


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--executor", "spark"], "unknown executor 'spark'"),
        (["--ray-address", "auto"], "--ray-address needs --executor ray"),
        (["--results", "/no/such/dir/r.jsonl"], "its folder does not exist"),
        (["--rate-limit", "0"], "--rate-limit"),
    ],
)
def test_bench_misuse_is_one_line(
    openagi: str, tasks_file: str, fllm_inproc: InProc, args: list[str], message: str
) -> None:
    code, out, err = fllm_inproc("bench", openagi, tasks_file, "-m", "random:1", *args)
    assert code == 2 and out == ""
    assert len(err.strip().splitlines()) == 1 and message in err


class Page(HTMLParser):
    """What a browser would see: elements, the attributes that load things, and text."""

    def __init__(self) -> None:
        super().__init__()
        self.tags: dict[str, int] = {}
        self.tables: list[str] = []
        self.loads: list[str] = []
        self.styles: list[str] = []
        self.text: list[str] = []
        self._in_style = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags[tag] = self.tags.get(tag, 0) + 1
        if tag == "table":
            self.tables.append(dict(attrs).get("class") or "")
        for name, value in attrs:
            loading = name in ("src", "href", "xlink:href", "data", "srcset", "action", "poster")
            if loading and value and not value.startswith("#"):
                self.loads.append(f"{tag} {name}={value}")
            if name == "style" and value:
                self.styles.append(value)
        self._in_style = tag == "style"

    def handle_endtag(self, tag: str) -> None:
        self._in_style = False

    def handle_data(self, data: str) -> None:
        if self._in_style:
            self.styles.append(data)
        self.text.append(data)


def parse(page: str) -> Page:
    parser = Page()
    parser.feed(page)
    parser.close()
    return parser


def assert_offline(page: Page) -> None:
    """Nothing on the page makes a browser fetch anything."""
    assert page.loads == []
    for tag in ("script", "link", "img", "iframe", "object", "embed", "image"):
        assert tag not in page.tags, tag
    css = " ".join(page.styles).lower()
    assert "url(" not in css and "@import" not in css


HOSTILE = {
    "id": "evil",
    "task": 'Given image, how to return text? <script>alert("x")</script><img src=x>',
    "inputs": ["image"],
    "output": "text",
    "level": "</td><b>lvl $x$",
}


@pytest.mark.slow
def test_html_report_has_tables_and_plots_and_loads_nothing(
    openagi: str, tmp_path: Path, fllm_inproc: InProc
) -> None:
    tasks = write_jsonl(tmp_path / "t.jsonl", [HOSTILE, *TASKS])  # its failure comes first
    out = tmp_path / "report.html"
    code, _out, err = fllm_inproc(
        "bench",
        openagi,
        tasks,
        "-s",
        "formal,zero-shot",
        "-m",
        "random:1",
        "--format",
        "html",
        "-o",
        str(out),
    )
    assert code == 0, err
    text = out.read_text(encoding="utf-8")
    page = parse(text)
    assert_offline(page)
    assert page.tables == ["facts", "summary", "distribution", "levels", "failures"]
    # Only latency varies: a random model costs nothing and each strategy's valid share is
    # the same at both levels, and the summary table already gives the valid share and F1.
    assert page.tags["svg"] == 1 and page.tags["figure"] == 1 and 'id="plot-latency"' in text
    words = " ".join(page.text)
    assert "Latency per unit" not in words  # plot text is drawn as paths, not page text
    assert "no cost plot" in words and "same at every level, so there is no chart" in words
    assert "image→text" in words and "</td><b>lvl $x$" in words  # untrusted level, as text
    assert '<script>alert("x")</script><img src=x>' in words  # the task text, as text
    assert "&lt;script&gt;" in text and "<b>" not in text


def test_fllm_report_rebuilds_the_page_from_a_results_file(
    openagi: str, tmp_path: Path, fllm_inproc: InProc
) -> None:
    tasks = openagi_tasks(tmp_path, 4)
    results = str(tmp_path / "r.jsonl")
    for model in ("random:1", "random:9"):
        run_bench(
            BenchOptions(openagi, tasks, ["formal", "zero-shot"], model=model, results_file=results)
        )
    out = tmp_path / "page.html"
    code, _out, err = fllm_inproc("report", results, "-o", str(out))
    assert code == 0, err
    text = out.read_text(encoding="utf-8")
    page = parse(text)
    assert_offline(page)
    assert page.tables == ["facts", "summary", "distribution", "failures"]  # one level: no table
    assert page.tags["svg"] == 1 and 'id="plot-latency"' in text  # random models cost nothing
    words = " ".join(page.text)
    assert "random:1" in words and "random:9" in words
    code, out_json, _ = fllm_inproc("report", results, "-f", "json")
    doc = json.loads(out_json)
    assert code == 0 and doc["models"] == ["random:1", "random:9"] and len(doc["results"]) == 16
    assert doc["summary"]["formal"]["tasks"] == 8
    code, _, err = fllm_inproc("report", str(tmp_path / "none.jsonl"))
    assert code == 2 and "no such results file or report" in err
    (tmp_path / "junk.jsonl").write_text('{"fllm_results": 1, "domain": "openagi"}\nnope\n{}\n')
    code, _, err = fllm_inproc("report", str(tmp_path / "junk.jsonl"))
    assert code == 2 and "junk.jsonl:2: not a JSON result line" in err
    assert len(err.strip().splitlines()) == 1


def test_render_html_of_an_empty_report_is_still_a_page() -> None:
    page = parse(render_html({"domain": "d", "model": "m", "strategies": [], "results": []}))
    assert_offline(page)
    assert page.tables == ["facts", "summary"]

"""``fllm bench``: formal planning against the paper's zero- and few-shot baselines."""

from fllm_cli.bench.core import BenchOptions, BenchRun, parse_strategies, run_bench
from fllm_cli.bench.parse import ParseError, parse_plan

__all__ = ["BenchOptions", "BenchRun", "ParseError", "parse_plan", "parse_strategies", "run_bench"]

"""Carrying out plans of tool domains: bindings (how each tool is called) and the runner."""

from fllm_cli.execute.bindings import Binding, read_bindings
from fllm_cli.execute.failure import ToolFailure
from fllm_cli.execute.runner import Runner, RunResult, coerce, type_problem

__all__ = [
    "Binding",
    "RunResult",
    "Runner",
    "ToolFailure",
    "coerce",
    "read_bindings",
    "type_problem",
]

"""LLMFP: the model formulates a planning problem as optimisation, Z3 solves it in a sandbox."""

from fllm_cli.solve.problem import Problem, is_problem_spec, load_problem, validate_problem_spec

__all__ = ["Problem", "is_problem_spec", "load_problem", "validate_problem_spec"]

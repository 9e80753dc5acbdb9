"""Fuzzing harness for fllm: seed corpus, mutators, generators, an oracle and a runner.

Everything here drives the real entry point (``python -m fllm_cli``) in a subprocess; the
independent plan checker in :mod:`fuzz.checker` never imports fllm's verifier or automata.
"""

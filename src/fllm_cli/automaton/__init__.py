"""Pushdown automata: tables, configurations, and the dead-end look-ahead."""

from fllm_cli.automaton.pda import PDA, Config, StackItem, Transition, pda_from_grammar

__all__ = ["PDA", "Config", "StackItem", "Transition", "pda_from_grammar"]

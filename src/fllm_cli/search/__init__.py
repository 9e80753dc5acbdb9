"""LLM-guided backtracking search over automaton configurations."""

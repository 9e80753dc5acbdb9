"""Context-free grammars: model, analyses, and compilation of tool domains."""

from fllm_cli.grammar.cfg import Grammar, Production, Terminal

__all__ = ["Grammar", "Production", "Terminal"]

"""Content languages: what the text of a state, a tool input or an answer may be.

A language is written as a regular expression, a JSON schema (a small subset) or a context-free
grammar in llama.cpp's GBNF syntax, or named (``number``, ``arithmetic``, ...). All of them are
compiled into one grammar representation, which serves twice:

* serialised as GBNF, it constrains the embedded model's decoding (``GenerateRequest.grammar``);
* run by the recogniser, it checks text (the runtime's validate-and-retry for back ends
  without grammars, and ``fllm check-trace``).

Both sides read the same rules, so whatever the decoder can produce the checker accepts.
The supported subsets are documented in docs/agents.md and in each form's module.

The package, one module a concept, each importing only those above it in this list:

* ``rules``: the rule form every language compiles to, and the checks on a rule set;
* ``reader``: the cursor the GBNF and regex readers share;
* ``gbnf``, ``regex``, ``json_schema``: one module a form, each read into rules;
* ``named``: the named languages, each a regex or a GBNF grammar;
* ``recognise``: whether a text belongs to a rule set, and why not;
* ``build``: building a text of a rule set, a chooser deciding at each open point;
* ``language``: :class:`Language` and ``FORMS``, the table of the forms a language is written in.
"""

from fllm_cli.content.build import (
    MAX_CLASS_OPTIONS,
    Pick,
    build_text,
    class_options,
    min_lengths,
    shortest,
)
from fllm_cli.content.gbnf import parse_gbnf, write_gbnf
from fllm_cli.content.json_schema import parse_json_schema
from fllm_cli.content.language import FORMS, Form, Language, language_from_text, make_language
from fllm_cli.content.named import ARITHMETIC_GBNF, NAMED, OBSERVED
from fllm_cli.content.recognise import MAX_CHECK_CHARS, recognise
from fllm_cli.content.regex import parse_regex
from fllm_cli.content.rules import (
    ANY,
    MAX_REPEAT,
    Alt,
    Cls,
    LanguageError,
    Lit,
    Node,
    Ref,
    Rep,
    Seq,
    check_rules,
)

__all__ = [
    "ANY",
    "ARITHMETIC_GBNF",
    "FORMS",
    "MAX_CHECK_CHARS",
    "MAX_CLASS_OPTIONS",
    "MAX_REPEAT",
    "NAMED",
    "OBSERVED",
    "Alt",
    "Cls",
    "Form",
    "Language",
    "LanguageError",
    "Lit",
    "Node",
    "Pick",
    "Ref",
    "Rep",
    "Seq",
    "build_text",
    "check_rules",
    "class_options",
    "language_from_text",
    "make_language",
    "min_lengths",
    "parse_gbnf",
    "parse_json_schema",
    "parse_regex",
    "recognise",
    "shortest",
    "write_gbnf",
]

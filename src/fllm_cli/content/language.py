"""A content language, and the table of the forms it may be written in."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from fllm_cli.content.build import Pick, build_text
from fllm_cli.content.gbnf import parse_gbnf, write_gbnf
from fllm_cli.content.json_schema import parse_json_schema
from fllm_cli.content.named import NAMED
from fllm_cli.content.recognise import recognise
from fllm_cli.content.regex import parse_regex
from fllm_cli.content.rules import LanguageError, Node


@dataclass(frozen=True)
class Language:
    """A content language: how it was written, its grammar rules and a description."""

    form: str  # a key of FORMS: name | regex | json-schema | gbnf
    source: str
    rules: dict[str, Node] = field(compare=False, repr=False)
    description: str = ""

    def check(self, text: str) -> str | None:
        """Return None when ``text`` belongs to the language, else why not (one line)."""
        return recognise(self.rules, text)

    def build(self, pick: Pick, budget: int = 40) -> str:
        """Return a text of the language, ``pick(so_far, options)`` choosing at each point
        (a chooser that writes no text, or a model whose replies never parse, still gets a
        text the language accepts; the length steers to completion as ``budget`` runs out)."""
        return build_text(self.rules, pick, budget)

    @property
    def line_only(self) -> bool:
        """True for the language of any one line: stopping at the line's end enforces it, so a
        back end needs no grammar for it (grammar-bound sampling is slower)."""
        return self.form == "name" and self.source == "line"

    def gbnf(self) -> str:
        """Return a GBNF grammar for decoding: optional space before, optional newline after."""
        lines = ['root ::= " "? c-root "\\n"?', *write_gbnf(self.rules, prefix="c-")]
        return "\n".join(lines) + "\n"

    def json_schema(self) -> dict[str, Any] | None:
        """Return the JSON schema of a json-schema language (for providers' structured replies)."""
        if self.form != "json-schema":
            return None
        value = json.loads(self.source)
        return value if isinstance(value, dict) else None

    def describe(self) -> str:
        """Return a short human description (for prompts and messages)."""
        if self.description:
            return self.description
        shown = self.source if len(self.source) <= 60 else self.source[:57] + "..."
        return FORMS[self.form].describe(shown)

    @property
    def label(self) -> str:
        """Return the spelling shown in stats and check-trace messages."""
        if self.form == "name":
            return self.source
        shown = " ".join(self.source.split())
        return f"{self.form}:{shown[:40]}{'...' if len(shown) > 40 else ''}"


Source = str | dict[str, Any]  # a JSON schema may come parsed
Read = Callable[[Source], tuple[str, dict[str, Node], str]]


@dataclass(frozen=True)
class Form:
    """One way to write a language: how its source is read, and how a source is described."""

    read: Read  # source -> (source as shown, rules, description)
    describe: Callable[[str], str]  # a shortened source -> what the language is, in words
    prefixed: bool = True  # spelt FORM:SOURCE in one string (language_from_text)
    from_file: bool = True  # and FORM@FILE


def _read_name(source: Source) -> tuple[str, dict[str, Node], str]:
    assert isinstance(source, str)
    if source not in NAMED:
        raise LanguageError(f"unknown language '{source}'; named languages: {', '.join(NAMED)}")
    form, text, description = NAMED[source]
    return source, FORMS[form].read(text)[1], description


def _read_regex(source: Source) -> tuple[str, dict[str, Node], str]:
    assert isinstance(source, str)
    return source, parse_regex(source), ""


def _read_json_schema(source: Source) -> tuple[str, dict[str, Node], str]:
    shown = source if isinstance(source, str) else json.dumps(source, ensure_ascii=False)
    return shown, parse_json_schema(source), ""


def _read_gbnf(source: Source) -> tuple[str, dict[str, Node], str]:
    assert isinstance(source, str)
    return source, parse_gbnf(source), ""


def _in_grammar(shown: str) -> str:
    return f"text in the grammar {' '.join(shown.split())}"


FORMS: dict[str, Form] = {
    "name": Form(_read_name, _in_grammar, prefixed=False, from_file=False),
    "regex": Form(_read_regex, "text matching the regular expression {}".format, from_file=False),
    "json-schema": Form(_read_json_schema, "JSON matching the schema {}".format),
    "gbnf": Form(_read_gbnf, _in_grammar),
}


def make_language(form: str, source: Source) -> Language:
    """Build a language of ``form`` (name, regex, json-schema, gbnf); raise LanguageError."""
    if form not in FORMS:
        raise LanguageError(f"unknown language form '{form}'; use regex, json-schema or gbnf")
    shown, rules, description = FORMS[form].read(source)
    return Language(form, shown, rules, description)


def language_from_text(text: str, read_file: Callable[[str], str] | None = None) -> Language:
    """Read the one-string spelling of ``--answer`` and tool declarations.

    ``NAME`` (number, integer, yes-no, query, line, arithmetic), ``regex:PATTERN``,
    ``json-schema:SCHEMA``, ``gbnf:GRAMMAR``, ``gbnf@FILE`` / ``json-schema@FILE`` (with
    ``read_file``); anything else is a regular expression (so ``yes|no`` works as written).
    """
    value = text.strip()
    if not value:
        raise LanguageError("empty language")
    if value in NAMED:
        return make_language("name", value)
    for form, spelt in FORMS.items():
        if spelt.prefixed and value.startswith(form + ":"):
            return make_language(form, value[len(form) + 1 :])
        if spelt.from_file and value.startswith(form + "@"):
            if read_file is None:
                raise LanguageError(f"{form}@FILE is not available here")
            return make_language(form, read_file(value[len(form) + 1 :]))
    return make_language("regex", value)

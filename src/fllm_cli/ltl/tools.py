"""Tools the environment runs for ``Observation`` states, and how they are found.

A tool is any object with ``name``, ``description`` and ``__call__(text) -> str``; a plain
function also works (its name and first docstring line are used). Built-in tools are
``calculator``, ``search`` and ``lookup``; more come from the ``fllm.tools`` entry-point group or
from ``--tool-module``. A tool that raises yields an error observation, never a crash.

A tool may also declare ``input_language``: the language its input must belong to, in the
spelling of ``--answer`` (``arithmetic``, ``query``, ``regex:...``, ``json-schema:...``,
``gbnf:...``) or as a :class:`~fllm_cli.content.Language`. The runtime then constrains the
``Action Input`` state that feeds it; the calculator takes ``arithmetic``, search and lookup a
``query`` (one short line).
"""

from __future__ import annotations

import importlib
import json
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from difflib import SequenceMatcher
from importlib.metadata import entry_points
from typing import Any, Protocol, runtime_checkable

from fllm_cli.content import Language, LanguageError, language_from_text
from fllm_cli.errors import UsageError
from fllm_cli.ltl.calculator import evaluate, format_number
from fllm_cli.textio import read_text

ENTRY_POINT_GROUP = "fllm.tools"


@runtime_checkable
class Tool(Protocol):
    """What the runtime needs from a tool."""

    name: str
    description: str

    def __call__(self, text: str) -> str:
        """Run the tool on its input and return the observation."""


@dataclass(frozen=True)
class ToolContext:
    """What tool factories may use: the corpus for search/lookup."""

    corpus: str | None = None


@dataclass
class FunctionTool:
    """Wrap a plain function as a tool."""

    name: str
    description: str
    function: Callable[[str], Any]
    input_language: str | None = None

    def __call__(self, text: str) -> str:
        """Call the function and turn its result into text."""
        return str(self.function(text))


class Calculator:
    """Evaluate arithmetic such as ``(48 / 2) + 48``."""

    name = "calculator"
    description = "evaluates an arithmetic expression, e.g. 0.17 * 240 + 12, and returns the number"
    input_language = "arithmetic"

    def __call__(self, text: str) -> str:
        """Return the value of the expression."""
        return format_number(evaluate(text))


_SENTENCE = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9\"'(])")


def sentences(text: str) -> list[str]:
    """Split a passage into sentences (a simple rule, good enough for lookup)."""
    return [s.strip() for s in _SENTENCE.split(text.strip()) if s.strip()]


@dataclass
class Corpus:
    """A local JSONL corpus of pages (``{"title": ..., "text": ...}``) with a reading position."""

    pages: dict[str, str]
    current: str | None = None
    lookup_term: str = ""
    lookup_hits: list[str] = field(default_factory=list)
    lookup_index: int = 0

    @classmethod
    def load(cls, path: str) -> Corpus:
        """Read the corpus; bad lines are a UsageError naming the line."""
        lines = read_text(path, "corpus").splitlines()
        pages: dict[str, str] = {}
        for number, line in enumerate(lines, 1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
                pages[str(row["title"])] = str(row["text"])
            except (ValueError, KeyError, TypeError):
                raise UsageError(
                    f'{path}:{number}: expected {{"title": ..., "text": ...}}'
                ) from None
        return cls(pages)

    def search(self, query: str, n_sentences: int = 5, n_similar: int = 5) -> str:
        """Return the page's first sentences, or the most similar titles."""
        key = query.strip().strip("[]\"'").strip()
        found = next((t for t in self.pages if t.lower() == key.lower()), None)
        if found is None:
            ranked = sorted(
                self.pages, key=lambda t: -SequenceMatcher(None, t.lower(), key.lower()).ratio()
            )
            similar = ", ".join(ranked[:n_similar])
            return f"Could not find [{key}]. Similar: [{similar}]."
        self.current = found
        self.lookup_term, self.lookup_hits, self.lookup_index = "", [], 0
        return " ".join(sentences(self.pages[found])[:n_sentences])

    def lookup(self, term: str) -> str:
        """Return the next sentence of the current page that contains ``term``."""
        if self.current is None:
            return "No page is open yet; use search first."
        term = term.strip().strip("[]\"'").strip()
        if term.lower() != self.lookup_term.lower():
            self.lookup_term = term
            self.lookup_hits = [
                s for s in sentences(self.pages[self.current]) if term.lower() in s.lower()
            ]
            self.lookup_index = 0
        if self.lookup_index >= len(self.lookup_hits):
            return "No more results." if self.lookup_hits else f"No sentence mentions '{term}'."
        self.lookup_index += 1
        hit = self.lookup_hits[self.lookup_index - 1]
        return f"(Result {self.lookup_index} / {len(self.lookup_hits)}) {hit}"


def _corpus_tools(context: ToolContext) -> list[Tool]:
    if context.corpus is None:
        raise UsageError("the search and lookup tools need a corpus: pass --corpus FILE.jsonl")
    corpus = Corpus.load(context.corpus)
    search = FunctionTool(
        "search",
        "returns the first sentences of the page with this exact title, or the most similar titles",
        corpus.search,
        input_language="query",
    )
    lookup = FunctionTool(
        "lookup",
        "returns the next sentence containing this text in the page last searched",
        corpus.lookup,
        input_language="query",
    )
    return [search, lookup]


BUILTIN = ("calculator", "search", "lookup")
BUILTIN_INPUT_LANGUAGES = {"calculator": "arithmetic", "search": "query", "lookup": "query"}


def input_language(tool: Any, name: str) -> Language | None:
    """Return the language a tool declares for its input, or None; a bad one is a UsageError."""
    declared = getattr(tool, "input_language", None)
    if declared is None or isinstance(declared, Language):
        return declared
    try:
        return language_from_text(str(declared))
    except LanguageError as exc:
        raise UsageError(f"tool '{name}': bad input_language: {exc}") from None


def tool_input_languages(tools: dict[str, Tool]) -> dict[str, Language]:
    """Return the declared input language of each tool that has one, by lower-case name."""
    found = {name.lower(): input_language(tool, name) for name, tool in tools.items()}
    return {name: lang for name, lang in found.items() if lang is not None}


def builtin_input_languages(names: Iterable[str]) -> dict[str, Language]:
    """Return the input languages of the named built-in tools (for check-trace, no corpus)."""
    out: dict[str, Language] = {}
    for name in names:
        spelling = BUILTIN_INPUT_LANGUAGES.get(name.strip().lower())
        if spelling is not None:
            out[name.strip().lower()] = language_from_text(spelling)
    return out


def declared_input_languages(
    names: Iterable[str], modules: Iterable[str] = ()
) -> dict[str, Language]:
    """Return the input languages of the named tools without running any (for check-trace).

    Built-ins come from their table; other names are looked up among the tools of ``modules``
    (``--tool-module``) and the ``fllm.tools`` plugins, which are loaded but never called.
    Without ``names``, every tool of ``modules`` counts.
    Keys are lower-case tool names; a tool without a declared language has no entry.
    """
    wanted = [n.strip() for n in names if n.strip()]
    modules = list(modules)
    if not wanted and modules:  # no --tools: every tool of the modules
        wanted = [key for m in modules for key in module_tools(m, ToolContext())]
    out = builtin_input_languages(wanted)
    rest = [n for n in wanted if n.lower() not in out and n.lower() not in BUILTIN]
    if not rest:
        return out
    context = ToolContext()
    pool: dict[str, Tool] = {}
    for module in modules:
        pool.update(module_tools(module, context))
    if any(n.lower() not in {k.lower() for k in pool} for n in rest):
        for key, tool in plugin_tools(context).items():
            pool.setdefault(key, tool)
    by_lower = {k.lower(): (k, t) for k, t in pool.items()}
    for name in rest:
        if name.lower() in by_lower:
            key, tool = by_lower[name.lower()]
            language = input_language(tool, key)
            if language is not None:
                out[name.lower()] = language
    return out


def as_tool(obj: Any, name: str | None = None) -> Tool:
    """Accept a tool object or a plain function; anything else is a UsageError."""
    if isinstance(obj, Tool):
        return obj
    if callable(obj) and hasattr(obj, "__name__"):
        doc = (obj.__doc__ or "").strip().splitlines()
        return FunctionTool(name or obj.__name__, doc[0] if doc else obj.__name__, obj)
    raise UsageError(f"'{name or obj!r}' is not a tool (needs name, description and __call__)")


def plugin_tools(context: ToolContext) -> dict[str, Tool]:
    """Return the tools published by installed packages in the ``fllm.tools`` group."""
    found: dict[str, Tool] = {}
    for ep in entry_points(group=ENTRY_POINT_GROUP):
        try:
            obj = ep.load()
        except Exception as exc:  # a broken plugin must not break fllm
            raise UsageError(f"cannot load tool plugin '{ep.name}': {exc}") from None
        if isinstance(obj, type):
            obj = obj()
        found[ep.name] = as_tool(obj, ep.name)
    return found


def module_tools(module_name: str, context: ToolContext) -> dict[str, Tool]:
    """Import ``module_name`` and return its ``TOOLS`` or the result of ``make_tools(context)``."""
    try:
        module = importlib.import_module(module_name)
    except Exception as exc:
        raise UsageError(f"cannot import tool module '{module_name}': {exc}") from None
    if hasattr(module, "make_tools"):
        items: Iterable[Any] = module.make_tools(context)
    elif hasattr(module, "TOOLS"):
        items = module.TOOLS
    else:
        raise UsageError(
            f"tool module '{module_name}' defines neither TOOLS nor make_tools(context)"
        )
    tools = [as_tool(obj) for obj in items]
    return {t.name: t for t in tools}


def build_tools(
    names: Iterable[str], context: ToolContext, modules: Iterable[str] = ()
) -> dict[str, Tool]:
    """Return the requested tools by name (case-insensitive), in the order asked."""
    pool: dict[str, Tool] = {}
    for module in modules:
        pool.update(module_tools(module, context))
    wanted = [n.strip() for n in names if n.strip()]
    if any(n.lower() == "calculator" for n in wanted):
        pool.setdefault("calculator", Calculator())
    if any(n.lower() in ("search", "lookup") for n in wanted):
        for tool in _corpus_tools(context):
            pool.setdefault(tool.name, tool)
    if any(n.lower() not in {k.lower() for k in pool} for n in wanted):
        for key, tool in plugin_tools(context).items():
            pool.setdefault(key, tool)
    chosen: dict[str, Tool] = {}
    by_lower = {k.lower(): (k, t) for k, t in pool.items()}
    for name in wanted:
        if name.lower() not in by_lower:
            from fllm_cli.diagnostics import did_you_mean

            known = sorted({*BUILTIN, *pool})
            raise UsageError(
                f"unknown tool '{name}'{did_you_mean(name, known)}; known: {', '.join(known)}"
            )
        key, tool = by_lower[name.lower()]
        chosen[key] = tool
    return chosen


def run_tool(tools: dict[str, Tool], action: str, text: str) -> tuple[str, bool]:
    """Run the tool named ``action``; return (observation, ok). Failures become observations."""
    name = action.strip().strip("[]`'\"").strip()
    tool = next((t for k, t in tools.items() if k.lower() == name.lower()), None)
    if tool is None:
        known = ", ".join(tools) or "none"
        return f"Error: there is no tool named '{name}'. Available tools: {known}.", False
    try:
        return str(tool(text)).strip(), True
    except Exception as exc:  # a failing tool is an observation for the agent, not a crash
        detail = str(exc).strip() or type(exc).__name__
        return f"Error: {name} failed: {detail}", False

"""Split transcripts on state tags and check them against an agent's automaton.

This is the formal side of ``fllm check-trace``: pure functions from text to segments to the
first violation. The runtime uses the same :class:`TagMatcher` to find tags in model output.
"""

from __future__ import annotations

import itertools
import re
from dataclasses import dataclass, field

from fllm_cli.errors import UsageError
from fllm_cli.ltl.automaton import Automaton
from fllm_cli.ltl.languages import ContentRules
from fllm_cli.ltl.spec import AgentSpec

DEFAULT_SPLIT = r"^(Question|Claim):"
SPLIT_WORDS = ("Question:", "Claim:")  # what DEFAULT_SPLIT starts an example with


def _words_pattern(tags: tuple[str, ...], escaped: bool) -> re.Pattern[str]:
    """Where a keyword starts after whitespace (behind any backslashes). Zero-width after the
    backslashes, so overlapping keywords each get theirs ("Final Thought:" holds "Thought:"),
    and blind to backslashes after a keyword's inner spaces, so escaping the inner one does not
    hide the outer one: which positions qualify is the same before and after escaping."""
    words = sorted({*(t.strip() for t in tags), *SPLIT_WORDS}, key=len, reverse=True)
    alts = "|".join(r" \\*".join(re.escape(p) for p in w.split(" ")) for w in words if w)
    lead = r"\\(\\*)" if escaped else r"(\\*)"
    return re.compile(r"(?<!\S)" + lead + "(?=" + alts + ")")


def escape_text(text: str, tags: tuple[str, ...]) -> str:
    """Write ``text`` so that no tag or example break can be read in it: a backslash goes
    before every tag, "Question:" or "Claim:" that follows whitespace (and before backslashes
    already there), so ``check-trace`` reads back exactly the text the run had."""
    if not text:
        return text
    return _words_pattern(tags, False).sub(lambda m: "\\" + m.group(1), text)


def unescape_text(text: str, tags: tuple[str, ...]) -> str:
    """Undo :func:`escape_text`."""
    if "\\" not in text:
        return text
    return _words_pattern(tags, True).sub(lambda m: m.group(1), text)


@dataclass(frozen=True)
class Segment:
    """One state of a transcript: which state, its text, and the 1-based line of its tag."""

    state: str
    text: str
    line: int


@dataclass(frozen=True)
class Violation:
    """The first place where a transcript breaks the spec."""

    line: int
    message: str
    allowed: tuple[str, ...] = ()


@dataclass
class ExampleResult:
    """The check of one example of a transcript file."""

    line: int
    segments: list[Segment] = field(default_factory=list)
    violation: Violation | None = None

    @property
    def ok(self) -> bool:
        """Return True when the example satisfies the spec."""
        return self.violation is None


class TagMatcher:
    """Find state tags in text: the longest tag wins, and a tag must follow whitespace."""

    def __init__(self, spec: AgentSpec) -> None:
        by_tag = {s.text.strip(): s.name for s in spec.states}
        self.state_of = by_tag
        self.tags = tuple(by_tag)
        ordered = sorted(by_tag, key=len, reverse=True)
        self.pattern = re.compile(r"(?<!\S)(" + "|".join(re.escape(t) for t in ordered) + r")")

    def first(self, text: str) -> tuple[int, int, str] | None:
        """Return ``(start, end, state)`` of the first tag in ``text``, or None."""
        match = self.pattern.search(text)
        if match is None:
            return None
        return match.start(), match.end(), self.state_of[match.group(1)]

    def split(self, text: str, first_line: int = 1) -> tuple[str, list[Segment]]:
        """Return the text before the first tag and the tagged segments after it."""
        matches = list(self.pattern.finditer(text))
        if not matches:
            return text, []
        segments = []
        for i, match in enumerate(matches):
            end = matches[i + 1].start() if i + 1 < len(matches) else len(text)
            line = first_line + text.count("\n", 0, match.start())
            body = unescape_text(text[match.end() : end].strip(), self.tags)
            segments.append(Segment(self.state_of[match.group(1)], body, line))
        return text[: matches[0].start()], segments


def split_examples(text: str, split: str | None, spec: AgentSpec) -> list[tuple[int, str]]:
    """Cut a file into examples at lines matching ``split``; return (first line, text) pairs."""
    if not split:
        return [(1, text)]
    try:
        pattern = re.compile(split, re.MULTILINE)
    except re.error as exc:
        raise UsageError(f"bad --split pattern {split!r}: {exc}") from None
    tags = {s.text.strip() for s in spec.states}
    starts = [m.start() for m in pattern.finditer(text) if m.group(0).strip() not in tags]
    if not starts:
        return [(1, text)]
    bounds = [*starts, len(text)]
    chunks = [(1, text[: bounds[0]])] if text[: bounds[0]].strip() else []
    for a, b in itertools.pairwise(bounds):
        chunks.append((1 + text.count("\n", 0, a), text[a:b]))
    return chunks


def check_segments(
    spec: AgentSpec,
    automaton: Automaton,
    segments: list[Segment],
    tools: tuple[str, ...] | None = None,
    end_line: int = 0,
    rules: ContentRules | None = None,
) -> Violation | None:
    """Return the first violation of ``segments`` (order, content, completeness), or None.

    With ``rules``, the text of each step must also belong to its content language; an empty
    text is accepted (it is how a closing run records a state it could not fill).
    """
    if automaton.empty:
        return Violation(1, "the spec admits no run at all")
    if not segments:
        return Violation(end_line or 1, "no state tags found", _tags(spec, automaton.moves(0)))
    node = automaton.initial
    for index, seg in enumerate(segments):
        allowed = automaton.moves(node)
        tag = spec.state(seg.state).text.strip()
        nxt = automaton.step(node, seg.state)
        if nxt is None:
            where = "at the start" if node == automaton.initial else "here"
            return Violation(seg.line, f"'{tag}' is not allowed {where}", _tags(spec, allowed))
        bad = _content_problem(spec, seg, tools)
        if not bad and rules is not None:
            before = [(s.state, s.text) for s in segments[:index]]
            bad = language_problem(spec, rules, seg.state, seg.text, before)
        if bad:
            return Violation(seg.line, bad)
        node = nxt
    if node not in automaton.accepting:
        last = spec.state(segments[-1].state).text.strip()
        return Violation(
            end_line or segments[-1].line,
            f"the transcript stops after '{last}' before reaching "
            f"'{_tags(spec, (spec.final,))[0]}'",
            _tags(spec, automaton.moves(node)),
        )
    return None


def _content_problem(spec: AgentSpec, seg: Segment, tools: tuple[str, ...] | None) -> str:
    decl = spec.state(seg.state)
    if not decl.choices:
        return ""
    options = tools if decl.tool_choices else decl.choices
    if options is None:
        return ""
    if any(seg.text.strip().lower() == o.lower() for o in options):
        return ""
    shown = ", ".join(options)
    return f"'{decl.text.strip()}' must be one of [{shown}], got {seg.text.strip()[:60]!r}"


def language_problem(
    spec: AgentSpec,
    rules: ContentRules,
    state: str,
    text: str,
    before: list[tuple[str, str]],
) -> str:
    """Return why ``text`` is outside the language of ``state`` here, or ''."""
    language = rules.language_for(spec, state, before)
    content = text.strip()
    if language is None or not content:
        return ""
    problem = language.check(content)
    if problem is None:
        return ""
    tag = spec.state(state).text.strip()
    return f"the text of '{tag}' is not {language.describe()} ({language.label}): {problem}"


def _tags(spec: AgentSpec, names: tuple[str, ...]) -> tuple[str, ...]:
    return tuple(spec.state(n).text.strip() for n in names)


def check_transcript(
    spec: AgentSpec,
    automaton: Automaton,
    text: str,
    split: str | None = DEFAULT_SPLIT,
    tools: tuple[str, ...] | None = None,
    rules: ContentRules | None = None,
) -> list[ExampleResult]:
    """Check every example of a transcript file; one result per example."""
    matcher = TagMatcher(spec)
    results = []
    for line, chunk in split_examples(text, split, spec):
        _, segments = matcher.split(chunk, line)
        end_line = line + chunk.rstrip().count("\n")
        violation = check_segments(spec, automaton, segments, tools, end_line, rules)
        results.append(ExampleResult(line, segments, violation))
    return results

"""Which content language applies to which step of a run or a transcript.

A state's own ``:language`` applies to its text; ``--answer`` overrides the language of the
answer state; an ``Action Input`` state without a language of its own takes the input language
of the tool named by the ``Action`` step before it. The runtime and ``fllm check-trace`` both
ask :meth:`ContentRules.language_for`, so they agree on every step.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from fllm_cli.content import OBSERVED, Alt, Language, Lit, Node
from fllm_cli.errors import UsageError
from fllm_cli.ltl.spec import AgentSpec


def answer_state(spec: AgentSpec) -> str | None:
    """Return the state whose text is the answer: tagged ``Answer:`` or named ``Answer``."""
    for decl in spec.states:
        if decl.text.strip().lower() == "answer:":
            return decl.name
    for decl in spec.states:
        if decl.name.lower() == "answer":
            return decl.name
    return None


def tool_name(text: str) -> str:
    """Normalise the text of an ``Action`` step to a tool name, as the environment does."""
    return text.strip().strip("[]`'\"").strip().lower()


@dataclass(frozen=True)
class ContentRules:
    """The languages of a run: per state, and per tool for the input that feeds it."""

    states: dict[str, Language] = field(default_factory=dict)
    tools: dict[str, Language] = field(default_factory=dict)

    def language_for(
        self, spec: AgentSpec, state: str, before: Sequence[tuple[str, str]]
    ) -> Language | None:
        """Return the language of ``state``; ``before`` is the (state, text) pairs so far."""
        if state in self.states:
            language = self.states[state]
            if language.form == "name" and language.source in OBSERVED:
                return grounded(spec, language, before)
            return language
        decl = spec.state(state)
        if decl.text.strip().lower() != "action input:" or not self.tools:
            return None
        for name, text in reversed(before):
            prior = spec.state(name)
            if prior.env_input:
                return None
            if prior.text.strip().lower() == "action:":
                return self.tools.get(tool_name(text))
        return None


_NUMBER = re.compile(r"(?<![\w.])-?\d+(?:\.\d+)?(?![\w]|\.\d)")
_WORDS = re.compile(r"\S+")
MAX_SPAN_WORDS = 8
_EDGES = ".,;:!?()[]{}\"'"
MAX_CANDIDATES = 400


def grounded(spec: AgentSpec, language: Language, before: Sequence[tuple[str, str]]) -> Language:
    """The answer language taken from the last observation: its numbers (``observed-number``)
    or its runs of up to 8 words (``observed-span``, without the punctuation, brackets and
    quotes at its edges). With
    no observation, or nothing in it, no text belongs to it: an answer the observations do not
    support is never written."""
    last = next((t for n, t in reversed(before) if spec.state(n).env_input), "")
    if language.source == "observed-number":
        found = [m.group(0) for m in _NUMBER.finditer(last)]
    else:
        words = _WORDS.findall(last)
        found = [
            " ".join(words[i : i + n]).strip(_EDGES)
            for n in range(1, MAX_SPAN_WORDS + 1)
            for i in range(len(words) - n + 1)
        ]
    values = list(dict.fromkeys(v for v in found if v))[:MAX_CANDIDATES]
    rules: dict[str, Node] = {"root": Alt(tuple(Lit(v) for v in values))}
    shown = ", ".join(values[:4]) + (", ..." if len(values) > 4 else "")
    described = f"{language.description} ({shown})" if values else language.description
    return Language("name", language.source, rules, described)


def content_rules(
    spec: AgentSpec, tools: dict[str, Language] | None = None, answer: Language | None = None
) -> ContentRules:
    """Collect the spec's state languages, the tools' input languages and ``--answer``."""
    states = {d.name: d.language for d in spec.states if d.language is not None}
    if answer is not None:
        name = answer_state(spec)
        if name is None:
            raise UsageError(
                f"--answer: agent '{spec.name}' has no answer state (tagged 'Answer:')"
            )
        decl = spec.state(name)
        if decl.choices or decl.env_input:
            what = "has :choices" if decl.choices else "is filled by the environment"
            raise UsageError(f"--answer: the answer state '{name}' of '{spec.name}' {what}")
        states[name] = answer
    return ContentRules(states, dict(tools or {}))

"""The model interface.

Every back end answers two kinds of request:

* ``choose``: a self-contained prompt plus the numbered options it lists; the answer is always
  one of the options (an index), whatever the model replied;
* ``generate``: free text for a prompt, with optional stop sequences and an optional GBNF
  grammar the text must belong to. Back ends that can decode under a grammar (the embedded
  model) do so and set ``supports_grammar``; the others ignore it, and their callers check the
  reply themselves.

Text-only back ends (LiteLLM, servers, scripted) derive ``choose`` from ``generate`` through
:class:`TextModel`: parse the reply, ask once more with a short correction when it names no
option, then fall back deterministically to the first option and say so.
"""

from __future__ import annotations

import re
import time
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Any


@dataclass
class Usage:
    """Tokens and money spent."""

    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float = 0.0

    def add(self, other: Usage) -> None:
        """Accumulate ``other`` into this record."""
        self.prompt_tokens += other.prompt_tokens
        self.completion_tokens += other.completion_tokens
        self.cost_usd += other.cost_usd


@dataclass(frozen=True)
class ChoiceRequest:
    """Pick one of ``options``; ``prompt`` already lists them numbered from 1."""

    prompt: str
    options: tuple[str, ...]
    kind: str = "plan"


@dataclass
class ChoiceResult:
    """The option chosen (0-based) and what it cost."""

    index: int
    raw: str = ""
    fallback: bool = False
    calls: int = 0
    cached: bool = False
    usage: Usage = field(default_factory=Usage)
    seconds: float = 0.0
    exchanges: list[dict[str, Any]] = field(default_factory=list)
    mode: str = ""  # how an API model was asked: schema, bias, logprobs or text


@dataclass(frozen=True)
class GenerateRequest:
    """Generate free text for ``prompt``, stopping at any of ``stop``."""

    prompt: str
    stop: tuple[str, ...] = ()
    max_tokens: int = 512
    system: str | None = None
    kind: str = "generate"
    grammar: str | None = None  # GBNF (llama.cpp syntax); a hint the back end may ignore
    # A JSON schema the reply should follow (API models' response_format); a hint as well.
    schema: dict[str, Any] | None = None


@dataclass
class Generation:
    """Generated text and what it cost."""

    text: str
    calls: int = 1
    cached: bool = False
    usage: Usage = field(default_factory=Usage)
    seconds: float = 0.0
    finish_reason: str | None = None


class Model(ABC):
    """A back end: chooses among options and generates text."""

    name: str = "model"
    supports_grammar: bool = False  # True when generate() decodes under request.grammar
    # True for models that can read a whole request and propose a plan's interface and tools
    # (API models); plan-level search then starts from their proposal (search/proposal.py).
    reads_requests: bool = False

    @abstractmethod
    def choose(self, request: ChoiceRequest) -> ChoiceResult:
        """Return one of ``request.options``."""

    @abstractmethod
    def generate(self, request: GenerateRequest) -> Generation:
        """Return free text."""

    def close(self) -> None:  # noqa: B027 - optional hook
        """Release resources (models, connections)."""

    def info(self) -> dict[str, Any]:
        """Return back-end facts for the stats (load time, path, ...)."""
        return {}


_INT = re.compile(r"(?<![\w.\-])(\d+)(?![\w])")


def _norm(text: str) -> str:
    return " ".join(re.sub(r"[^\w\s:]", " ", text.lower()).split())


def parse_choice(reply: str, options: tuple[str, ...] | list[str]) -> int | None:
    """Return the 0-based option a reply names, or None.

    The first integer in the reply that is a listed option number wins. Otherwise the option
    with the longest run of trailing words found in the reply ("Image Captioning" names "the
    output of Image Captioning"); a tie names nothing.
    """
    n = len(options)
    for match in _INT.finditer(reply):
        value = int(match.group(1))
        if 1 <= value <= n:
            return value - 1
    text = f" {_norm(reply)} "
    if not text.strip():
        return None
    scores = [_tail_match(_norm(option).split(), text) for option in options]
    best = max(scores, default=0)
    if best == 0 or scores.count(best) > 1:
        return None
    return scores.index(best)


def _tail_match(words: list[str], text: str) -> int:
    """Return how many trailing words of an option appear together in ``text``."""
    for k in range(len(words)):
        if f" {' '.join(words[k:])} " in text:
            return len(words) - k
    return 0


CORRECTION = (
    "\n\nYour previous reply was: {reply!r}. It does not name one of the options. "
    "Reply with one number from 1 to {n} only."
)


class TextModel(Model):
    """A back end that only generates text; ``choose`` is built on ``generate``."""

    choice_max_tokens = 8

    def choose(self, request: ChoiceRequest) -> ChoiceResult:
        """Ask, parse, correct once, then fall back to the first option."""
        start = time.perf_counter()
        result = ChoiceResult(index=0)
        prompt = request.prompt
        for attempt in range(2):
            gen = self.generate(
                GenerateRequest(prompt=prompt, max_tokens=self.choice_max_tokens, kind="choice")
            )
            result.calls += gen.calls
            result.cached = gen.cached if attempt == 0 else (result.cached and gen.cached)
            result.usage.add(gen.usage)
            result.exchanges.append({"prompt": prompt, "reply": gen.text, "cached": gen.cached})
            result.raw = gen.text
            index = parse_choice(gen.text, request.options)
            if index is not None:
                result.index = index
                result.seconds = time.perf_counter() - start
                return result
            prompt = request.prompt + CORRECTION.format(
                reply=gen.text[:200], n=len(request.options)
            )
        result.index = 0
        result.fallback = True
        result.seconds = time.perf_counter() - start
        return result

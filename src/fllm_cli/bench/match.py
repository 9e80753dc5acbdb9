"""Find a domain's terminal names in free text, robustly and longest match first.

Text and names are cut into lowercase alphanumeric tokens (so case, punctuation, hyphens and
underscores do not matter), plurals and British spellings are folded, and a few filler words
("the", "a", "of") may sit between the tokens of a name. Tool names also get short aliases
(the name without a leading modality word, "Denoising" for "Image Denoising") when the alias
belongs to one tool only.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

FILLERS = frozenset({"a", "an", "the", "of"})
_TOKEN = re.compile(r"[A-Za-z0-9]+")


def stem(token: str) -> str:
    """Fold case, plurals and -isation spellings of one token."""
    t = token.lower()
    t = re.sub(r"is(ation|e|ed|ing)$", r"iz\1", t) if len(t) > 6 else t
    if len(t) > 4 and t.endswith("ies"):
        return t[:-3] + "y"
    if len(t) > 3 and t.endswith("s") and not t.endswith(("ss", "us", "is")):
        return t[:-1]
    return t


def tokens(text: str) -> list[tuple[str, int, int]]:
    """Return (stemmed token, start, end) for each alphanumeric run of ``text``."""
    return [(stem(m.group()), m.start(), m.end()) for m in _TOKEN.finditer(text)]


@dataclass(frozen=True)
class Mention:
    """A terminal named in the text, with its character span."""

    name: str
    start: int
    end: int


class Matcher:
    """Finds terminal names (and unambiguous aliases) in text."""

    def __init__(self, names: list[str], drop_words: frozenset[str] = frozenset()) -> None:
        self.patterns: list[tuple[tuple[str, ...], str]] = []
        full = {name: tuple(t for t, _, _ in tokens(name)) for name in names}
        for name, toks in full.items():
            if toks:
                self.patterns.append((toks, name))
        self.patterns.extend(_aliases(full, {stem(w) for w in drop_words}))
        self.patterns.sort(key=lambda p: -len(p[0]))

    def find(self, text: str) -> list[Mention]:
        """Return the non-overlapping mentions in text order, the longest at each place."""
        toks = tokens(text)
        out: list[Mention] = []
        i = 0
        while i < len(toks):
            hit = self._match_at(toks, i)
            if hit is None:
                i += 1
                continue
            name, j = hit
            out.append(Mention(name, toks[i][1], toks[j - 1][2]))
            i = j
        return out

    def _match_at(self, toks: list[tuple[str, int, int]], i: int) -> tuple[str, int] | None:
        """Return (name, index after the match) for the longest pattern starting at ``i``."""
        for pattern, name in self.patterns:
            j = _align(pattern, toks, i)
            if j is not None:
                return name, j
        return None


def _align(pattern: tuple[str, ...], toks: list[tuple[str, int, int]], i: int) -> int | None:
    """Match ``pattern`` at ``i``, skipping filler words inside it; return the end index."""
    k = 0
    j = i
    while k < len(pattern):
        if j >= len(toks):
            return None
        if toks[j][0] == pattern[k]:
            k += 1
            j += 1
        elif k > 0 and toks[j][0] in FILLERS:
            j += 1
        else:
            return None
    return j


def _aliases(full: dict[str, tuple[str, ...]], drop: set[str]) -> list[tuple[tuple[str, ...], str]]:
    """Return short forms that point at exactly one name and occur inside no other name."""
    candidates: dict[tuple[str, ...], set[str]] = {}
    for name, toks in full.items():
        short = toks
        while short and short[0] in drop:
            short = short[1:]
        forms = [short] if short != toks else []
        if len(toks) >= 4:
            forms.append(toks[:-1])
        for form in forms:
            if form and form[0] not in FILLERS and not (len(form) == 1 and form[0] in drop):
                candidates.setdefault(form, set()).add(name)
    out = []
    for form, owners in candidates.items():
        if len(owners) != 1 or form in full.values():
            continue
        owner = next(iter(owners))
        if any(_contains(toks, form) for name, toks in full.items() if name != owner):
            continue
        out.append((form, owner))
    return out


def _contains(toks: tuple[str, ...], part: tuple[str, ...]) -> bool:
    """Say whether ``part`` occurs contiguously in ``toks``."""
    n = len(part)
    return any(toks[i : i + n] == part for i in range(len(toks) - n + 1))

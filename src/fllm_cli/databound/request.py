"""Reading a task's request: candidate values from the text, the model picks among them.

Each request field of a data-bound domain has a type. Generic extraction proposes candidates
from the task text: places that the task's data names (or, for ``free`` places, capitalised
phrases), amounts of money, whole numbers and number words, dates, and the phrases of each
option. The domain's cue words rank the candidates (a place after "from", a number before
"people"). When one candidate is left, or the cues single one out, it is taken; otherwise the
model is asked to pick, through the same constrained-choice call as planning. Nothing here
knows a benchmark's wording: every word it looks for comes from the domain file or the data.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from fllm_cli.databound.spec import DataSpec, RequestField
from fllm_cli.databound.tables import Record
from fllm_cli.errors import UsageError

MONTHS = {
    name: number
    for number, names in enumerate(
        [
            ("january", "jan"),
            ("february", "feb"),
            ("march", "mar"),
            ("april", "apr"),
            ("may",),
            ("june", "jun"),
            ("july", "jul"),
            ("august", "aug"),
            ("september", "sep", "sept"),
            ("october", "oct"),
            ("november", "nov"),
            ("december", "dec"),
        ],
        1,
    )
    for name in names
}
NUMBER_WORDS = {
    "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8,
    "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "fourteen": 14, "twenty": 20,
}  # fmt: skip
_MONTH = "|".join(sorted(MONTHS, key=len, reverse=True))
_ORD = r"(\d{1,2})(?:st|nd|rd|th)?"
_DATE_PATTERNS = (
    re.compile(rf"\b({_MONTH})\.?\s+{_ORD}\b(?:,?\s*(\d{{4}}))?", re.I),  # March 16th, 2022
    re.compile(rf"\b(?:the\s+)?{_ORD}\s+(?:of\s+)?({_MONTH})\b(?:,?\s*(\d{{4}}))?", re.I),
    re.compile(r"\b(\d{4})-(\d{2})-(\d{2})\b"),
)
_LINK = r"\s*(?:to|and|-|–|through|till|until)\s*(?:the\s+)?"
_RANGE_BEFORE = re.compile(
    rf"\b{_ORD}{_LINK}{_ORD}\s+(?:of\s+)?({_MONTH})\b(?:,?\s*(\d{{4}}))?", re.I
)
_RANGE_AFTER = re.compile(rf"\b({_MONTH})\.?\s+{_ORD}{_LINK}{_ORD}\b(?:,?\s*(\d{{4}}))?", re.I)
_MONEY = re.compile(
    r"(?:\$|USD\s*|US\$)\s*(\d[\d,]*(?:\.\d+)?)(\s*[kK]\b)?|\b(\d[\d,]*(?:\.\d+)?)\s*(?:dollars|USD|usd)\b"
)
_NUMBER = re.compile(r"\b\d{1,3}\b")
_WORD = re.compile(r"[A-Za-z][A-Za-z'-]*")
_CAPITALISED = re.compile(r"\b(?:(?:St|Ft|Mt)\.\s)?[A-Z][a-z]+(?:\s+(?:[A-Z][a-z]+|of|de|la))*")
MAX_TEXT = 4000


@dataclass
class Reading:
    """What was read for one field: the value, its candidates and who decided."""

    value: Any
    candidates: list[Any] = field(default_factory=list)
    decided_by: str = "text"  # text | cue | model | default | given


Ask = Callable[[RequestField, list[str]], int]


def _mentions(text: str, phrase: str) -> list[int]:
    """Return the start offsets of ``phrase`` in ``text`` as whole words, ignoring case."""
    pattern = r"(?<![A-Za-z0-9])" + re.escape(phrase) + r"(?:s|es)?(?![A-Za-z0-9])"
    return [m.start() for m in re.finditer(pattern, text, re.I)]


def _near_cue(text: str, start: int, end: int, cues: tuple[str, ...], window: int = 3) -> bool:
    before = [w.lower() for w in _WORD.findall(text[:start])][-window:]
    after = [w.lower() for w in _WORD.findall(text[end:])][:window]
    words = before + after
    joined_before = " ".join(before)
    return any((c in words) or (" " in c and c in joined_before) for c in cues)


NEGATIONS = ("not", "no", "non", "without", "avoid", "never", "don't", "won't", "nor", "neither")


def _negated(text: str, start: int, window: int = 6) -> bool:
    before = re.findall(r"[A-Za-z']+", text[max(0, start - 80) : start].lower())[-window:]
    return any(w in NEGATIONS or w.endswith("n't") for w in before) or text[
        max(0, start - 4) : start
    ].lower().endswith(("non-", "non ", "no-"))


def find_dates(text: str) -> list[dt.date]:
    """Return the dates written in ``text`` (a missing year is taken from another date)."""
    years = [int(y) for y in re.findall(r"\b(19\d{2}|20\d{2})\b", text)]
    default_year = years[0] if years else dt.date.today().year
    found: list[tuple[int, dt.date]] = []
    for number, pattern in enumerate(_DATE_PATTERNS):
        for m in pattern.finditer(text):
            try:
                if number == 2:
                    day = dt.date(int(m.group(1)), int(m.group(2)), int(m.group(3)))
                elif number == 0:
                    month, dom, year = MONTHS[m.group(1).lower()], int(m.group(2)), m.group(3)
                    day = dt.date(int(year) if year else default_year, month, dom)
                else:
                    dom, month, year = int(m.group(1)), MONTHS[m.group(2).lower()], m.group(3)
                    day = dt.date(int(year) if year else default_year, month, dom)
            except (ValueError, KeyError):
                continue
            found.append((m.start(), day))
    for m in _RANGE_BEFORE.finditer(text):  # "the 8th to the 10th of March"
        year = int(m.group(4)) if m.group(4) else default_year
        for group, at in ((1, m.start()), (2, m.start(2))):
            with contextlib.suppress(ValueError, KeyError):
                found.append((at, dt.date(year, MONTHS[m.group(3).lower()], int(m.group(group)))))
    for m in _RANGE_AFTER.finditer(text):  # "March 9th and 13th"
        year = int(m.group(4)) if m.group(4) else default_year
        with contextlib.suppress(ValueError, KeyError):
            found.append((m.start(3), dt.date(year, MONTHS[m.group(1).lower()], int(m.group(3)))))
    found.sort()
    out: list[dt.date] = []
    for _, day in found:
        if day not in out:
            out.append(day)
    return out


def _date_spans(text: str) -> list[tuple[int, int]]:
    return [m.span() for p in _DATE_PATTERNS for m in p.finditer(text)]


def find_money(text: str) -> list[tuple[float, int, int]]:
    """Return (amount, start, end) of every amount of money in ``text``."""
    out = []
    for m in _MONEY.finditer(text):
        digits = (m.group(1) or m.group(3) or "").replace(",", "")
        try:
            amount = float(digits)
        except ValueError:
            continue
        if m.group(2):
            amount *= 1000
        out.append((int(amount) if amount.is_integer() else amount, *m.span()))
    return out


class RequestReader:
    """Reads every request field of a spec from a task text and the task's tables."""

    def __init__(self, spec: DataSpec, tables: dict[str, list[Record]], ask: Ask) -> None:
        self.spec = spec
        self.tables = tables
        self.ask = ask

    def read(self, task: str, given: dict[str, Any] | None = None) -> dict[str, Reading]:
        text = task[:MAX_TEXT]
        out: dict[str, Reading] = {}
        first = {f.from_dates for f in self.spec.request.values() if f.from_dates}
        order = sorted(self.spec.request.items(), key=lambda item: item[0] not in first)
        self.claimed: list[tuple[int, int]] = []
        for name, spec_field in order:
            if given is not None and name in given:
                out[name] = Reading(given[name], decided_by="given")
                continue
            reader = getattr(self, "_" + spec_field.type)
            out[name] = reader(spec_field, text, out)
        return out

    def _column(self, ref: str) -> set[str]:
        table, _, column = ref.partition(".")
        return {str(r[column]) for r in self.tables.get(table, []) if r[column]}

    def _choose(
        self, spec_field: RequestField, text: str, spans: list[tuple[Any, int, int]]
    ) -> Reading:
        """Pick among candidate values with their text spans: one left, a cue, or the model."""
        spans = [s for s in spans if not self._claimed(s[1], s[2])]
        if spec_field.avoid:
            spans = [
                s for s in spans if s[1] < 0 or not _near_cue(text, s[1], s[2], spec_field.avoid, 1)
            ]
        reading = self._pick(spec_field, text, spans)
        self.claimed += [(s, e) for value, s, e in spans if value == reading.value and s >= 0]
        return reading

    def _claimed(self, start: int, end: int) -> bool:
        return start >= 0 and any(start < e and s < end for s, e in self.claimed)

    def _pick(
        self, spec_field: RequestField, text: str, spans: list[tuple[Any, int, int]]
    ) -> Reading:
        values: list[Any] = []
        for value, _, _ in spans:
            if value not in values:
                values.append(value)
        if not values:
            return Reading(spec_field.default, [], "default")
        if len(values) == 1:
            return Reading(values[0], values, "text")
        if spec_field.cue:
            cued = [v for v in values if any(
                _near_cue(text, s, e, spec_field.cue) for value, s, e in spans if value == v
            )]  # fmt: skip
            if len(cued) == 1:
                return Reading(cued[0], values, "cue")
            if cued:
                values = cued + [v for v in values if v not in cued]
        index = self.ask(spec_field, [str(v) for v in values])
        return Reading(values[index], values, "model")

    def _place(self, spec_field: RequestField, text: str, done: dict[str, Reading]) -> Reading:
        known: set[str] = set()
        for ref in spec_field.values:
            known |= self._column(ref)
        for ref in spec_field.not_in:
            known -= self._column(ref)
        taken = {str(r.value) for r in done.values() if isinstance(r.value, str)}
        spans = [
            (place, start, start + len(place))
            for place in sorted(known, key=len, reverse=True)
            for start in _mentions(text, place)
            if place not in taken
        ]
        if not spans and spec_field.free:
            blocked = set(MONTHS) | set(NUMBER_WORDS) | self._vocabulary()
            for m in _CAPITALISED.finditer(text):
                phrase = m.group(0).rstrip(".")
                first = phrase.split()[0].lower()
                if phrase.lower() in blocked:
                    continue
                at_sentence_start = m.start() == 0 or text[: m.start()].rstrip()[-1:] in ".!?"
                if first in blocked or at_sentence_start or phrase in taken:
                    continue
                spans.append((phrase, m.start(), m.end()))
        spans.sort(key=lambda s: s[1])
        return self._choose(spec_field, text, spans)

    def _vocabulary(self) -> set[str]:
        """Return every option phrase of the domain (never read as a place)."""
        return {
            phrase.lower()
            for spec_field in self.spec.request.values()
            for phrases in spec_field.options.values()
            for phrase in phrases
        }

    def _money(self, spec_field: RequestField, text: str, done: dict[str, Reading]) -> Reading:
        return self._choose(spec_field, text, find_money(text))

    def _dates(self, spec_field: RequestField, text: str, done: dict[str, Reading]) -> Reading:
        days = find_dates(text)
        if len(days) >= 2 and 0 < (days[-1] - days[0]).days < 60:
            span = [days[0] + dt.timedelta(n) for n in range((days[-1] - days[0]).days + 1)]
        else:
            span = days
        return Reading([d.isoformat() for d in span], [d.isoformat() for d in days], "text")

    def _integer(self, spec_field: RequestField, text: str, done: dict[str, Reading]) -> Reading:
        masked = text
        for start, end in _date_spans(text) + [(s, e) for _, s, e in find_money(text)]:
            masked = masked[:start] + " " * (end - start) + masked[end:]
        spans: list[tuple[Any, int, int]] = []
        for m in _NUMBER.finditer(masked):
            spans.append((int(m.group(0)), *m.span()))
        words = {**NUMBER_WORDS, **spec_field.words}
        for word, value in words.items():
            for start in _mentions(masked, word):
                spans.append((value, start, start + len(word)))
        if spec_field.from_dates and spec_field.from_dates in done:
            dates = done[spec_field.from_dates].value
            if isinstance(dates, list) and len(dates) >= 2:
                spans.append((len(dates), -1, -1))
        spans = [s for s in spans if self._allowed(spec_field, s[0])]
        spans.sort(key=lambda s: s[1])
        if spec_field.from_dates and spans and spans[0][1] == -1:
            # The dates fix the length when they agree with a number in the text (or alone).
            from_dates = spans[0][0]
            if all(value == from_dates for value, _, _ in spans) or any(
                value == from_dates for value, start, _ in spans if start >= 0
            ):
                return Reading(from_dates, [from_dates], "text")
        return self._choose(spec_field, text, [s for s in spans if s[1] >= 0] or spans)

    @staticmethod
    def _allowed(spec_field: RequestField, value: Any) -> bool:
        if spec_field.one_of and value not in spec_field.one_of:
            return False
        return not spec_field.range or spec_field.range[0] <= value <= spec_field.range[1]

    def _matches(self, spec_field: RequestField, text: str) -> list[tuple[str, int, int]]:
        """Return (option, start, end) for option phrases found; longer phrases win overlaps.

        For a ``negated`` field a phrase counts only after a negation (``not``, ``no``,
        ``without``, ``avoid`` … within a few words): "we will not be taking any flights".
        """
        hits: list[tuple[int, int, str]] = []
        for option, phrases in spec_field.options.items():
            for phrase in phrases:
                for s in _mentions(text, phrase):
                    if spec_field.negated and not _negated(text, s):
                        continue
                    hits.append((s, s + len(phrase), option))
        hits.sort(key=lambda h: (-(h[1] - h[0]), h[0]))
        used: list[tuple[int, int]] = []
        out = []
        for start, end, option in hits:
            if any(start < e and s < end for s, e in used):
                continue
            used.append((start, end))
            out.append((option, start, end))
        return sorted(out, key=lambda h: h[1])

    def _option(self, spec_field: RequestField, text: str, done: dict[str, Reading]) -> Reading:
        return self._choose(spec_field, text, self._matches(spec_field, text))

    def _options(self, spec_field: RequestField, text: str, done: dict[str, Reading]) -> Reading:
        found: list[str] = []
        for option, _, _ in self._matches(spec_field, text):
            if option not in found:
                found.append(option)
        return Reading(found or None, found, "text")


def values_of(readings: dict[str, Reading]) -> dict[str, Any]:
    """Return the plain values of a reading."""
    return {name: r.value for name, r in readings.items()}


def check_given(spec: DataSpec, given: Any, where: str) -> dict[str, Any]:
    """Check a --constraints mapping against the request fields; return it normalised."""
    if not isinstance(given, dict):
        raise UsageError(f"{where}: must be a JSON object of request fields")
    out: dict[str, Any] = {}
    for name, value in given.items():
        spec_field = spec.request.get(str(name))
        if spec_field is None:
            continue  # extra fields (a benchmark's own columns) are ignored
        out[name] = _normalise(spec_field, value, f"{where}: {name}")
    return out


def _normalise(spec_field: RequestField, value: Any, where: str) -> Any:
    if value is None:
        return None
    kind = spec_field.type
    if kind in ("integer", "money"):
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise UsageError(f"{where}: must be a number")
        return value
    if kind == "dates":
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise UsageError(f"{where}: must be a list of dates (YYYY-MM-DD)")
        return value
    if kind == "options":
        items = value if isinstance(value, list) else [value]
        return [_option_name(spec_field, item, where) for item in items] or None
    if kind == "option":
        return _option_name(spec_field, value, where)
    if not isinstance(value, str):
        raise UsageError(f"{where}: must be text")
    return value


def _option_name(spec_field: RequestField, value: Any, where: str) -> str:
    for option in spec_field.options:
        if str(value).strip().lower() == option.lower():
            return option
    raise UsageError(f"{where}: '{value}' is not one of {', '.join(spec_field.options)}")

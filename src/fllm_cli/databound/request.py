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
import functools
import math
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from fllm_cli.databound.spec import DOLLARS, Currency, DataSpec, RequestField
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
    "zero": 0, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7,
    "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "thirteen": 13,
    "fourteen": 14, "fifteen": 15, "sixteen": 16, "seventeen": 17, "eighteen": 18,
    "nineteen": 19,
}  # fmt: skip
TENS_WORDS = {
    "twenty": 20, "thirty": 30, "forty": 40, "fifty": 50, "sixty": 60, "seventy": 70,
    "eighty": 80, "ninety": 90,
}  # fmt: skip
SCALE_WORDS = {"hundred": 100, "thousand": 1000, "million": 1_000_000}
_NUMBER_WORD = "|".join(sorted([*NUMBER_WORDS, *TENS_WORDS, *SCALE_WORDS], key=len, reverse=True))
# "seven", "twenty-one", "two thousand six hundred (and) fifty": words joined by spaces, hyphens
# or "and"; a scale word never starts one ("hundreds of").
_WORDED = re.compile(
    rf"(?<![A-Za-z-])(?!(?:{'|'.join(SCALE_WORDS)})\b)(?:{_NUMBER_WORD})"
    rf"(?:(?:\s+and\s+|[\s-]+)(?:{_NUMBER_WORD}))*(?![A-Za-z-])",
    re.I,
)
_MONTH = "|".join(sorted(MONTHS, key=len, reverse=True))
WEEKDAYS = {
    "monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday",
    "mon", "tue", "tues", "wed", "thu", "thur", "thurs", "fri",
}  # fmt: skip
_ORD = r"(\d{1,2})(?:st|nd|rd|th)?"
_DATE_PATTERNS = (
    re.compile(rf"\b({_MONTH})\.?\s+{_ORD}\b(?:,?\s*(\d{{4}}))?", re.I),  # March 16th, 2022
    re.compile(rf"\b(?:the\s+)?{_ORD}\s+(?:of\s+)?({_MONTH})\b(?:,?\s*(\d{{4}}))?", re.I),
    re.compile(r"\b(\d{4})-(\d{2})-(\d{2})\b"),
)
_LINK = r"\s*(?:to|and|-|–|through|thru|till|until)\s*(?:the\s+)?"
_RANGE_BEFORE = re.compile(
    rf"\b{_ORD}{_LINK}{_ORD}\s+(?:of\s+)?({_MONTH})\b(?:,?\s*(\d{{4}}))?", re.I
)
_RANGE_AFTER = re.compile(rf"\b({_MONTH})\.?\s+{_ORD}{_LINK}{_ORD}\b(?:,?\s*(\d{{4}}))?", re.I)
# 3/16/2022, 16/03/2022, 3/16/22, 3/16 (month or day first: see _numeric_dates); 16.03.2022
_SLASHED = re.compile(r"(?<![\d/.$,])(\d{1,2})/(\d{1,2})(?:/(\d{4}|\d{2}))?(?![\d/])")
_DOTTED = re.compile(r"(?<![\d.$,])(\d{1,2})\.(\d{1,2})\.(\d{4})(?![\d.])")
# "... and back on the 19th": a day of the month whose month is the one written before it
_BARE_DAY = re.compile(
    rf"\b(?:on|until|till|through|thru|to|by|and)\s+the\s+(\d{{1,2}})(?:st|nd|rd|th)\b"
    rf"(?!\s+(?:of\s+)?(?:{_MONTH})\b)(?=\s*(?:$|[.,;:!?)]|(?:and|to|for|with|so|but|then|we|i)\b))",
    re.I,
)
_NUMBER = re.compile(r"(?<![\d.,])\b\d{1,3}\b(?![.,]\d)")  # not a part of 1,700 or 1.7k
_WORD = re.compile(r"[A-Za-z][A-Za-z'-]*")
_CAPITALISED = re.compile(r"\b(?:(?:St|Ft|Mt)\.\s)?[A-Z][a-z]+(?:\s+(?:[A-Z][a-z]+|of|de|la))*")
# Words that end the scope of a negation: "no smoking, and pets are welcome".
_CLAUSE_END = re.compile(
    r"[.;:!?,()\n]|\b(?:but|and|although|though|however|yet|while|whereas|so)\b", re.I
)
_OK = r"(?:an?\s+)?(?:option|possible|allowed|wanted|needed|necessary|required|ok|okay|for us)\b"
# A negation after the phrase: "flying is not an option", "flights are out of the question".
_NEGATED_AFTER = re.compile(
    rf"\s+(?:(?:is|are|would be|will be)\s+(?:not|never)\s+{_OK}"
    rf"|(?:isn't|aren't|wouldn't be|won't be)\s+{_OK}"
    r"|(?:is|are)\s+(?:out of the question|off the table|a no-go|not happening))",
    re.I,
)
# How counted things are joined: "me and 3 friends", "2 adults + 2 kids", "my wife, my son and I".
_JOIN = re.compile(r"\s*(?:,\s*)?(?:and|&|\+|plus)\s*|\s*,\s*", re.I)
_DETERMINER = re.compile(r"(?:\b(?:my|our|the|a|an|his|her|their)\s+)$", re.I)
MAX_TEXT = 4000
_SHORT_YEAR = re.compile(r"(?<=[\w.,])\s'(\d{2})(?![\w'])")


@dataclass
class Reading:
    """What was read for one field: the value, its candidates and who decided."""

    value: Any
    candidates: list[Any] = field(default_factory=list)
    decided_by: str = "text"  # text | cue | model | default | given | larger | smaller


Ask = Callable[[RequestField, list[str]], int]
Span = tuple[Any, int, int]


# Abbreviations written either way in names: "St. Petersburg", "St Petersburg", "Saint ...".
ABBREVIATIONS = {"st": "saint", "ste": "sainte", "ft": "fort", "mt": "mount"}
_ABBREVIATED = {
    **{k: (k, v) for k, v in ABBREVIATIONS.items()},
    **{v: (k, v) for k, v in ABBREVIATIONS.items()},
}


def _phrase_pattern(phrase: str) -> str:
    """A phrase as a regex where a space or a hyphen between words matches either, and an
    abbreviation in a name matches its other spellings ("St." = "St" = "Saint")."""
    words = []
    for word in re.split(r"[\s-]+", phrase.strip()):
        forms = _ABBREVIATED.get(word.lower().rstrip("."))
        if forms:
            words.append(rf"(?:{forms[0]}\.?|{forms[1]})")
        else:
            words.append(re.escape(word))
    return r"[\s-]+".join(words)


def _mention_spans(text: str, phrase: str, plural: bool = True) -> list[tuple[int, int]]:
    """Return the spans of ``phrase`` (or its plural) in ``text`` as whole words, any case."""
    ending = r"(?:s|es)?" if plural else ""
    pattern = r"(?<![A-Za-z0-9])" + _phrase_pattern(phrase) + ending + r"(?![A-Za-z0-9])"
    return [m.span() for m in re.finditer(pattern, text, re.I)]


def _mentions(text: str, phrase: str) -> list[int]:
    """Return the start offsets of ``phrase`` in ``text`` as whole words, ignoring case."""
    return [start for start, _ in _mention_spans(text, phrase)]


# Where a cue stops applying: the end of a sentence or a clause ("St." and "1,700" are not).
_SENTENCE_END = re.compile(r"(?<!\b[A-Z][a-z])(?<!\b[A-Z])[.!?;,()\n](?!\d)|\s[-–—]\s")


def _near_cue(text: str, start: int, end: int, cues: tuple[str, ...], window: int = 3) -> bool:
    """Whether one of ``cues`` is within ``window`` words of the span, in the same sentence."""
    head, tail = text[max(0, start - 200) : start], text[end : end + 200]
    ends = list(_SENTENCE_END.finditer(head))
    head = head[ends[-1].end() :] if ends else head
    stop = _SENTENCE_END.search(tail)
    tail = tail[: stop.start()] if stop else tail
    before = [w.lower() for w in _WORD.findall(head)][-window:]
    after = [w.lower() for w in _WORD.findall(tail)][:window]
    words = before + after
    joined_before = " ".join(before)
    joined_after = " ".join(after)
    return any(
        (c in words) or (" " in c and (c in joined_before or joined_after.startswith(c)))
        for c in cues
    )


SPEAKER = ("me", "i", "myself")  # the one who writes: once in a sum
NEGATIONS = (
    "not", "no", "non", "without", "avoid", "avoiding", "never", "don't", "won't", "nor",
    "neither", "none", "nobody", "skip", "skipping", "exclude", "excluding",
)  # fmt: skip


# Set aside by what comes just before: "rather than flying", "anything but a shared room".
_CONTRAST = re.compile(
    r"\b(?:rather\s+than|instead\s+of|other\s+than|anything\s+but|except(?:\s+for)?)"
    r"(?:\s+[A-Za-z']+){0,2}\s*$",
    re.I,
)


def _negated(text: str, start: int, end: int | None = None, window: int = 6) -> bool:
    """Whether a phrase at ``start`` is negated in its clause ("we will not be flying")."""
    before = text[max(0, start - 80) : start]
    if text[max(0, start - 4) : start].lower().endswith(("non-", "non ", "no-")):
        return True
    if _CONTRAST.search(before):
        return True
    ends = list(_CLAUSE_END.finditer(before))
    if ends:
        before = before[ends[-1].end() :]
    words = re.findall(r"[A-Za-z']+", before.lower())[-window:]
    if any(w in NEGATIONS or w.endswith("n't") for w in words):
        return True
    return end is not None and bool(_NEGATED_AFTER.match(text, end))


def _numeric_dates(text: str, years: list[int]) -> list[tuple[int, int, dt.date]]:
    """Dates written with numbers: 3/16/2022 (month first) or 16/03/2022 (day first).

    All the slashed dates of a text are read the same way: month first unless that fails to
    read more of them than day first does (16/03/2022), or puts them further apart.
    """
    slashed = list(_SLASHED.finditer(text))
    if slashed and not any(m.group(3) for m in slashed) and not years and len(slashed) < 2:
        slashed = []  # a lone "1/2" with no year anywhere is not a date
    default_year = years[0] if years else dt.date.today().year

    def read(m: re.Match[str], month_first: bool) -> dt.date | None:
        a, b = int(m.group(1)), int(m.group(2))
        month, day = (a, b) if month_first else (b, a)
        year = m.group(3)
        number = int(year) + (2000 if len(year) == 2 else 0) if year else default_year
        try:
            return dt.date(number, month, day)
        except ValueError:
            return None

    def spread(days: list[dt.date]) -> int:
        return (max(days) - min(days)).days if days else 0

    readings = []
    for month_first in (True, False):
        days = [read(m, month_first) for m in slashed]
        good = [d for d in days if d is not None]
        readings.append((-len(good), spread(good) > 60, month_first, days))
    readings.sort(key=lambda r: (r[0], r[1], not r[2]))
    out = [(m.start(), m.end(), d) for m, d in zip(slashed, readings[0][3]) if d is not None]
    for m in _DOTTED.finditer(text):
        with contextlib.suppress(ValueError):
            out.append((m.start(), m.end(), dt.date(int(m[3]), int(m[2]), int(m[1]))))
    return out


def date_mentions(text: str) -> list[tuple[int, int, dt.date]]:
    """Return (start, end, date) of every date written in ``text`` (a missing year or month is
    taken from another date)."""
    years = [int(y) for y in re.findall(r"\b(19\d{2}|20\d{2})\b", text)]
    default_year = years[0] if years else dt.date.today().year
    found: list[tuple[int, int, dt.date]] = []
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
            found.append((m.start(), m.end(), day))
    for m in _RANGE_BEFORE.finditer(text):  # "the 8th to the 10th of March"
        year = int(m.group(4)) if m.group(4) else default_year
        for group, at in ((1, m.start()), (2, m.start(2))):
            with contextlib.suppress(ValueError, KeyError):
                day = dt.date(year, MONTHS[m.group(3).lower()], int(m.group(group)))
                found.append((at, m.end(), day))
    for m in _RANGE_AFTER.finditer(text):  # "March 9th and 13th"
        year = int(m.group(4)) if m.group(4) else default_year
        with contextlib.suppress(ValueError, KeyError):
            day = dt.date(year, MONTHS[m.group(1).lower()], int(m.group(3)))
            found.append((m.start(3), m.end(), day))
    found += _numeric_dates(text, years)
    found.sort(key=lambda f: f[0])
    for m in _BARE_DAY.finditer(text):  # "... and back on the 19th"
        earlier = [d for s, _, d in found if s < m.start()]
        if not earlier or any(s <= m.start(1) < e for s, e, _ in found):
            continue
        with contextlib.suppress(ValueError):
            day = earlier[-1].replace(day=int(m.group(1)))
            if day < earlier[-1]:  # "March 28 to the 3rd": the next month
                month = earlier[-1].month % 12 + 1
                year = earlier[-1].year + (month == 1)
                day = dt.date(year, month, int(m.group(1)))
            found.append((m.start(1), m.end(), day))
    found.sort(key=lambda f: f[0])
    return found


def find_dates(text: str) -> list[dt.date]:
    """Return the dates written in ``text``, in order, each once."""
    out: list[dt.date] = []
    for _, _, day in date_mentions(text):
        if day not in out:
            out.append(day)
    return out


# Digits of an amount, by decimal mark: "1,700.50" / "1.700,50" or "1 700,50".
_DIGITS = {
    ".": r"\d{1,3}(?:,\d{3})+(?:\.\d+)?(?!\d)|\d+(?:\.\d+)?",
    ",": r"\d{1,3}(?:[.\u00a0\u202f ]\d{3})+(?:,\d+)?(?!\d)|\d+(?:,\d+)?",
}
# Symbols of common currencies: an amount written with one is never a bare amount of another.
_SYMBOLS = "$€£¥₹₩₽₺₪"
# An amount without a currency, taken only near the field's cue words ("a budget of 1700").
_NOT_MARKED = rf"(?!\s*[{_SYMBOLS}])"
_BARE = {
    ".": rf"(?<![\d.,{_SYMBOLS}])(\d{{1,3}}(?:,\d{{3}})+|\d{{3,7}})(?:\.\d+)?(?!\d|,\d)"
    rf"{_NOT_MARKED}|(?<![{_SYMBOLS}])\b(\d+(?:\.\d+)?)\s*[kK]\b{_NOT_MARKED}",
    ",": rf"(?<![\d.,{_SYMBOLS}])(\d{{1,3}}(?:\.\d{{3}})+|\d{{3,7}})(?:,\d+)?(?!\d|\.\d)"
    rf"{_NOT_MARKED}|(?<![{_SYMBOLS}])\b(\d+(?:,\d+)?)\s*[kK]\b{_NOT_MARKED}",
}


def _edged(marker: str) -> str:
    """A currency marker as a pattern; a word ("dollars", "EUR") only as a whole word."""
    text = re.escape(marker)
    if marker[:1].isalpha():
        text = r"(?<![A-Za-z])" + text
    if marker[-1:].isalpha():
        text += r"(?![A-Za-z])"
    return text


@functools.lru_cache(maxsize=32)
def _money_pattern(currency: Currency) -> re.Pattern[str]:
    marks = "|".join(_edged(m) for m in sorted(currency.markers, key=len, reverse=True))
    digits = _DIGITS[currency.decimal]
    return re.compile(
        rf"(?:{marks})\s*({digits})(\s*[kK]\b)?"  # $1,700, USD 1700, €3.6k
        rf"|(?<![\d.,])({digits})(\s*[kK])?\s*(?:{marks})",  # 1700$, 1,700 dollars, 1.700 €
        re.I,
    )


def _amount(digits: str, decimal: str, thousands: bool) -> float | int | None:
    """Read the digits of an amount (``thousands``: it was written with a k)."""
    if decimal == ",":
        digits = re.sub(r"[.\s\u00a0\u202f]", "", digits).replace(",", ".")
    else:
        digits = digits.replace(",", "")
    try:
        amount = float(digits)
    except ValueError:
        return None
    if thousands:
        amount = round(amount * 1000, 2)
    return int(amount) if amount.is_integer() else amount


def find_money(text: str, currency: Currency = DOLLARS) -> list[tuple[float, int, int]]:
    """Return (amount, start, end) of every amount of ``currency`` in ``text``."""
    out = []
    for m in _money_pattern(currency).finditer(text):
        amount = _amount(
            m.group(1) or m.group(3) or "", currency.decimal, bool(m.group(2) or m.group(4))
        )
        if amount is not None:
            out.append((amount, *m.span()))
    words = [w for w in currency.words if w[:1].isalpha()]
    if words:  # "two thousand two hundred dollars"
        after = re.compile(r"\s*(?:" + "|".join(_edged(w) for w in words) + ")", re.I)
        for value, start, end in worded_numbers(text):
            marker = after.match(text, end)
            if marker and value > 0:
                out.append((value, start, marker.end()))
    return sorted(out, key=lambda s: s[1])


def _worded_value(words: list[str]) -> list[tuple[int, int]]:
    """The numbers a run of number words says, as (value, words used): "two thousand six
    hundred fifty" is one number; "one two" is two (a small number never follows another
    small one within a number)."""
    out: list[tuple[int, int]] = []
    total = current = used = 0
    last = ""
    for word in words:
        small = NUMBER_WORDS.get(word, TENS_WORDS.get(word))
        if small is not None:
            # "twenty one" continues; "one two", "twenty thirty", "fifteen six" start anew
            continues = last == "scale" or (last == "tens" and small < 10)
            if used and not continues:
                out.append((total + current, used))
                total = current = used = 0
            current += small
            last = "tens" if word in TENS_WORDS else "small"
        else:
            scale = SCALE_WORDS[word]
            if scale == 100:
                current = max(current, 1) * 100
            else:
                total += max(current, 1) * scale
                current = 0
            last = "scale"
        used += 1
    if used:
        out.append((total + current, used))
    return out


def worded_numbers(text: str) -> list[tuple[int, int, int]]:
    """Return (value, start, end) of every number written in words."""
    out = []
    for m in _WORDED.finditer(text):
        words = [(w.group(0).lower(), w.start(), w.end()) for w in _WORD_TOKEN.finditer(m.group(0))]
        words = [w for w in words if w[0] != "and"]
        at = 0
        for value, used in _worded_value([w for w, _, _ in words]):
            first, last = words[at], words[at + used - 1]
            out.append((value, m.start() + first[1], m.start() + last[2]))
            at += used
    return out


_WORD_TOKEN = re.compile(r"[A-Za-z]+")


def _blank(text: str, spans: list[tuple[int, int]]) -> str:
    """Replace the spans of ``text`` with spaces (offsets are kept)."""
    chars = list(text)
    for start, end in spans:
        chars[start:end] = " " * (end - start)
    return "".join(chars)


class RequestReader:
    """Reads every request field of a spec from a task text and the task's tables."""

    def __init__(self, spec: DataSpec, tables: dict[str, list[Record]], ask: Ask) -> None:
        self.spec = spec
        self.tables = tables
        self.ask = ask

    def read(self, task: str, given: dict[str, Any] | None = None) -> dict[str, Reading]:
        text = task[:MAX_TEXT].replace("\u2019", "'").replace("\u2018", "'")
        # "Mar 7th-9th '22": a two-digit year after a space is read as 2022 (every span below
        # is an offset into this text)
        text = _SHORT_YEAR.sub(lambda m: ", 20" + m.group(1), text)
        out: dict[str, Reading] = {}
        first = {f.from_dates for f in self.spec.request.values() if f.from_dates}
        order = sorted(self.spec.request.items(), key=lambda item: item[0] not in first)
        self.claimed: list[tuple[int, int]] = []
        self.dates = date_mentions(text)
        for name, spec_field in order:
            if given is not None and name in given:
                out[name] = Reading(given[name], decided_by="given")
                continue
            out[name] = _READERS[spec_field.type](self, spec_field, text, out)
        for name, spec_field in self.spec.request.items():
            self._extend_dates(name, spec_field, out)
        return out

    @staticmethod
    def _extend_dates(name: str, spec_field: RequestField, out: dict[str, Reading]) -> None:
        """One date and a length ("leaving March 16 for 3 days"): the trip's days from it."""
        source = spec_field.from_dates
        if not source or source not in out or out[source].decided_by == "given":
            return
        dates, length = out[source].value, out[name].value
        if isinstance(dates, list) and len(dates) == 1 and isinstance(length, int) and length > 1:
            first = dt.date.fromisoformat(dates[0])
            span = [(first + dt.timedelta(n)).isoformat() for n in range(length)]
            out[source] = Reading(span, out[source].candidates, "text")

    def _column(self, ref: str) -> set[str]:
        table, _, column = ref.partition(".")
        return {str(r[column]) for r in self.tables.get(table, []) if r[column]}

    def _choose(self, spec_field: RequestField, text: str, spans: list[Span]) -> Reading:
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

    def _pick(self, spec_field: RequestField, text: str, spans: list[Span]) -> Reading:
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
        numbers = all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in values)
        if spec_field.prefer and numbers:  # two head counts: plan for the larger, and say so
            pick = max(values) if spec_field.prefer == "larger" else min(values)
            return Reading(pick, values, spec_field.prefer)
        index = self.ask(spec_field, [str(v) for v in values])
        return Reading(values[index], values, "model")

    def _place(self, spec_field: RequestField, text: str, done: dict[str, Reading]) -> Reading:
        known: set[str] = set()
        for ref in spec_field.values:
            known |= self._column(ref)
        for ref in spec_field.not_in:
            known -= self._column(ref)
        taken = {str(r.value) for r in done.values() if isinstance(r.value, str)}
        spans: list[Span] = [
            (place, start, end)
            for place in sorted(known, key=len, reverse=True)
            for start, end in _mention_spans(text, place, plural=False)
            if place not in taken
        ]
        if not spans and spec_field.free:
            blocked = set(MONTHS) | WEEKDAYS | set(NUMBER_WORDS) | self._vocabulary()
            for m in _CAPITALISED.finditer(text):
                phrase = m.group(0).rstrip(".")
                first = phrase.split()[0].lower()
                if phrase.lower() in blocked:
                    continue
                before = text[: m.start()]
                at_sentence_start = (
                    not before.strip()
                    or before.rstrip()[-1:] in ".!?"
                    or bool(re.search(r"\n[\s*•-]*$", before))
                )
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

    def _masked(self, text: str) -> str:
        """The text with its dates, amounts of money and places read so far blanked out, so
        that "March 1-7", "$3,000" or "2 Texas cities" are not read as counts."""
        spans = [(s, e) for s, e, _ in self.dates]
        for currency in self.spec.currencies():
            spans += [(s, e) for _, s, e in find_money(text, currency)]
        return _blank(text, spans + self.claimed)

    def _money(self, spec_field: RequestField, text: str, done: dict[str, Reading]) -> Reading:
        currency = spec_field.currency
        spans: list[Span] = list(find_money(text, currency))
        if not spans and spec_field.cue:
            masked = _blank(text, [(s, e) for s, e, _ in self.dates])
            for m in re.finditer(_BARE[currency.decimal], masked):
                if not _near_cue(masked, m.start(), m.end(), spec_field.cue):
                    continue
                amount = _amount(m.group(2) or m.group(0), currency.decimal, bool(m.group(2)))
                if amount is not None:
                    spans.append((amount, *m.span()))
        return self._choose(spec_field, text, spans)

    def _dates(self, spec_field: RequestField, text: str, done: dict[str, Reading]) -> Reading:
        days = find_dates(text)
        if len(days) >= 2 and 0 < (days[-1] - days[0]).days < 60:
            span = [days[0] + dt.timedelta(n) for n in range((days[-1] - days[0]).days + 1)]
        else:
            span = days
        return Reading([d.isoformat() for d in span], [d.isoformat() for d in days], "text")

    def _integer(self, spec_field: RequestField, text: str, done: dict[str, Reading]) -> Reading:
        masked = self._masked(text)
        spans: list[Span] = []
        for m in _NUMBER.finditer(masked):
            spans.append((int(m.group(0)), *m.span()))
        spans += worded_numbers(masked)
        for word, value in spec_field.words.items():
            for start in _mentions(masked, word):
                spans.append((value, start, start + len(word)))
        spans, counted = self._plus(spec_field, masked, spans)
        others = self._other_cues(spec_field)
        spans = [
            s
            for s in spans
            if self._allowed(spec_field, s[0])
            and (s in counted or not _near_cue(masked, s[1], s[2], spec_field.avoid, 1))
            and (
                s in counted
                or not _near_cue(masked, s[1], s[2], others, 2)
                or _near_cue(masked, s[1], s[2], spec_field.cue, 2)
            )
        ]
        spans = self._sums(spec_field, masked, spans)
        spans.sort(key=lambda s: s[1])
        dates = done[spec_field.from_dates].value if spec_field.from_dates in done else None
        if isinstance(dates, list) and len(dates) >= 2 and self._allowed(spec_field, len(dates)):
            # The dates fix the length; only a number said to be one ("5 days", "a week")
            # can contradict them, and then the model is asked.
            length = len(dates)
            said = [
                s
                for s in spans
                if masked[s[1] : s[2]].lower() in spec_field.words
                or s in counted
                or _near_cue(masked, s[1], s[2], spec_field.cue, 1)
            ]
            if not said or any(value == length for value, _, _ in said):
                return Reading(length, [length], "text")
            return self._choose(spec_field, masked, [(length, -1, -1), *said])
        if any(s in counted for s in spans):  # "staying 6 nights" says the length outright
            spans = [
                s for s in spans if s in counted or _near_cue(masked, s[1], s[2], spec_field.cue, 1)
            ]
        return self._choose(spec_field, masked, spans)

    @staticmethod
    def _plus(
        spec_field: RequestField, text: str, spans: list[Span]
    ) -> tuple[list[Span], list[Span]]:
        """Numbers followed by a ``plus`` word count with its value added ("staying 2 nights"
        is 3 days); return every span and those that were so counted."""
        if not spec_field.plus:
            return spans, []
        out, counted = [], []
        for value, start, end in spans:
            m = re.match(r"\s+([A-Za-z]+)", text[end:])
            word = m.group(1).lower() if m else ""
            extra = spec_field.plus.get(word, spec_field.plus.get(word.removesuffix("s")))
            if extra is None:
                out.append((value, start, end))
                continue
            span = (value + extra, start, end + (m.end() if m else 0))
            out.append(span)
            counted.append(span)
        return out, counted

    def _other_cues(self, spec_field: RequestField) -> tuple[str, ...]:
        """The cue words of the spec's other number fields: "a group of 5" is a head count,
        never a number of days, though 5 would be a fine length."""
        return tuple(
            cue
            for other in self.spec.request.values()
            if other.name != spec_field.name and other.type == spec_field.type
            for cue in other.cue
            if cue not in spec_field.cue
        )

    def _sums(self, spec_field: RequestField, text: str, spans: list[Span]) -> list[Span]:
        """Add up counts joined by "and", "&", "+", "plus" or commas: "me and 3 friends" (4),
        "2 adults, 2 kids" (4), "my wife and I" (2), "a couple and 2 kids" (4). ``members``
        count one each, ``parts`` the number before them, group words ("couple") their value;
        a count of the whole ("4 people") is never added to, nor the speaker counted twice."""
        if not (spec_field.members or spec_field.parts):
            return spans
        units: list[Span] = []
        products: list[tuple[Span, Span]] = []
        nouns = set(spec_field.parts) | {m.lower() for m in spec_field.members}
        for value, start, end in spans:
            m = re.match(r"\s+([A-Za-z][A-Za-z-]*)", text[end:])
            noun = m.group(1).lower() if m else ""
            group = spec_field.words.get(noun, spec_field.words.get(noun.removesuffix("s"), 1))
            if m and group > 1:  # "two couples": 2 x 2
                units.append((value * group, start, end + m.end()))
                products.append(((value, start, end), units[-1]))
            elif m and noun in nouns:  # "3 friends", "1 friend"
                units.append((value, start, end + m.end()))
            elif spec_field.words.get(text[start:end].lower(), 1) > 1:  # "a couple", not "solo"
                units.append((value, start, end))
        for member in spec_field.members:
            flags = 0 if member == "I" else re.I
            pattern = rf"(?<![A-Za-z0-9']){re.escape(member)}(?![A-Za-z0-9']|-)"
            for m in re.finditer(pattern, text, flags):
                if not any(s <= m.start() and m.end() <= e for _, s, e in units):
                    units.append((1, m.start(), m.end()))
        units = sorted({self._with_determiner(text, u) for u in units}, key=lambda u: u[1:])
        chains: list[list[Span]] = []
        joins: list[list[str]] = []
        for unit in units:
            if chains and unit[1] >= chains[-1][-1][2]:
                gap = text[chains[-1][-1][2] : unit[1]]
                if _JOIN.fullmatch(gap):
                    chains[-1].append(unit)
                    joins[-1].append(gap.strip())
                    continue
            chains.append([unit])
            joins.append([])
        replaced = dict(products)
        out = [replaced.get(s, s) for s in spans]
        for _, product in products:  # "couples" inside "two couples" is not a count of its own
            out = [s for s in out if s == product or not (product[1] <= s[1] < product[2])]
        for chain, join in zip(chains, joins):
            speaker = [n for n, u in enumerate(chain) if text[u[1] : u[2]].lower() in SPEAKER]
            if len(speaker) > 1:  # "it's just me, and I ...": the speaker once
                chain, join = chain[: speaker[1]], join[: speaker[1] - 1]
            if not join:
                continue
            start, end = chain[0][1], chain[-1][2]
            out = [s for s in out if not (start <= s[1] and s[2] <= end)]
            total = sum(value for value, _, _ in chain)
            if self._allowed(spec_field, total):
                out.append((total, start, end))
        return out

    @staticmethod
    def _with_determiner(text: str, unit: Span) -> Span:
        m = _DETERMINER.search(text[: unit[1]])
        return (unit[0], m.start(), unit[2]) if m else unit

    @staticmethod
    def _allowed(spec_field: RequestField, value: Any) -> bool:
        if spec_field.one_of and value not in spec_field.one_of:
            return False
        return not spec_field.range or spec_field.range[0] <= value <= spec_field.range[1]

    def _matches(self, spec_field: RequestField, text: str) -> list[tuple[str, int, int]]:
        """Return (option, start, end) for option phrases found; longer phrases win overlaps.

        For a ``negated`` field a phrase counts only when negated (``not``, ``no``,
        ``without``, ``avoid`` … before it in its clause, or "is not an option" after it):
        "we will not be taking any flights"; its ``stated`` phrases count when not negated
        ("we'd rather drive ourselves"). For other fields a negated phrase does not count:
        "no smoking" does not ask for smoking.
        """
        hits: list[tuple[int, int, str]] = []
        for option, phrases in spec_field.options.items():
            for phrase in phrases:
                for s, e in _mention_spans(text, phrase):
                    if spec_field.negated != _negated(text, s, e):
                        if option in spec_field.negation:  # "don't want to share a room"
                            hits.append((s, e, spec_field.negation[option]))
                        continue
                    hits.append((s, e, option))
        for option, phrases in spec_field.stated.items():  # "we'd rather drive ourselves"
            for phrase in phrases:
                hits += [
                    (s, e, option)
                    for s, e in _mention_spans(text, phrase)
                    if not _negated(text, s, e)
                ]
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
        spans = self._matches(spec_field, text)
        narrowest = self._narrowest(spec_field, {option for option, _, _ in spans})
        if narrowest is not None:  # "a private room, not a shared one": private room
            spans = [s for s in spans if s[0] == narrowest]
        return self._choose(spec_field, text, spans)

    def _narrowest(self, spec_field: RequestField, named: set[str]) -> str | None:
        """The option named that every other one named allows (by the domain's ``match`` of
        this field), so asking for it asks for them all; None if there is none."""
        if len(named) < 2:
            return None
        for rule in self.spec.constraints:
            if rule.rule != "match" or rule.request != spec_field.name:
                continue
            allowed = {option: set(rule.values.get(option, ())) for option in named}
            if not all(allowed.values()):
                return None
            for option in named:
                if all(allowed[option] <= allowed[other] for other in named):
                    return option
        return None

    def _options(self, spec_field: RequestField, text: str, done: dict[str, Reading]) -> Reading:
        found: list[str] = []
        for option, _, _ in self._matches(spec_field, text):
            if option not in found:
                found.append(option)
        return Reading(found or None, found, "text")


# A request field's type -> how the reader finds its value in the text (spec.REQUEST_TYPES).
_READERS: dict[str, Callable[[RequestReader, RequestField, str, dict[str, Reading]], Reading]] = {
    "place": RequestReader._place,
    "integer": RequestReader._integer,
    "money": RequestReader._money,
    "dates": RequestReader._dates,
    "option": RequestReader._option,
    "options": RequestReader._options,
}


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
    type_ = spec_field.type
    if type_ in ("integer", "money"):
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise UsageError(f"{where}: must be a number")
        if not math.isfinite(value) or abs(value) > 1e15:
            raise UsageError(f"{where}: {value} is not a usable amount")
        if type_ == "money" and value < 0:
            raise UsageError(f"{where}: must not be negative")
        return value
    if type_ == "dates":
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise UsageError(f"{where}: must be a list of dates (YYYY-MM-DD)")
        return value
    if type_ == "options":
        items = value if isinstance(value, list) else [value]
        return [_option_name(spec_field, item, where) for item in items] or None
    if type_ == "option":
        return _option_name(spec_field, value, where)
    if not isinstance(value, str):
        raise UsageError(f"{where}: must be text")
    return value


def _option_name(spec_field: RequestField, value: Any, where: str) -> str:
    for option in spec_field.options:
        if str(value).strip().lower() == option.lower():
            return option
    raise UsageError(f"{where}: '{value}' is not one of {', '.join(spec_field.options)}")

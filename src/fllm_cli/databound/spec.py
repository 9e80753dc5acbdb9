"""The sections of a data-bound domain (``kind: data``), read with source locations.

A data-bound domain plans a round trip of ``days`` days whose options are the records of tables
supplied with each task (``--data``). It declares

* ``request`` — the values read from the task text (places, numbers, money, dates, options);
* ``tables`` — which lists of the data file hold records, their typed fields, how a record is
  shown to the model (``show``), written in the plan (``write``) and ranked (``rank``);
* ``trip`` — the number of days, the home the trip starts from and returns to, and the stops;
* ``slots`` — what each day holds: a record per travel ``leg``, per ``stay`` or per ``day``;
* ``constraints`` — rules over the whole plan (a total against a bound, all-different,
  minimum nights, one kind of transport, coverage of requested values, forbidden and required
  field values).

docs/spec.md ("Data-bound domains") describes each key.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from fllm_cli.databound.expr import Expr, ExprError, parse_expr
from fllm_cli.diagnostics import Diagnostic, Location
from fllm_cli.domain.model import Domain
from fllm_cli.domain.yamlloc import Node, Reader

REQUEST_TYPES = ("place", "integer", "money", "dates", "option", "options")
FIELD_TYPES = ("text", "number", "number?", "texts", "flag")
# The constraint rules, each the key of one item of ``constraints`` (docs/spec.md).
RULES = ("total", "different", "min_nights", "same_kind", "cover", "forbid", "match", "in_town")
SLOT_PER = ("day", "leg", "stay")
SLOT_NEED = ("always", "stay", "never")
TRIP_ENDS = ("home", "last_stop")
MAX_STOPS = 10
MAX_DAYS = 31
_PLACEHOLDER = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)\}")


@dataclass(frozen=True)
class Currency:
    """How a money field is written: the symbol shown in messages, the other markers a text
    may use (before or after the amount), and the decimal mark (``.`` or ``,``)."""

    symbol: str = "$"
    words: tuple[str, ...] = ("US$", "USD", "dollars", "dollar", "bucks")
    decimal: str = "."

    @property
    def markers(self) -> tuple[str, ...]:
        return (self.symbol, *self.words)

    def show(self, amount: float) -> str:
        """Write ``amount`` with the symbol: ``$1,700``, ``€1.700,50``, ``CHF 1,700``."""
        text = f"{amount:,.0f}" if float(amount).is_integer() else f"{amount:,.2f}"
        if self.decimal == ",":
            text = text.translate({ord(","): ".", ord("."): ","})
        return f"{self.symbol} {text}" if self.symbol[-1:].isalpha() else f"{self.symbol}{text}"

    def as_dict(self) -> dict[str, str]:
        """What a plan document keeps, so that anyone can show its amounts."""
        return {"symbol": self.symbol, "decimal": self.decimal}

    @staticmethod
    def from_dict(value: Any) -> Currency:
        """The currency a plan document names (dollars when it names none or a bad one)."""
        if not isinstance(value, dict):
            return DOLLARS
        symbol, decimal = value.get("symbol"), value.get("decimal", ".")
        if not isinstance(symbol, str) or not symbol.strip() or decimal not in (".", ","):
            return DOLLARS
        return Currency(symbol.strip()[:8], (), decimal)


DOLLARS = Currency()


@dataclass(frozen=True)
class RequestField:
    name: str
    type: str
    question: str = ""
    values: tuple[str, ...] = ()  # "table.field" columns whose values are candidates
    not_in: tuple[str, ...] = ()
    free: bool = False
    cue: tuple[str, ...] = ()
    avoid: tuple[str, ...] = ()
    negated: bool = False
    one_of: tuple[int, ...] = ()
    range: tuple[int, int] | None = None
    default: Any = None
    words: dict[str, int] = field(default_factory=dict)
    members: tuple[str, ...] = ()  # one each, counted only when joined: "my wife and I"
    parts: tuple[str, ...] = ()  # counted by the number before them: "2 adults and 2 kids"
    from_dates: str | None = None
    options: dict[str, tuple[str, ...]] = field(default_factory=dict)
    stated: dict[str, tuple[str, ...]] = field(default_factory=dict)  # count un-negated
    # A number before one of these words counts as that number plus the word's value
    # ("staying 2 nights" is a 3-day trip with ``plus: {night: 1}``).
    plus: dict[str, int] = field(default_factory=dict)
    # A negated mention of an option asks for another: ``negation: {shared room: not shared
    # room}`` reads "we don't want to share a room" as 'not shared room'.
    negation: dict[str, str] = field(default_factory=dict)
    # When the text gives two values ("5 of us ... the 2 adults"), take the larger or the
    # smaller instead of asking the model; the reading says it did (a head count: larger).
    prefer: str | None = None
    currency: Currency = DOLLARS  # money fields only


@dataclass(frozen=True)
class Table:
    name: str
    source: str
    fields: dict[str, str]
    constants: dict[str, str] = field(default_factory=dict)
    show: str = ""
    write: str = ""
    rank: tuple[str, bool] | None = None  # (field, descending)
    keep: str | None = None


@dataclass(frozen=True)
class Trip:
    days: str
    home: str
    stops_table: str
    stops_count: dict[int, int] | int
    stops_field: str = "name"  # the column of the stops table that names a place
    end: str = "home"  # where the last day ends: "home" (a round trip) or "last_stop"


@dataclass(frozen=True)
class Slot:
    name: str
    per: str
    tables: tuple[str, ...]
    city: str = "city"
    origin: str = "origin"
    dest: str = "dest"
    need: str = "always"
    suffix: str = ""


@dataclass(frozen=True)
class Constraint:
    rule: str  # which rule of RULES (the constraint's key in the YAML)
    loc: Location | None
    slots: tuple[str, ...] = ()
    column: str = ""
    request: str = ""
    at_most: str = ""
    cost: dict[str, Expr] = field(default_factory=dict)
    groups: tuple[tuple[str, ...], ...] = ()
    value: str = ""
    values: dict[str, tuple[str, ...]] = field(default_factory=dict)
    # in_town: the hours each day slot may happen in (minutes after midnight, from and to),
    # and the leg's time fields
    times: dict[str, tuple[int, int]] = field(default_factory=dict)
    departs: str = ""
    arrives: str = ""

    def describe(self) -> str:
        """Return the constraint in a few words (for explanations)."""
        if self.rule == "total":
            return f"total cost ≤ {self.at_most}"
        if self.rule == "different":
            return f"no record twice in {', '.join(self.slots)}"
        if self.rule == "cover":
            return f"{', '.join(self.slots)} cover the requested {self.request}"
        if self.rule in ("forbid", "match"):
            return f"{self.slots[0]} {self.column} fits the requested {self.request}"
        if self.rule == "min_nights":
            return f"each {self.slots[0]} kept for its {self.column}"
        if self.rule == "in_town":
            return f"{', '.join(self.times)} only while in town (by the {self.slots[0]} times)"
        return f"one kind of {self.slots[0]} ({self.column})"


@dataclass(frozen=True)
class DataSpec:
    request: dict[str, RequestField]
    tables: dict[str, Table]
    trip: Trip
    slots: dict[str, Slot]
    constraints: tuple[Constraint, ...]
    path: str = ""

    def place_columns(self) -> set[str]:
        """The columns that name a place: the stops' field and every slot's place fields."""
        out = {self.trip.stops_field}
        for slot in self.slots.values():
            out.update((slot.origin, slot.dest) if slot.per == "leg" else (slot.city,))
        return out

    def currency(self, name: str) -> Currency:
        """The currency of request field ``name`` (dollars unless the field says otherwise)."""
        spec_field = self.request.get(name)
        return spec_field.currency if spec_field is not None else DOLLARS

    def total(self) -> Constraint | None:
        """The ``total`` rule (the budget), if the domain has one."""
        return next((c for c in self.constraints if c.rule == "total"), None)

    def money(self) -> tuple[str | None, Currency]:
        """The request field that bounds the total (if any) and the currency amounts use."""
        total = self.total()
        if total is None:
            return None, self.currencies()[0]
        return total.at_most, self.currency(total.at_most)

    def currencies(self) -> tuple[Currency, ...]:
        """The currencies of every money field (dollars when there is none)."""
        found = {f.currency for f in self.request.values() if f.type == "money"}
        return tuple(sorted(found, key=lambda c: c.symbol)) or (DOLLARS,)


def templates_fields(template: str) -> list[str]:
    """Return the field names a ``{field}`` template reads."""
    return _PLACEHOLDER.findall(template)


def fill(template: str, values: dict[str, Any]) -> str:
    """Fill ``{field}`` placeholders (``{Field}`` capitalises the value); no other syntax."""

    def one(match: re.Match[str]) -> str:
        key = match.group(1)
        value = values.get(key, values.get(key.lower(), ""))
        if isinstance(value, (list, tuple)):
            text = ", ".join(str(v) for v in value)
        elif isinstance(value, float) and value.is_integer():
            text = str(int(value))
        else:
            text = "" if value is None else str(value)
        return text[:1].upper() + text[1:] if key[:1].isupper() else text

    return _PLACEHOLDER.sub(one, template)


class _SpecReader:
    def __init__(self, domain: Domain) -> None:
        self.r = Reader(domain.path)
        self.sections: dict[str, Node] = domain.sections
        self.path = domain.path

    def strings(self, node: Node | None, what: str) -> tuple[str, ...]:
        out = []
        for item in self.r.sequence(node, what):
            text = self.r.string(item, what, required=True)
            if text is not None:
                out.append(text)
        return tuple(out)

    def expr(self, node: Node | None, what: str) -> Expr | None:
        text = self.r.string(node, what, required=True)
        if text is None or node is None:
            return None
        try:
            return parse_expr(text)
        except ExprError as exc:
            self.r.error(f"{what}: {exc}", node.loc)
            return None

    def read(self) -> DataSpec | None:
        for key in ("request", "tables", "trip", "slots"):
            if key not in self.sections:
                self.r.error(f"a data domain needs a '{key}' section", Location(self.path))
        request = self.request(self.sections.get("request"))
        tables = self.tables(self.sections.get("tables"))
        trip = self.trip(self.sections.get("trip"), request, tables)
        slots = self.slots(self.sections.get("slots"), tables)
        constraints = self.constraints(self.sections.get("constraints"), request, tables, slots)
        if trip is None or any(d.severity == "error" for d in self.r.diagnostics):
            return None
        return DataSpec(request, tables, trip, slots, constraints, self.path)

    def request(self, node: Node | None) -> dict[str, RequestField]:
        out: dict[str, RequestField] = {}
        keys = {
            "type", "question", "values", "not_in", "free", "cue", "avoid", "negated",
            "one_of", "range",
            "default", "words", "members", "parts", "from_dates", "options", "stated",
            "currency", "plus", "negation", "prefer",
        }  # fmt: skip
        for name, child, _loc in self.r.items(self.r.mapping(node, "request")):
            body = self.r.mapping(child, f"request field '{name}'", keys)
            if body is None:
                continue
            get = Reader.get
            type_ = self.r.string(get(body, "type"), f"type of '{name}'", required=True)
            if type_ not in REQUEST_TYPES:
                where = get(body, "type")
                self.r.error(
                    f"request field '{name}': type must be one of {', '.join(REQUEST_TYPES)}",
                    where.loc if where else child.loc,
                )
                continue
            options: dict[str, tuple[str, ...]] = {}
            for option, phrases, _ in self.r.items(self.r.mapping(get(body, "options"), "options")):
                options[option] = self.strings(phrases, f"phrases of option '{option}'") or (
                    option,
                )
            if type_ in ("option", "options") and not options:
                self.r.error(f"request field '{name}' of type {type_} needs 'options'", child.loc)
            stated: dict[str, tuple[str, ...]] = {}
            for option, phrases, loc in self.r.items(self.r.mapping(get(body, "stated"), "stated")):
                if option not in options:
                    self.r.error(f"request field '{name}': stated '{option}' is not an option", loc)
                stated[option] = self.strings(phrases, f"stated phrases of option '{option}'")
            words, plus = self.numbers(body, "words"), self.numbers(body, "plus")
            negation: dict[str, str] = {}
            for option, other, loc in self.r.items(
                self.r.mapping(get(body, "negation"), "negation")
            ):
                target = self.r.string(other, f"negation of '{option}'")
                if option not in options or target not in options:
                    self.r.error(
                        f"request field '{name}': negation '{option}: {target}' must map an"
                        " option to an option",
                        loc,
                    )
                elif target is not None:
                    negation[option] = target
            span = [
                self.r.integer(n, "range") for n in self.r.sequence(get(body, "range"), "range")
            ]
            ints = [
                self.r.integer(n, "one_of") for n in self.r.sequence(get(body, "one_of"), "one_of")
            ]
            default = get(body, "default")
            prefer = self.r.string(get(body, "prefer"), "prefer")
            if prefer not in (None, "larger", "smaller"):
                self.r.error(
                    f"request field '{name}': prefer must be 'larger' or 'smaller'",
                    get(body, "prefer").loc,  # type: ignore[union-attr]
                )
                prefer = None
            out[name] = RequestField(
                name=name,
                type=type_,
                question=self.r.string(get(body, "question"), "question") or f"What is {name}?",
                values=self.strings(get(body, "values"), "values"),
                not_in=self.strings(get(body, "not_in"), "not_in"),
                free=bool(self.r.boolean(get(body, "free"), "free")),
                cue=tuple(c.lower() for c in self.strings(get(body, "cue"), "cue")),
                avoid=tuple(c.lower() for c in self.strings(get(body, "avoid"), "avoid")),
                negated=bool(self.r.boolean(get(body, "negated"), "negated")),
                one_of=tuple(i for i in ints if i is not None),
                range=(span[0], span[1]) if len(span) == 2 and None not in span else None,  # type: ignore[arg-type]
                default=default.value if default is not None else None,
                words=words,
                members=self.strings(get(body, "members"), "members"),
                parts=tuple(c.lower() for c in self.strings(get(body, "parts"), "parts")),
                from_dates=self.r.string(get(body, "from_dates"), "from_dates"),
                options=options,
                stated=stated,
                currency=self.currency(get(body, "currency"), name, type_),
                plus=plus,
                negation=negation,
                prefer=prefer,
            )
        return out

    def numbers(self, body: Any, key: str) -> dict[str, int]:
        """A ``word: number`` mapping of a request field (``words``, ``plus``)."""
        out: dict[str, int] = {}
        for word, value, _ in self.r.items(self.r.mapping(Reader.get(body, key), key)):
            number = self.r.integer(value, f"{key}.{word}")
            if number is not None:
                out[word.lower()] = number
        return out

    def currency(self, node: Node | None, name: str, type_: str) -> Currency:
        """``currency: "€"`` or ``currency: {symbol, words, decimal}`` of a money field."""
        if node is None:
            return DOLLARS
        what = f"currency of '{name}'"
        if type_ != "money":
            self.r.error(f"{what}: only a field of type money has a currency", node.loc)
            return DOLLARS
        if isinstance(node.value, str):
            symbol = self.r.string(node, what, required=True)
            return Currency(symbol.strip(), ()) if symbol and symbol.strip() else DOLLARS
        body = self.r.mapping(node, what, {"symbol", "words", "decimal"})
        if body is None:
            return DOLLARS
        symbol = (self.r.string(Reader.get(body, "symbol"), f"{what}: symbol", True) or "").strip()
        words = tuple(w.strip() for w in self.strings(Reader.get(body, "words"), f"{what}: words"))
        decimal_node = Reader.get(body, "decimal")
        decimal = self.r.string(decimal_node, f"{what}: decimal") or "."
        if decimal not in (".", ","):
            self.r.error(
                f"{what}: decimal must be '.' or ','",
                decimal_node.loc if decimal_node else node.loc,
            )
            decimal = "."
        if (
            not symbol
            or any(not w for w in words)
            or any(ch.isdigit() for m in (symbol, *words) for ch in m)
        ):
            self.r.error(
                f"{what}: the symbol and words must be non-empty and hold no digits", node.loc
            )
            return DOLLARS
        return Currency(symbol, words, decimal)

    def tables(self, node: Node | None) -> dict[str, Table]:
        out: dict[str, Table] = {}
        keys = {"from", "fields", "set", "show", "write", "rank", "keep"}
        for name, child, _loc in self.r.items(self.r.mapping(node, "tables")):
            body = self.r.mapping(child, f"table '{name}'", keys)
            if body is None:
                continue
            get = Reader.get
            fields: dict[str, str] = {}
            for fname, ftype, floc in self.r.items(self.r.mapping(get(body, "fields"), "fields")):
                type_ = self.r.string(ftype, f"type of field '{fname}'", required=True)
                if type_ not in FIELD_TYPES:
                    self.r.error(
                        f"table '{name}': field '{fname}' type must be one of "
                        f"{', '.join(FIELD_TYPES)}",
                        floc,
                    )
                    continue
                fields[fname] = type_
            if not fields:
                self.r.error(f"table '{name}' needs 'fields'", child.loc)
            constants = {
                k: self.r.string(v, f"set.{k}") or ""
                for k, v, _ in self.r.items(self.r.mapping(get(body, "set"), "set"))
            }
            known = set(fields) | set(constants)
            show = self.r.string(get(body, "show"), "show") or ""
            write = self.r.string(get(body, "write"), "write") or (
                "{name}" if "name" in known else ""
            )
            for what, template in (("show", show), ("write", write)):
                for used in templates_fields(template):
                    if used not in known and used.lower() not in known:
                        where = get(body, what)
                        self.r.error(
                            f"table '{name}': {what} uses unknown field '{used}'",
                            where.loc if where else child.loc,
                        )
            if not write:
                self.r.error(
                    f"table '{name}' needs 'write' (how the plan names a record)", child.loc
                )
            rank = None
            rank_text = self.r.string(get(body, "rank"), "rank")
            if rank_text:
                parts = rank_text.split()
                if (
                    parts[0] not in fields
                    or len(parts) > 2
                    or parts[1:] not in ([], ["asc"], ["desc"])
                ):
                    self.r.error(
                        f"table '{name}': rank must be 'FIELD [asc|desc]' of a number field",
                        get(body, "rank").loc,  # type: ignore[union-attr]
                    )
                else:
                    rank = (parts[0], parts[1:] == ["desc"])
            keep = self.r.string(get(body, "keep"), "keep")
            if keep is not None and fields.get(keep) != "flag":
                self.r.error(f"table '{name}': keep must name a flag field", get(body, "keep").loc)  # type: ignore[union-attr]
            source = self.r.string(get(body, "from"), "from") or name
            out[name] = Table(name, source, fields, constants, show, write, rank, keep)
        return out

    def trip(
        self, node: Node | None, request: dict[str, RequestField], tables: dict[str, Table]
    ) -> Trip | None:
        body = self.r.mapping(node, "trip", {"days", "home", "stops", "end"})
        if body is None:
            return None
        get = Reader.get
        days = self.r.string(self.r.require(body, "days", "trip"), "trip.days") or ""
        home = self.r.string(self.r.require(body, "home", "trip"), "trip.home") or ""
        for key, value in (("days", days), ("home", home)):
            if value and value not in request:
                self.r.error(f"trip.{key}: '{value}' is not a request field", get(body, key).loc)  # type: ignore[union-attr]
        stops = self.r.mapping(
            self.r.require(body, "stops", "trip"), "trip.stops", {"table", "count", "field"}
        )
        table = self.r.string(get(stops, "table"), "trip.stops.table", required=True) or ""
        column = self.r.string(get(stops, "field"), "trip.stops.field") or "name"
        if table and table not in tables:
            self.r.error(f"trip.stops.table: no table '{table}'", get(stops, "table").loc)  # type: ignore[union-attr]
        elif table and tables[table].fields.get(column) != "text":
            where = get(stops, "field") or get(stops, "table")
            self.r.error(
                f"trip.stops.field: table '{table}' has no text field '{column}' naming a place",
                where.loc if where else stops.loc if stops else None,
            )
        count_node = get(stops, "count")
        count: dict[int, int] | int = 1
        if count_node is not None and isinstance(count_node.value, dict):
            count = {}
            for key, entry, loc in self.r.items(count_node):
                number = self.r.integer(entry, "count")
                if not key.isdigit() or number is None or not 1 <= number <= MAX_STOPS:
                    self.r.error(
                        f"trip.stops.count: '{key}: ...' must map days to 1..{MAX_STOPS}", loc
                    )
                    continue
                count[int(key)] = number
        elif count_node is not None:
            number = self.r.integer(count_node, "trip.stops.count")
            if number is None or not 1 <= number <= MAX_STOPS:
                self.r.error(f"trip.stops.count must be 1..{MAX_STOPS}", count_node.loc)
            else:
                count = number
        end = self.r.string(get(body, "end"), "trip.end") or "home"
        if end not in TRIP_ENDS:
            where = get(body, "end")
            self.r.error(
                f"trip.end must be one of {', '.join(TRIP_ENDS)}", where.loc if where else None
            )
        if not days or not home or not table:
            return None
        return Trip(days, home, table, count, column, end)

    def slots(self, node: Node | None, tables: dict[str, Table]) -> dict[str, Slot]:
        out: dict[str, Slot] = {}
        keys = {"per", "table", "tables", "city", "origin", "dest", "need", "suffix"}
        for name, child, _loc in self.r.items(self.r.mapping(node, "slots")):
            body = self.r.mapping(child, f"slot '{name}'", keys)
            if body is None:
                continue
            get = Reader.get
            per = self.r.string(get(body, "per"), f"slot '{name}' per", required=True) or ""
            if per not in SLOT_PER:
                self.r.error(f"slot '{name}': per must be one of {', '.join(SLOT_PER)}", child.loc)
                continue
            names = self.strings(get(body, "tables"), "tables") or tuple(
                t for t in [self.r.string(get(body, "table"), "table")] if t
            )
            if not names:
                self.r.error(f"slot '{name}' needs 'table' or 'tables'", child.loc)
                continue
            slot = Slot(
                name,
                per,
                names,
                city=self.r.string(get(body, "city"), "city") or "city",
                origin=self.r.string(get(body, "origin"), "origin") or "origin",
                dest=self.r.string(get(body, "dest"), "dest") or "dest",
                need=self.r.string(get(body, "need"), "need") or "always",
                suffix=self.r.string(get(body, "suffix"), "suffix") or "",
            )
            if slot.need not in SLOT_NEED:
                self.r.error(
                    f"slot '{name}': need must be one of {', '.join(SLOT_NEED)}", child.loc
                )
            for table in names:
                if table not in tables:
                    self.r.error(f"slot '{name}': no table '{table}'", child.loc)
                    continue
                wanted = (slot.origin, slot.dest) if per == "leg" else (slot.city,)
                for column in wanted:
                    if column not in tables[table].fields:
                        self.r.error(
                            f"slot '{name}': table '{table}' has no field '{column}'", child.loc
                        )
            out[name] = slot
        return out

    def constraints(
        self,
        node: Node | None,
        request: dict[str, RequestField],
        tables: dict[str, Table],
        slots: dict[str, Slot],
    ) -> tuple[Constraint, ...]:
        out: list[Constraint] = []
        for item in self.r.sequence(node, "constraints"):
            body = self.r.mapping(item, "a constraint")
            if body is None:
                continue
            if len(body.value) != 1 or next(iter(body.value)) not in RULES:
                self.r.error(f"a constraint is one of: {', '.join(RULES)}", item.loc)
                continue
            rule, value = next(iter(body.value.items()))
            made = self.constraint(rule, value, request, tables, slots)
            if made is not None:
                out.append(made)
        return tuple(out)

    def _slot_names(self, node: Node | None, slots: dict[str, Slot], what: str) -> tuple[str, ...]:
        names = (
            self.strings(node, what)
            if node is not None and isinstance(node.value, list)
            else (tuple(n for n in [self.r.string(node, what)] if n))
        )
        for name in names:
            if name not in slots:
                self.r.error(f"{what}: no slot '{name}'", node.loc if node else None)
        return names

    def in_town(
        self, body: Node, node: Node, tables: dict[str, Table], slots: dict[str, Slot]
    ) -> Constraint | None:
        """``in_town: {slot: LEG, departs: FIELD, arrives: FIELD, at: {SLOT: "HH:MM-HH:MM"}}``:
        on a travel day a day slot (an hour long, within its hours) is in the leg's origin only
        if the leg leaves an hour after its hours open, and in the destination only if the leg
        arrives an hour before they close."""
        get = Reader.get
        where = "constraint 'in_town'"
        legs = self._slot_names(get(body, "slot"), slots, where)
        if len(legs) != 1 or slots.get(legs[0]) is None or slots[legs[0]].per != "leg":
            self.r.error(f"{where}: 'slot' must name one slot with per: leg", node.loc)
            return None
        departs = self.r.string(get(body, "departs"), "departs", required=True) or ""
        arrives = self.r.string(get(body, "arrives"), "arrives", required=True) or ""
        timed = [
            t
            for t in slots[legs[0]].tables
            if t in tables and {departs, arrives} <= set(tables[t].fields)
        ]
        if departs and arrives and not timed:  # a table without them has untimed legs
            self.r.error(f"{where}: no table of '{legs[0]}' has '{departs}' and '{arrives}'",
                         node.loc)  # fmt: skip
        times: dict[str, tuple[int, int]] = {}
        for name, value, loc in self.r.items(self.r.mapping(get(body, "at"), "at")):
            text = str(value.value if value is not None else "")
            start, _, end = text.partition("-")
            hours = (clock_minutes(start), clock_minutes(end))
            if name not in slots or slots[name].per != "day":
                self.r.error(f"{where}: at '{name}' is not a slot with per: day", loc)
            elif hours[0] is None or hours[1] is None or hours[1] - hours[0] < 60:
                self.r.error(
                    f"{where}: at '{name}' must be opening hours of an hour or more, such as"
                    ' "11:30-14:30"',
                    loc,
                )
            else:
                times[name] = (hours[0], hours[1])
        return Constraint(
            "in_town", node.loc, slots=legs, times=times, departs=departs, arrives=arrives
        )

    def constraint(
        self,
        rule: str,
        node: Node,
        request: dict[str, RequestField],
        tables: dict[str, Table],
        slots: dict[str, Slot],
    ) -> Constraint | None:
        get = Reader.get
        where = f"constraint '{rule}'"
        if rule == "different":
            return Constraint(rule, node.loc, slots=self._slot_names(node, slots, where))
        body = self.r.mapping(node, where)
        if body is None:
            return None
        req = self.r.string(get(body, "request"), "request") or ""
        if req and req not in request:
            self.r.error(f"{where}: '{req}' is not a request field", node.loc)
        if rule == "in_town":
            return self.in_town(body, node, tables, slots)
        if rule == "total":
            bound = self.r.string(get(body, "at_most"), "at_most", required=True) or ""
            if bound not in request:
                self.r.error(f"{where}: at_most '{bound}' is not a request field", node.loc)
            costs: dict[str, Expr] = {}
            for table, expr_node, loc in self.r.items(self.r.mapping(get(body, "cost"), "cost")):
                if table not in tables:
                    self.r.error(f"{where}: no table '{table}'", loc)
                    continue
                made = self.expr(expr_node, f"cost of {table}")
                if made is None:
                    continue
                known = set(tables[table].fields) | set(tables[table].constants) | set(request)
                for name in made.names - known:
                    self.r.error(f"cost of {table}: unknown name '{name}'", expr_node.loc)
                costs[table] = made
            return Constraint(rule, node.loc, at_most=bound, cost=costs)
        slot_names = self._slot_names(get(body, "slots") or get(body, "slot"), slots, where)
        column = self.r.string(get(body, "field"), "field", required=True) or ""
        for slot in slot_names:
            for table in slots[slot].tables if slot in slots else ():
                if (
                    table in tables
                    and column
                    and column not in tables[table].fields
                    and (column not in tables[table].constants)
                ):
                    self.r.error(f"{where}: table '{table}' has no field '{column}'", node.loc)
        groups: tuple[tuple[str, ...], ...] = ()
        values: dict[str, tuple[str, ...]] = {}
        if rule == "same_kind":
            groups = tuple(
                self.strings(g, "groups") for g in self.r.sequence(get(body, "groups"), "groups")
            )
        if rule == "match":
            for option, allowed, _ in self.r.items(self.r.mapping(get(body, "values"), "values")):
                values[option] = self.strings(allowed, f"values of '{option}'")
        if rule in ("cover", "forbid", "match") and not req:
            self.r.error(f"{where} needs 'request'", node.loc)
        return Constraint(
            rule,
            node.loc,
            slots=slot_names,
            column=column,
            request=req,
            groups=groups,
            value=self.r.string(get(body, "value"), "value") or "{value}",
            values=values,
        )


def clock_minutes(text: Any) -> int | None:
    """``"15:40"`` as minutes after midnight; None when it is not a time of day."""
    m = _CLOCK.fullmatch(str(text or "").strip())
    if not m or int(m.group(1)) > 24 or int(m.group(2)) > 59:
        return None
    return int(m.group(1)) * 60 + int(m.group(2))


_CLOCK = re.compile(r"(\d{1,2}):(\d{2})")


def read_spec(domain: Domain) -> tuple[DataSpec | None, list[Diagnostic]]:
    """Read the data sections of ``domain``; return the spec (None on errors) and diagnostics."""
    reader = _SpecReader(domain)
    spec = reader.read()
    return spec, reader.r.diagnostics

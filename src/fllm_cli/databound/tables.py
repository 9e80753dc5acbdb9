"""The records of a task's data file, checked against the domain's table declarations.

The data file is untrusted JSON: each record is checked field by field and a bad one is a
one-line error naming the table, the record's position and the field.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from fllm_cli.databound.spec import DataSpec, Table, fill
from fllm_cli.errors import UsageError

MAX_RECORDS = 5000


@dataclass(frozen=True)
class Record:
    """One record of a table; ``values`` holds the declared fields and the table's constants."""

    table: str
    index: int
    values: dict[str, Any]

    def __getitem__(self, key: str) -> Any:
        return self.values.get(key)

    def written(self, table: Table) -> str:
        """How the plan names this record: its values exactly as the data has them (inner
        spaces and line breaks included; the official TravelPlanner check matches names that
        way)."""
        return fill(table.write, self.values).strip()

    def shown(self, table: Table) -> str:
        """How the model is shown this record."""
        return " ".join(fill(table.show or table.write, self.values).split())


def _value(type_: str, raw: Any, where: str) -> Any:
    if type_ == "text":
        if isinstance(raw, bool) or not isinstance(raw, (str, int, float)):
            raise UsageError(f"{where}: must be text, got {_type(raw)}")
        text = str(raw).strip()  # inner spacing is part of the value: never rewritten
        if not text:
            raise UsageError(f"{where}: must not be empty")
        return text[:300]
    if type_ in ("number", "number?"):
        if raw is None and type_ == "number?":
            return None
        if isinstance(raw, bool) or not isinstance(raw, (int, float)):
            raise UsageError(f"{where}: must be a number, got {_type(raw)}")
        if not math.isfinite(raw) or abs(raw) > 1e12:
            raise UsageError(f"{where}: {raw!r} is out of range")
        return raw
    if type_ == "texts":
        if not isinstance(raw, list):
            raise UsageError(f"{where}: must be a list of text, got {_type(raw)}")
        return tuple(_value("text", item, where) for item in raw[:100])
    if not isinstance(raw, bool):  # flag
        raise UsageError(f"{where}: must be true or false, got {_type(raw)}")
    return raw


def _type(raw: Any) -> str:
    return {dict: "a mapping", list: "a list", str: "text", bool: "true/false"}.get(
        type(raw), "nothing" if raw is None else type(raw).__name__
    )


def load_table(table: Table, data: dict[str, Any], where: str) -> list[Record]:
    """Return the records of ``table`` in ``data`` (missing list: no records)."""
    raw = data.get(table.source, [])
    if not isinstance(raw, list):
        raise UsageError(f"{where}: '{table.source}' must be a list, got {_type(raw)}")
    if len(raw) > MAX_RECORDS:
        raise UsageError(
            f"{where}: '{table.source}' has {len(raw)} records (at most {MAX_RECORDS})"
        )
    records: list[Record] = []
    seen: set[str] = set()
    for position, item in enumerate(raw):
        at = f"{where}: {table.source}[{position}]"
        if not isinstance(item, dict):
            if set(table.fields) == {"name"} and isinstance(item, str):
                item = {"name": item}
            else:
                raise UsageError(f"{at}: must be a mapping, got {_type(item)}")
        values: dict[str, Any] = dict(table.constants)
        for name, type_ in table.fields.items():
            if name not in item and type_ not in ("number?",):
                raise UsageError(f"{at}: missing field '{name}'")
            values[name] = _value(type_, item.get(name), f"{at}.{name}")
        if table.keep and not values[table.keep]:
            continue
        record = Record(table.name, len(records), values)
        written = record.written(table).lower()
        if written in seen:  # a plan could not say which of two same-named records it means
            continue
        seen.add(written)
        records.append(record)
    return records


def load_tables(spec: DataSpec, data: Any, where: str) -> dict[str, list[Record]]:
    """Return every table of the spec from a task's data (a JSON object)."""
    if not isinstance(data, dict):
        raise UsageError(f"{where}: the data must be a JSON object, got {_type(data)}")
    return {name: load_table(table, data, where) for name, table in spec.tables.items()}

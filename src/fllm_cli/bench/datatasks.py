"""The data of data-bound benchmark tasks: ``--data`` and ``--gold`` files matched to task lines.

A data-bound domain plans with the records each task brings (``fllm plan --data``). In a bench
run that data comes from the task line itself (``"data": {...}``) or from a JSON Lines file of
one object per task, such as TravelPlanner's ``reference_info.jsonl``; gold plans come the same
way (``"gold": [...]`` on the line, or ``--gold`` with ``{"idx": N, "plan": [...]}`` lines).

Matching a file to the tasks: when every object of the file carries an ``idx`` (or ``id``), a
task takes the object whose key equals its own ``idx`` (else its ``id``); otherwise the n-th
object goes with the n-th task line. A file holding a single object without a key serves every
task. A task left without data is a bad line (``file:line: message``); a file that cannot be
read at all is a one-line usage error.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from fllm_cli.bench.tasks import BenchTask, LineError, read_lines
from fllm_cli.errors import UsageError
from fllm_cli.textio import load_json, read_text

KEYS = ("idx", "id")


@dataclass
class Lookup:
    """The objects of a ``--data``/``--gold`` file, by key or by position."""

    path: str
    what: str
    objects: list[dict[str, Any]]
    by_key: dict[str, dict[str, Any]] | None  # None: matched by position

    def find(self, task: BenchTask, position: int) -> dict[str, Any] | None:
        """Return the object of the task at ``position`` (0-based among the task lines)."""
        if self.by_key is not None:
            return self.by_key.get(task_key(task))
        if len(self.objects) == 1:
            return self.objects[0]
        return self.objects[position] if position < len(self.objects) else None


def task_key(task: BenchTask) -> str:
    """Return the key a task is matched by: its line's ``idx``, else its id."""
    for key in KEYS:
        value = task.fields.get(key)
        if isinstance(value, (str, int)) and not isinstance(value, bool):
            return str(value)
    return str(task.id)


def read_objects(path: str, what: str) -> list[tuple[int, dict[str, Any]]]:
    """Return (line, object) for each object of a JSON Lines file (or of one JSON document)."""
    text = read_text(path, what)
    found: list[tuple[int, Any]] = []
    try:
        for number, line in enumerate(text.splitlines(), 1):
            if line.strip() and not line.lstrip().startswith("#"):
                found.append((number, _line_json(line, path, number)))
    except UsageError as first:
        # Not JSON Lines: one JSON document (an object, or a list of objects) will do too.
        try:
            whole = load_json(text, path, max_depth=200)
        except UsageError:
            raise first from None
        items = whole if isinstance(whole, list) else [whole]
        found = [(1, item) for item in items]
    if not found:
        raise UsageError(f"'{path}' ({what}) holds no JSON object")
    for number, item in found:
        if not isinstance(item, dict):
            raise UsageError(f"{path}:{number}: expected a JSON object, got {_kind(item)}")
    return found


def _line_json(line: str, path: str, number: int) -> Any:
    """Parse one JSON line; a syntax error names the file, the line and the column."""
    try:
        return load_json(line, "", max_depth=200)
    except UsageError as exc:  # ":1:COL: message" or ": message"
        where, _, message = exc.message.partition(": ")
        column = where.rsplit(":", 1)[-1] if where.count(":") == 2 else ""
        raise UsageError(f"{path}:{number}:{column + ':' if column else ''} {message}") from None


def load_lookup(path: str, what: str) -> Lookup:
    """Read a ``--data``/``--gold`` file; refuse one whose keys repeat or are half missing."""
    found = read_objects(path, what)
    objects = [obj for _, obj in found]
    keyed = [(n, _key_of(obj)) for n, obj in found]
    if not any(key is not None for _, key in keyed):
        return Lookup(path, what, objects, None)
    by_key: dict[str, dict[str, Any]] = {}
    for (number, key), obj in zip(keyed, objects):
        if key is None:
            raise UsageError(f"{path}:{number}: no 'idx' here, though other lines have one")
        if key in by_key:
            raise UsageError(f"{path}:{number}: idx {key} appears twice")
        by_key[key] = obj
    return Lookup(path, what, objects, by_key)


def _key_of(obj: dict[str, Any]) -> str | None:
    for key in KEYS:
        value = obj.get(key)
        if isinstance(value, (str, int)) and not isinstance(value, bool):
            return str(value)
    return None


def _kind(value: Any) -> str:
    return {list: "a list", str: "text", bool: "true/false"}.get(
        type(value), "null" if value is None else type(value).__name__
    )


def gold_plan(obj: dict[str, Any]) -> Any:
    """Return the plan of a gold line (``{"idx", "plan"}``), or the object's ``plan`` list."""
    plan = obj.get("plan")
    if not isinstance(plan, list):
        raise ValueError("the gold line has no 'plan' list")
    return plan


def attach(
    tasks: list[BenchTask],
    data_file: str | None,
    gold_file: str | None,
    tasks_file: str,
) -> tuple[list[BenchTask], list[LineError]]:
    """Give each task its data (and gold plan) from the files; return the tasks and bad lines."""
    data = load_lookup(data_file, "data file") if data_file else None
    gold = load_lookup(gold_file, "gold-plan file") if gold_file else None
    # A task's position counts every task line, bad ones included, so that one bad line does
    # not shift the data of the lines after it.
    lines = [
        number
        for number, raw in enumerate(read_lines(tasks_file), 1)
        if raw.strip() and not raw.lstrip().startswith("#")
    ]
    ordinal = {number: position for position, number in enumerate(lines)}
    out: list[BenchTask] = []
    bad: list[LineError] = []
    for task in tasks:
        position = ordinal.get(task.line, 0)
        changes: dict[str, Any] = {}
        try:
            if data is not None and task.data is None:
                changes["data"] = _found(data, task, position)
            if gold is not None and task.gold is None:
                changes["gold"] = gold_plan(_found(gold, task, position))
        except ValueError as exc:
            bad.append(LineError(tasks_file, task.line, str(exc)))
            continue
        out.append(replace(task, **changes) if changes else task)
    return out, bad


def _found(lookup: Lookup, task: BenchTask, position: int) -> dict[str, Any]:
    obj = lookup.find(task, position)
    if obj is None:
        how = f"idx {task_key(task)}" if lookup.by_key is not None else f"line {position + 1}"
        raise ValueError(f"no {lookup.what.split()[0]} for {how} in '{lookup.path}'")
    return obj

"""Benchmark task files: JSON Lines with a task text, its interface and an optional reference.

One object per line::

    {"id": 7, "task": "Given noisy image, ...", "inputs": ["image"], "output": "text",
     "reference": ["Image Denoising", "Image Captioning"], "vars": {...}, "level": "easy"}

``level`` (optional) groups tasks in the HTML report; without it, tasks group by interface.

For a data-bound domain (its kind takes data) a line is a request with its data instead::

    {"idx": 3, "query": "Plan a 3-day trip from ...", "level": "easy", "data": {...}, ...}

``query`` may stand for ``task`` and ``idx`` for ``id``; ``data`` (the task's data, a JSON
object) may instead come from ``fllm bench --data FILE.jsonl`` (see :mod:`.datatasks`);
``request`` gives the request's values; every other field is kept for the scorer (TravelPlanner's
structured fields, say).

``reference`` (alias ``tools``) is a list of tool names in execution order, or a plan word
(``input:...`` items mark a word). When ``inputs``/``output`` are missing, they are read from
the task text ("Given <modalities>, how to <... modality>") and, for the output, from the
reference's last tool; a line where that fails is reported like any other bad line.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from typing import Any

from fllm_cli.domain.model import Domain
from fllm_cli.errors import UsageError
from fllm_cli.kinds import kind_of
from fllm_cli.textio import load_json, read_text


@dataclass(frozen=True)
class BenchTask:
    """One benchmark task."""

    id: str | int
    text: str
    inputs: tuple[str, ...]
    output: str | None
    reference: tuple[str, ...] | None = None
    vars: dict[str, Any] = field(default_factory=dict, compare=False, hash=False)
    line: int = 0
    level: str | None = None
    # Data-bound tasks: the task's data, its gold plan, the request's values (when known), the
    # line's other fields, and whether the run's benchmark metrics score it.
    data: Any = field(default=None, compare=False, hash=False, repr=False)
    gold: Any = field(default=None, compare=False, hash=False, repr=False)
    request: dict[str, Any] | None = field(default=None, compare=False, hash=False)
    fields: dict[str, Any] = field(default_factory=dict, compare=False, hash=False, repr=False)
    scored: bool = False

    def group(self) -> str:
        """Return the task's level for reports: its ``level``, else its interface."""
        if self.level is not None:
            return self.level
        if self.output is None:
            return "all"
        return f"{'+'.join(i.partition('=')[2] or i for i in self.inputs)}→{self.output}"


@dataclass(frozen=True)
class LineError:
    """A task line that could not be used."""

    path: str
    line: int
    message: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.message}"


def read_lines(path: str) -> list[str]:
    """Return the lines of a task file, or raise UsageError."""
    return read_text(path, "task file").splitlines()


def load_tasks(path: str, domain: Domain) -> tuple[list[BenchTask], list[LineError]]:
    """Parse a task file; return the good tasks and one error per bad line."""
    tasks: list[BenchTask] = []
    errors: list[LineError] = []
    seen: set[str] = set()
    for number, raw in enumerate(read_lines(path), 1):
        if not raw.strip() or raw.lstrip().startswith("#"):
            continue
        try:
            task = parse_task(raw, number, domain)
            if str(task.id) in seen:
                raise ValueError(f"duplicate task id '{task.id}'")
        except ValueError as exc:
            errors.append(LineError(path, number, str(exc)))
            continue
        seen.add(str(task.id))
        tasks.append(task)
    return tasks, errors


def parse_task(raw: str, number: int, domain: Domain) -> BenchTask:
    """Parse one JSON line into a task; raise ValueError saying what is wrong."""
    try:
        obj = load_json(raw, "")
    except UsageError as exc:  # "[:line:col]: message" -> the message, column kept in words
        where, _, message = exc.message.partition(": ")
        column = where.rsplit(":", 1)[-1] if where.count(":") == 2 else ""
        raise ValueError(message + (f" at column {column}" if column else "")) from None
    if not isinstance(obj, dict):
        raise ValueError("expected a JSON object")
    takes_data = kind_of(domain).takes_data
    text = obj.get("task", obj.get("query") if takes_data else None)
    if not isinstance(text, str) or not text.strip():
        raise ValueError("missing 'task' (a non-empty string)")
    reference = None if takes_data else _reference(obj)
    inputs, output = _interface(obj, text, reference, domain)
    raw_id = obj.get("id", obj.get("idx", number) if takes_data else number)
    if not isinstance(raw_id, (str, int)) or isinstance(raw_id, bool):
        raise ValueError("'id' must be a string or an integer")
    variables = obj.get("vars", {})
    if not isinstance(variables, dict):
        raise ValueError("'vars' must be an object")
    level = obj.get("level")
    if level is not None and (not isinstance(level, (str, int)) or isinstance(level, bool)):
        raise ValueError("'level' must be a string or an integer")
    task = BenchTask(
        raw_id,
        text.strip(),
        inputs,
        output,
        reference,
        variables,
        number,
        None if level is None else str(level),
    )
    return _with_data_fields(task, obj) if takes_data else task


def _with_data_fields(task: BenchTask, obj: dict[str, Any]) -> BenchTask:
    """Add what a data-bound task line carries: inline data and gold plan, request, fields."""
    data = obj.get("data")
    if data is not None and not isinstance(data, dict):
        raise ValueError("'data' must be a JSON object (the task's data)")
    request = obj.get("request")
    if request is not None and not isinstance(request, dict):
        raise ValueError("'request' must be a JSON object of request fields")
    gold = obj.get("gold")
    if gold is not None and not isinstance(gold, list):
        raise ValueError("'gold' must be a plan: a JSON list of day objects")
    fields = {k: v for k, v in obj.items() if k not in ("data", "gold")}
    return replace(task, data=data, gold=gold, request=request, fields=fields)


def _reference(obj: dict[str, Any]) -> tuple[str, ...] | None:
    """Return the reference list (``reference`` or ``tools``), or None."""
    value = obj.get("reference", obj.get("tools"))
    if value is None:
        return None
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ValueError("'reference' must be a list of tool names or a plan word")
    return tuple(value)


def _interface(
    obj: dict[str, Any], text: str, reference: tuple[str, ...] | None, domain: Domain
) -> tuple[tuple[str, ...], str | None]:
    """Return the task's inputs and output, reading them from the text when absent."""
    if not kind_of(domain).has_interface:
        return (), None
    inputs = obj.get("inputs")
    output = obj.get("output")
    if inputs is not None and (
        not isinstance(inputs, list) or not all(isinstance(i, str) for i in inputs)
    ):
        raise ValueError("'inputs' must be a list of modalities (or NAME=MODALITY)")
    if output is not None and not isinstance(output, str):
        raise ValueError("'output' must be a modality name")
    if inputs is None:
        inputs = derive_inputs(text, domain)
    if output is None:
        output = derive_output(text, reference, domain)
    known = {m.name for m in domain.modalities}
    for spec in [*inputs, output]:
        modality = spec.partition("=")[2] or spec
        if modality not in known:
            raise ValueError(f"unknown modality '{modality}' (known: {', '.join(sorted(known))})")
    return tuple(inputs), output


_GIVEN = re.compile(r"^\s*given\b(?P<given>.*?)(?:,|\bhow\b|\bwhat\b)(?P<rest>.*)$", re.I | re.S)


def _modalities_in(text: str, domain: Domain) -> list[str]:
    """Return the domain modalities named in ``text`` (by name or phrase), in order."""
    found: list[tuple[int, str]] = []
    for m in domain.modalities:
        for word in {m.name, m.phrase}:
            for hit in re.finditer(rf"\b{re.escape(word)}s?\b", text, re.I):
                found.append((hit.start(), m.name))
    return [name for _, name in sorted(found)]


def derive_inputs(text: str, domain: Domain) -> list[str]:
    """Read the input modalities from 'Given <...>, how ...'; raise ValueError when unclear."""
    match = _GIVEN.match(text)
    named = _modalities_in(match.group("given"), domain) if match else []
    if not named:
        raise ValueError("no 'inputs' and none can be read from the task text (add \"inputs\")")
    return named


def derive_output(text: str, reference: tuple[str, ...] | None, domain: Domain) -> str:
    """Read the output modality from the question, else the reference's last tool."""
    match = _GIVEN.match(text)
    named = _modalities_in(match.group("rest"), domain) if match else []
    if named:
        return named[-1]
    tools = [domain.tool(name) for name in reference_tools(reference or ())]
    real = [t for t in tools if t is not None]
    if real:
        return real[-1].output
    raise ValueError("no 'output' and none can be read from the task text (add \"output\")")


def is_word(reference: tuple[str, ...] | list[str]) -> bool:
    """Say whether a reference is a plan word (it names task inputs) rather than a tool list."""
    return any(item.startswith("input:") for item in reference)


def reference_tools(reference: tuple[str, ...] | list[str]) -> list[str]:
    """Return the reference's tools in execution order (a prefix word read backwards)."""
    if is_word(reference):
        return [item for item in reversed(reference) if not item.startswith("input:")]
    return list(reference)

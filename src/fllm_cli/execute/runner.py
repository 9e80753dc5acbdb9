"""Carry out a plan: each step's tool called once its inputs are there, independent branches at
the same time (bounded), every value checked against its declared type, and a re-plan inside the
same rules when a tool fails.

A step's result is kept under the *shape* of the sub-plan that made it (its tool and the shapes
of its inputs), so a re-planned tree that shares a sub-plan with the failed one reuses its
result instead of calling the tool again: the run goes on from the point of failure.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
import threading
import time
from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from typing import Any

from fllm_cli.errors import UsageError
from fllm_cli.execute.bindings import Binding
from fllm_cli.execute.failure import ToolFailure

PREVIEW = 200  # characters of a value kept in the run trace; the whole value is in "values"
Event = Callable[[str, dict[str, Any]], None]
Replan = Callable[[set[str]], dict[str, Any] | None]


def _is_number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")
# What a value of each known type must be; a type not listed here takes any JSON value.
CHECKS: dict[str, Callable[[Any], bool]] = {
    "text": lambda v: isinstance(v, str),
    "number": _is_number,
    "boolean": lambda v: isinstance(v, bool),
    "list": lambda v: isinstance(v, list),
    "json": lambda v: True,
    "url": lambda v: (
        isinstance(v, str) and re.match(r"^[a-zA-Z][a-zA-Z0-9+.-]*://\S+$", v) is not None
    ),
    "email": lambda v: isinstance(v, str) and re.match(r"^[^@\s]+@[^@\s]+$", v) is not None,
    "date": lambda v: isinstance(v, str) and _DATE.match(v) is not None,
}


def coerce(value: Any, kind: str) -> Any:
    """Read a command's or a protocol's text output as the declared type where that is safe."""
    if not isinstance(value, str):
        return value
    text = value.strip()
    if kind == "number":
        try:
            number = float(text)
        except ValueError:
            return value
        return int(number) if number.is_integer() and re.fullmatch(r"-?\d+", text) else number
    if kind == "boolean" and text.lower() in ("true", "false"):
        return text.lower() == "true"
    if kind in ("list", "json"):
        try:
            return json.loads(text)
        except ValueError:
            return value
    return text if kind in CHECKS else value


def type_problem(value: Any, kind: str) -> str | None:
    """Say why ``value`` is not of type ``kind`` (None when it is)."""
    try:
        json.dumps(value)
    except (TypeError, ValueError):
        return f"returned a {type(value).__name__}, which is not a JSON value"
    check = CHECKS.get(kind)
    if check is None or check(value):
        return None
    return f"returned {_preview(value, 60)!r}, not {kind}"


def _preview(value: Any, limit: int = PREVIEW) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    flat = "".join(c if c.isprintable() else " " for c in text)
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


@dataclass
class StepRecord:
    """One tool call of the run, for the run trace."""

    step: int
    tool: str
    inputs: list[str]  # references: input:NAME or value:SHAPE-HASH
    value: str | None = None  # reference to the result in RunResult.values
    preview: str = ""
    seconds: float = 0.0
    error: str | None = None
    reused: bool = False
    plan: int = 1


@dataclass
class RunResult:
    """What a run produced: the final value (when it got there), the trace, every value."""

    ok: bool
    output: Any = None
    steps: list[StepRecord] = field(default_factory=list)
    values: dict[str, Any] = field(default_factory=dict)
    plans: list[list[str]] = field(default_factory=list)  # the word of each plan tried
    failed_tools: list[str] = field(default_factory=list)
    message: str = ""
    seconds: float = 0.0

    def as_dict(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "output": self.output,
            "message": self.message,
            "seconds": round(self.seconds, 3),
            "plans": self.plans,
            "failed_tools": self.failed_tools,
            "steps": [
                {k: v for k, v in vars(s).items() if v not in (None, False) or k == "step"}
                for s in self.steps
            ],
            "values": self.values,
        }


def _shape(step: dict[str, Any], by_id: dict[int, dict[str, Any]], memo: dict[int, str]) -> str:
    """Return the shape of the sub-plan ending in ``step``: the same tree, the same string."""
    if step["id"] in memo:
        return memo[step["id"]]
    parts = []
    for ref in step["inputs"]:
        if ref.startswith("step:"):
            parts.append(_shape(by_id[int(ref[5:])], by_id, memo))
        else:
            parts.append(ref)
    shape = f"{step['tool']}({','.join(parts)})"
    memo[step["id"]] = shape
    return shape


def _key(shape: str) -> str:
    return "value:" + hashlib.sha256(shape.encode("utf-8")).hexdigest()[:16]


def plan_steps(doc: dict[str, Any]) -> list[dict[str, Any]]:
    """Return the plan file's steps after checking their shape (a tool plan is required)."""
    steps = doc.get("steps")
    if not isinstance(steps, list) or not steps:
        raise UsageError("the plan file has no steps: fllm run carries out plans of tool domains")
    ids: set[int] = set()
    for s in steps:
        ok = (
            isinstance(s, dict)
            and isinstance(s.get("id"), int)
            and isinstance(s.get("tool"), str)
            and isinstance(s.get("inputs"), list)
            and all(isinstance(r, str) for r in s["inputs"])
        )
        if not ok:
            raise UsageError("the plan file's steps must each have an id, a tool and inputs")
        for ref in s["inputs"]:
            if ref.startswith("step:") and (not ref[5:].isdigit() or int(ref[5:]) not in ids):
                raise UsageError(f"step {s['id']} reads {ref!r}, which is not an earlier step")
        ids.add(s["id"])
    return steps


class Runner:
    """Runs plans of one domain with one set of bindings and given input values."""

    def __init__(
        self,
        bindings: dict[str, Binding],
        types: dict[str, tuple[tuple[str, ...], str]],  # tool -> (input types, output type)
        given: dict[str, Any],
        workers: int = 4,
        on_event: Event | None = None,
    ) -> None:
        self.bindings = bindings
        self.types = types
        self.given = given
        self.workers = max(1, workers)
        self.on_event = on_event or (lambda name, data: None)
        self.values: dict[str, Any] = {}  # value key -> result
        self.lock = threading.Lock()

    def check_ready(self, steps: list[dict[str, Any]], inputs: dict[str, str]) -> None:
        """Refuse a run that cannot start: a tool without binding, an input without value."""
        missing = sorted({s["tool"] for s in steps} - set(self.bindings))
        if missing:
            raise UsageError(f"no binding for tool(s) {missing}", hint="add them to --bind")
        unknown = sorted({s["tool"] for s in steps} - set(self.types))
        if unknown:
            raise UsageError(f"the plan uses tool(s) the domain does not have: {unknown}")
        for name, kind in inputs.items():
            if name not in self.given:
                raise UsageError(
                    f"the plan reads input '{name}' ({kind}): give --input {name}=VALUE"
                )
            problem = type_problem(self.given[name], kind)
            if problem is not None:
                raise UsageError(f"--input {name}: {problem.replace('returned', 'is')}")

    def run(self, doc: dict[str, Any], replan: Replan | None, max_replans: int) -> RunResult:
        """Run ``doc``; on a tool failure ask ``replan`` (the failed tools left out)."""
        start = time.perf_counter()
        result = RunResult(ok=False)
        failed: set[str] = set()
        plan_no = 0
        while True:
            plan_no += 1
            steps = plan_steps(doc)
            result.plans.append([s["tool"] for s in steps])
            self.check_ready(steps, dict(doc.get("inputs") or {}))
            bad, keys = self._run_one(steps, result, plan_no)
            if bad is None:
                result.ok = True
                result.output = self.values[keys[steps[-1]["id"]]]
                break
            failed.add(bad)
            result.failed_tools = sorted(failed)
            if replan is None or plan_no > max_replans:
                result.message = (
                    f"tool '{bad}' failed and no re-plan is left (--max-replans {max_replans})"
                )
                break
            self.on_event("replan", {"failed": sorted(failed), "plan": plan_no + 1})
            new = replan(set(failed))
            if new is None:
                result.message = (
                    f"tool '{bad}' failed, and no valid plan remains without {sorted(failed)}"
                )
                break
            doc = new
        result.values = dict(self.values)
        result.seconds = time.perf_counter() - start
        return result

    def _run_one(
        self, steps: list[dict[str, Any]], result: RunResult, plan_no: int
    ) -> tuple[str | None, dict[int, str]]:
        """Run one plan's steps; return the tool that failed (None when all succeeded) and
        each step's value key."""
        by_id = {s["id"]: s for s in steps}
        memo: dict[int, str] = {}
        keys = {s["id"]: _key(_shape(s, by_id, memo)) for s in steps}
        waiting = {
            s["id"]: {int(r[5:]) for r in s["inputs"] if r.startswith("step:")} for s in steps
        }
        done: set[int] = set()
        for s in steps:  # already made by an earlier plan: reused, not called again
            if keys[s["id"]] in self.values:
                done.add(s["id"])
                result.steps.append(
                    StepRecord(s["id"], s["tool"], self._refs(s, keys), keys[s["id"]],
                               _preview(self.values[keys[s["id"]]]), reused=True, plan=plan_no)
                )  # fmt: skip
        running: dict[Future[Any], dict[str, Any]] = {}
        failure: str | None = None
        # Each step waits for a count of inputs; a finished step counts its readers down.
        unmet = {s["id"]: len(waiting[s["id"]] - done) for s in steps if s["id"] not in done}
        readers: dict[int, list[dict[str, Any]]] = {}
        for s in steps:
            for dep in waiting[s["id"]] - done:
                readers.setdefault(dep, []).append(s)
        ready = [s for s in steps if unmet.get(s["id"]) == 0]
        with ThreadPoolExecutor(max_workers=self.workers) as pool:
            while True:
                if failure is None:
                    starting, ready = ready, []
                    for s in starting:
                        self.on_event("start", {"step": s["id"], "tool": s["tool"]})
                        args = [self._value(r, keys) for r in s["inputs"]]
                        running[pool.submit(self._call, s, args)] = s
                if not running:
                    break
                finished, _ = wait(list(running), return_when=FIRST_COMPLETED)
                for future in finished:
                    s = running.pop(future)
                    value, seconds, error = future.result()
                    record = StepRecord(s["id"], s["tool"], self._refs(s, keys), plan=plan_no,
                                        seconds=round(seconds, 4))  # fmt: skip
                    if error is None:
                        self.values[keys[s["id"]]] = value
                        record.value, record.preview = keys[s["id"]], _preview(value)
                        done.add(s["id"])
                        for reader in readers.get(s["id"], ()):
                            unmet[reader["id"]] -= 1
                            if unmet[reader["id"]] == 0:
                                ready.append(reader)
                    else:
                        record.error = error
                        failure = failure or s["tool"]
                    result.steps.append(record)
                    self.on_event("end", {"step": s["id"], "tool": s["tool"], "error": error,
                                          "seconds": seconds})  # fmt: skip
        return failure, keys

    def _refs(self, s: dict[str, Any], keys: dict[int, str]) -> list[str]:
        return [keys[int(r[5:])] if r.startswith("step:") else r for r in s["inputs"]]

    def _value(self, ref: str, keys: dict[int, str]) -> Any:
        if ref.startswith("step:"):
            return self.values[keys[int(ref[5:])]]
        return self.given[ref.split(":", 1)[1]]

    def _call(self, s: dict[str, Any], args: list[Any]) -> tuple[Any, float, str | None]:
        """Call one tool; return (value, seconds, error or None). Never raises."""
        binding = self.bindings[s["tool"]]
        _, out_type = self.types[s["tool"]]
        start = time.perf_counter()
        try:
            value = coerce(binding.call(args), out_type)
        except ToolFailure as exc:
            return None, time.perf_counter() - start, str(exc)
        except UsageError as exc:
            return None, time.perf_counter() - start, exc.message
        seconds = time.perf_counter() - start
        problem = type_problem(value, out_type)
        return (None, seconds, problem) if problem else (value, seconds, None)

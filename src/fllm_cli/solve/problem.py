"""Problem files: a YAML description of one planning task for ``fllm solve``.

A problem file has one top-level key ``problem:`` holding the task description, the background
the model is shown (data as Python assignments, helper APIs), the problem kind and the expected
output. Loading collects every located diagnostic in one pass.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fllm_cli.diagnostics import Diagnostic, Location
from fllm_cli.domain.yamlloc import Node, Reader, load
from fllm_cli.errors import FllmError, SpecError, UsageError
from fllm_cli.solve.pddl import Atom, Domain, Task, parse_domain, parse_problem
from fllm_cli.textio import MAX_SPEC_BYTES, read_text

KINDS = ("multi-constraint", "multi-step")
TOP_KEYS = {
    "name",
    "kind",
    "description",
    "data",
    "apis",
    "helpers",
    "notes",
    "objective",
    "output_format",
    "domain",
    "instance",
    "horizon",
    "benchmark",
}


# The longest plan a multi-step problem may search for: each length is one solver run.
MAX_HORIZON = 1000


@dataclass(frozen=True)
class Api:
    """A helper the generated code may call."""

    signature: str
    description: str


@dataclass(frozen=True)
class FactPattern:
    """A regular expression over the query and the atom it stands for (``on {1} {2}``)."""

    pattern: str
    atom: str


@dataclass(frozen=True)
class Problem:
    """A loaded, checked problem file."""

    path: str
    name: str
    kind: str
    description: str
    data: str = ""
    apis: tuple[Api, ...] = ()
    helpers: str = ""
    notes: str = ""
    objective: str | None = None
    sense: str = "minimize"
    output_format: str = ""
    domain: Domain | None = None
    domain_text: str = ""
    goal_marker: str = ""
    init_facts: tuple[FactPattern, ...] = ()
    goal_facts: tuple[FactPattern, ...] = ()
    max_horizon: int = 20
    benchmark: str | None = None
    extra: dict[str, str] = field(default_factory=dict)

    @property
    def multi_step(self) -> bool:
        """True for action-sequence problems."""
        return self.kind == "multi-step"

    def background(self) -> str:
        """Return the background information shown to the model."""
        parts = []
        if self.notes.strip():
            parts.append(self.notes.strip())
        if self.data.strip():
            parts.append(
                "These Python variables are already defined in your program "
                "(do not redefine them unless the query changes them):\n" + self.data.strip()
            )
        if self.apis:
            lines = [f"- {a.signature}: {a.description}" for a in self.apis]
            parts.append(
                "These functions are already defined and you may call them:\n" + "\n".join(lines)
            )
        return "\n\n".join(parts)

    def setup_code(self) -> str:
        """Return the Python run in the sandbox before the generated code."""
        return "\n".join(part for part in (self.helpers, self.data) if part.strip())

    def task_for(self, query: str) -> Task:
        """Read the initial state and goal of a multi-step query (NL text or a PDDL problem)."""
        if query.lstrip().startswith("(define"):
            return parse_problem(query)
        marker = self.goal_marker.lower()
        lowered = query.lower()
        cut = lowered.find(marker) if marker else -1
        if cut < 0:
            raise FllmError(f"cannot find the goal in the query (expected '{self.goal_marker}')")
        init = _facts(lowered[:cut], self.init_facts)
        goal = _facts(lowered[cut:], self.goal_facts)
        objects = sorted({arg for atom in init | goal for arg in atom[1:]})
        return Task(tuple(objects), frozenset(init), frozenset(goal))


def _facts(text: str, patterns: tuple[FactPattern, ...]) -> set[Atom]:
    atoms: set[Atom] = set()
    for fact in patterns:
        for match in re.finditer(fact.pattern, text):
            groups = ("", *match.groups())
            for atom in fact.atom.format(*groups).split(";"):
                if atom.strip():
                    atoms.add(tuple(atom.split()))
    return atoms


def is_problem_spec(path: str | Path) -> bool:
    """Return True if ``path`` is a YAML file whose top level has a ``problem:`` key."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return False
    return re.search(r"^problem\s*:", text, re.MULTILINE) is not None


def validate_problem_spec(path: str) -> list[Diagnostic]:
    """Return every diagnostic of the problem file at ``path`` (empty when it is valid)."""
    return _load(path)[1]


def load_problem(path: str | Path) -> Problem:
    """Load a problem file, raising SpecError with the first error (all are attached)."""
    read_text(path, "problem file", MAX_SPEC_BYTES)  # unreadable: a misuse of the command (exit 2)
    problem, diagnostics = _load(str(path))
    if problem is None or any(d.severity == "error" for d in diagnostics):
        raise SpecError(
            diagnostics or [Diagnostic("error", "invalid problem", Location(str(path)))]
        )
    return problem


def _load(path: str) -> tuple[Problem | None, list[Diagnostic]]:
    try:
        text = read_text(path, "problem file", MAX_SPEC_BYTES)
    except UsageError as exc:
        return None, [Diagnostic("error", exc.message, Location(path))]
    root, diagnostics = load(text, path)
    if root is None:
        return None, diagnostics
    reader = Reader(path)
    reader.diagnostics.extend(diagnostics)
    top = reader.mapping(root, "problem file", {"problem"})
    body = reader.mapping(reader.require(top, "problem", "problem file"), "problem", TOP_KEYS)
    if body is None:
        return None, reader.diagnostics
    problem = _read(reader, body, path)
    return problem, reader.diagnostics


def _read(r: Reader, body: Node, path: str) -> Problem | None:
    name = r.string(r.require(body, "name", "problem"), "name", required=True) or ""
    kind_node = r.require(body, "kind", "problem")
    kind = r.string(kind_node, "kind") or ""
    if kind_node is not None and kind not in KINDS:
        r.error(f"kind must be one of {', '.join(KINDS)}, got '{kind}'", kind_node.loc)
    description = r.string(r.require(body, "description", "problem"), "description", True) or ""
    data = _python(r, Reader.get(body, "data"), "data")
    helpers = _helpers(r, Reader.get(body, "helpers"), path)
    apis = _apis(r, Reader.get(body, "apis"))
    base = dict(
        path=path,
        name=name,
        kind=kind,
        description=description,
        data=data,
        helpers=helpers,
        apis=apis,
        notes=r.string(Reader.get(body, "notes"), "notes") or "",
        benchmark=_relative(r.string(Reader.get(body, "benchmark"), "benchmark"), path),
    )
    if kind == "multi-step":
        return _multi_step(r, body, path, base)
    if kind == "multi-constraint":
        return _multi_constraint(r, body, base)
    return None


def _relative(value: str | None, path: str) -> str | None:
    return str(Path(path).parent / value) if value else None


def _python(r: Reader, node: Node | None, what: str) -> str:
    code = r.string(node, what) or ""
    if code and node is not None:
        try:
            compile(code, what, "exec")
        except SyntaxError as exc:
            # Block scalars start on the line after the key.
            line = node.loc.line + (exc.lineno or 1)
            r.error(f"{what}: Python syntax error: {exc.msg}", Location(node.loc.path, line, 1))
    return code


def _helpers(r: Reader, node: Node | None, path: str) -> str:
    rel = r.string(node, "helpers")
    if not rel or node is None:
        return ""
    file = Path(path).parent / rel
    try:
        code = read_text(file, "helpers file")
    except UsageError as exc:
        r.error(f"helpers file '{rel}': {exc.message} (looked in {file.parent})", node.loc)
        return ""
    try:
        compile(code, str(file), "exec")
    except SyntaxError as exc:
        r.error(f"helpers: Python syntax error: {exc.msg}", Location(str(file), exc.lineno or 0))
    return code


def _apis(r: Reader, node: Node | None) -> tuple[Api, ...]:
    apis = []
    for item in r.sequence(node, "apis"):
        m = r.mapping(item, "api", {"signature", "description"})
        sig = r.string(r.require(m, "signature", "api"), "signature", True)
        desc = r.string(r.require(m, "description", "api"), "description", True)
        if sig and desc:
            apis.append(Api(sig, desc))
    return tuple(apis)


def _multi_constraint(r: Reader, body: Node, base: dict[str, Any]) -> Problem:
    obj = r.mapping(r.require(body, "objective", "problem"), "objective", {"variable", "sense"})
    variable = r.string(r.require(obj, "variable", "objective"), "objective variable", True)
    sense_node = Reader.get(obj, "sense")
    sense = r.string(sense_node, "sense") or "minimize"
    if sense_node is not None and sense not in ("minimize", "maximize"):
        r.error(f"sense must be minimize or maximize, got '{sense}'", sense_node.loc)
    fmt_node = r.require(body, "output_format", "problem")
    fmt = r.string(fmt_node, "output_format", True) or ""
    if fmt and fmt_node is not None:
        try:
            json.loads(fmt)
        except json.JSONDecodeError as exc:
            r.error(
                f"output_format must be JSON: {exc.msg}",
                Location(fmt_node.loc.path, fmt_node.loc.line + exc.lineno, exc.colno),
            )
    return Problem(**base, objective=variable, sense=sense, output_format=fmt)


def _multi_step(r: Reader, body: Node, path: str, base: dict[str, Any]) -> Problem:
    dom_node = r.require(body, "domain", "problem")
    rel = r.string(dom_node, "domain") or ""
    domain, text = None, ""
    if rel and dom_node is not None:
        file = Path(path).parent / rel
        try:
            text = read_text(file, "domain file")
            domain = parse_domain(text)
        except UsageError as exc:
            r.error(f"domain file '{rel}': {exc.message}", dom_node.loc)
        except FllmError as exc:
            r.error(f"domain file '{rel}': {exc.message}", dom_node.loc)
    inst = r.mapping(Reader.get(body, "instance"), "instance", {"goal_marker", "init", "goal"})
    marker = r.string(Reader.get(inst, "goal_marker"), "goal_marker") or ""
    horizon = r.mapping(Reader.get(body, "horizon"), "horizon", {"max"})
    max_node = Reader.get(horizon, "max")
    max_h = r.integer(max_node, "horizon max", minimum=1) or 20
    if max_h > MAX_HORIZON:
        r.error(f"horizon max {max_h} is above fllm's limit of {MAX_HORIZON} steps", max_node.loc)  # type: ignore[union-attr]
        max_h = MAX_HORIZON
    fmt = r.string(Reader.get(body, "output_format"), "output_format") or ""
    return Problem(
        **base,
        domain=domain,
        domain_text=text,
        goal_marker=marker,
        init_facts=_patterns(r, Reader.get(inst, "init")),
        goal_facts=_patterns(r, Reader.get(inst, "goal")),
        max_horizon=max_h,
        output_format=fmt or '{"plan": ["(action-name arg1 arg2)", "..."]}',
    )


def _patterns(r: Reader, node: Node | None) -> tuple[FactPattern, ...]:
    out = []
    for item in r.sequence(node, "facts"):
        m = r.mapping(item, "fact", {"pattern", "atom"})
        pat_node = r.require(m, "pattern", "fact")
        pattern = r.string(pat_node, "pattern", True)
        atom = r.string(r.require(m, "atom", "fact"), "atom", True)
        if pattern and pat_node is not None:
            try:
                re.compile(pattern)
            except re.error as exc:
                r.error(f"bad regular expression: {exc}", pat_node.loc)
                continue
        if pattern and atom:
            out.append(FactPattern(pattern, atom))
    return tuple(out)

"""A small STRIPS reader and simulator: parse a PDDL domain/problem and check a plan step by step.

Only what the multi-step tasks need: typed-free parameters, conjunctive preconditions with
``not``, add/delete effects. fllm uses it to check every plan a model's Z3 program returns
and to compute optimal plan lengths (breadth-first search) for the instances it ships.
"""

from __future__ import annotations

import re
from collections import deque
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from itertools import product
from typing import Any

from fllm_cli.errors import FllmError
from fllm_cli.sexp import SList, read, to_lists

Atom = tuple[str, ...]


@dataclass(frozen=True)
class Action:
    """A lifted action: parameters, preconditions (positive, negative) and effects."""

    name: str
    params: tuple[str, ...]
    pre: tuple[Atom, ...]
    pre_not: tuple[Atom, ...]
    add: tuple[Atom, ...]
    delete: tuple[Atom, ...]


@dataclass(frozen=True)
class Domain:
    """A STRIPS domain."""

    name: str
    actions: dict[str, Action]

    def action(self, name: str) -> Action | None:
        """Return the action called ``name``, ignoring case, '-' and '_'."""
        wanted = norm(name)
        for action in self.actions.values():
            if norm(action.name) == wanted:
                return action
        return None


@dataclass(frozen=True)
class Task:
    """Objects, initial state and goal of one problem."""

    objects: tuple[str, ...]
    init: frozenset[Atom]
    goal: frozenset[Atom]


def norm(name: str) -> str:
    """Normalise a name for lenient matching (``pick-up`` == ``pickup`` == ``Pick_Up``)."""
    return re.sub(r"[-_\s]", "", name.lower())


def sexpr(text: str, path: str = "PDDL") -> list[Any]:
    """Parse PDDL text into nested lists of lower-case symbols (fllm's one s-expression reader)."""
    forms, diagnostics = read(text, path)
    errors = [d for d in diagnostics if d.severity == "error"]
    extra = [d for d in diagnostics if d.severity == "warning"]
    if errors:
        raise FllmError(f"PDDL: {errors[0].message}", location=errors[0].location)
    if extra:  # a stray ')' is forgiven in agent specs, not in PDDL
        raise FllmError("PDDL: unbalanced ')'", location=extra[0].location)
    if not forms or not isinstance(forms[0], SList):
        raise FllmError("PDDL: unbalanced '(' or empty text")
    root: list[Any] = to_lists(forms[0], lower=True)
    return root


def _section(expr: list[Any], key: str) -> list[Any] | None:
    for item in expr:
        if isinstance(item, list) and item and item[0] == key:
            return item
    return None


def _literals(expr: list[Any] | None) -> tuple[list[Atom], list[Atom]]:
    """Split a conjunction into positive and negated atoms."""
    if not expr:
        return [], []
    items = expr[1:] if expr[0] == "and" else [expr]
    pos: list[Atom] = []
    neg: list[Atom] = []
    for item in items:
        if item and item[0] == "not":
            neg.append(tuple(item[1]))
        elif item:
            pos.append(tuple(item))
    return pos, neg


def parse_domain(text: str) -> Domain:
    """Parse a STRIPS domain."""
    expr = sexpr(text)
    header = _section(expr, "domain")
    actions: dict[str, Action] = {}
    for item in expr:
        if not (isinstance(item, list) and item and item[0] == ":action"):
            continue
        fields = dict(zip(item[2::2], item[3::2]))
        params = tuple(p for p in fields.get(":parameters", []) if p.startswith("?"))
        pre, pre_not = _literals(fields.get(":precondition"))
        add, delete = _literals(fields.get(":effect"))
        actions[item[1]] = Action(
            item[1], params, tuple(pre), tuple(pre_not), tuple(add), tuple(delete)
        )
    if not actions:
        raise FllmError("PDDL domain defines no actions")
    return Domain(header[1] if header else "domain", actions)


def parse_problem(text: str) -> Task:
    """Parse a PDDL problem (objects, init, goal)."""
    expr = sexpr(text)
    objects = tuple(o for o in (_section(expr, ":objects") or [])[1:] if o != "-")
    init = frozenset(tuple(a) for a in (_section(expr, ":init") or [])[1:])
    goal_expr = _section(expr, ":goal")
    pos, _ = _literals(goal_expr[1] if goal_expr and len(goal_expr) > 1 else None)
    return Task(objects, init, frozenset(pos))


def ground(atom: Atom, binding: dict[str, str]) -> Atom:
    """Substitute parameters in ``atom``."""
    return tuple(binding.get(t, t) for t in atom)


def parse_step(step: str) -> tuple[str, tuple[str, ...]]:
    """Read one plan step: ``(stack a b)``, ``stack(a, b)``, ``stack a b`` or ``stack a on b``."""
    words = re.findall(r"[A-Za-z0-9_\-]+", step.lower())
    if not words:
        raise FllmError(f"empty plan step {step!r}")
    return words[0], tuple(w for w in words[1:] if w not in {"from", "on", "onto", "to", "the"})


@dataclass(frozen=True)
class Check:
    """The outcome of simulating a plan."""

    valid: bool
    reason: str
    length: int


def simulate(domain: Domain, task: Task, plan: Iterable[str]) -> Check:
    """Apply ``plan`` from the initial state; valid if every step applies and the goal holds."""
    state = set(task.init)
    steps = list(plan)
    for number, step in enumerate(steps, 1):
        try:
            name, args = parse_step(step)
        except FllmError as exc:
            return Check(False, f"step {number}: {exc.message}", len(steps))
        action = domain.action(name)
        if action is None:
            known = ", ".join(domain.actions)
            return Check(
                False, f"step {number} {step!r}: unknown action (known: {known})", len(steps)
            )
        if len(args) != len(action.params):
            return Check(
                False,
                f"step {number} {step!r}: {action.name} takes "
                f"{len(action.params)} argument(s), got {len(args)}",
                len(steps),
            )
        binding = dict(zip(action.params, args))
        missing = [ground(a, binding) for a in action.pre if ground(a, binding) not in state]
        present = [ground(a, binding) for a in action.pre_not if ground(a, binding) in state]
        if missing or present:
            why = "; ".join(
                [f"needs ({' '.join(a)})" for a in missing]
                + [f"needs not ({' '.join(a)})" for a in present]
            )
            return Check(False, f"step {number} {step!r} is not applicable: {why}", len(steps))
        state -= {ground(a, binding) for a in action.delete}
        state |= {ground(a, binding) for a in action.add}
    unmet = sorted(task.goal - state)
    if unmet:
        shown = ", ".join("(" + " ".join(a) + ")" for a in unmet)
        return Check(
            False, f"goal not reached after {len(steps)} step(s): missing {shown}", len(steps)
        )
    return Check(True, "valid", len(steps))


def _bindings(
    pre: tuple[Atom, ...], state: frozenset[Atom], binding: dict[str, str]
) -> Iterator[dict[str, str]]:
    """Yield bindings that make every positive precondition true (a small join)."""
    if not pre:
        yield binding
        return
    first, rest = pre[0], pre[1:]
    for atom in state:
        if len(atom) != len(first) or atom[0] != first[0]:
            continue
        new = dict(binding)
        if all(
            new.setdefault(p, a) == a if p.startswith("?") else p == a
            for p, a in zip(first[1:], atom[1:])
        ):
            yield from _bindings(rest, state, new)


def successors(
    domain: Domain, task: Task, state: frozenset[Atom]
) -> Iterable[tuple[str, frozenset[Atom]]]:
    """Yield ``(step, next state)`` for every grounded action applicable in ``state``."""
    for action in domain.actions.values():
        for partial in _bindings(action.pre, state, {}):
            free = [p for p in action.params if p not in partial]
            for values in product(task.objects, repeat=len(free)):
                binding = {**partial, **dict(zip(free, values))}
                if any(ground(a, binding) in state for a in action.pre_not):
                    continue
                nxt = (state - {ground(a, binding) for a in action.delete}) | {
                    ground(a, binding) for a in action.add
                }
                args = [binding[p] for p in action.params]
                yield "(" + " ".join((action.name, *args)) + ")", frozenset(nxt)


def shortest_plan(domain: Domain, task: Task, max_states: int = 200000) -> list[str] | None:
    """Return a shortest plan by breadth-first search, or None if none within ``max_states``."""
    start = frozenset(task.init)
    parents: dict[frozenset[Atom], tuple[frozenset[Atom], str] | None] = {start: None}
    queue = deque([start])
    while queue and len(parents) <= max_states:
        state = queue.popleft()
        if task.goal <= state:
            plan: list[str] = []
            while parents[state] is not None:
                prev, step = parents[state]  # type: ignore[misc]
                plan.append(step)
                state = prev
            return plan[::-1]
        for step, nxt in successors(domain, task, state):
            if nxt not in parents:
                parents[nxt] = (state, step)
                queue.append(nxt)
    return None

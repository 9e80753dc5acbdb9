# Helpers for multi-step problems, run inside the sandbox before the generated code.
# update_data(solver) adds the frame rules: a fact keeps its value from one step to the next
# unless an action taken at that step mentions it in its effects.
import sys as _sys

import z3 as _z3


def _fllm_norm(name):
    return "".join(ch for ch in str(name).lower() if ch.isalnum())


def _fllm_tables(ns):
    """Dicts of Bool keyed by tuples whose last element is an int time step."""
    tables = {}
    for name, value in list(ns.items()):
        if name.startswith("_") or not isinstance(value, dict) or not value:
            continue
        keys_ok = all(isinstance(k, tuple) and k and isinstance(k[-1], int) for k in value)
        if keys_ok and all(_z3.is_bool(v) for v in value.values()):
            tables[name] = value
    return tables


def _fllm_consts(expr, out):
    if _z3.is_const(expr) and expr.decl().kind() == _z3.Z3_OP_UNINTERPRETED:
        out.add(expr.get_id())
        return
    for child in expr.children():
        _fllm_consts(child, out)


def _fllm_implications(expr, out):
    if _z3.is_implies(expr):
        out.append((expr.arg(0), expr.arg(1)))
    elif _z3.is_and(expr):
        for child in expr.children():
            _fllm_implications(child, out)


def update_data(solver):
    """Keep every fact unchanged between steps unless an action of that step affects it."""
    ns = _sys._getframe(1).f_globals
    tables = _fllm_tables(ns)
    names = {_fllm_norm(n) for n in globals().get("_FLLM_ACTIONS", [])}
    rules = []
    for assertion in solver.assertions():
        _fllm_implications(assertion, rules)
    owner = {}
    for name, table in tables.items():
        for key, var in table.items():
            owner[var.get_id()] = (name, key)
    antecedents, consequents = set(), set()
    for ante, cons in rules:
        _fllm_consts(ante, antecedents)
        _fllm_consts(cons, consequents)
    actions = set()
    for name, table in tables.items():
        ids = {v.get_id() for v in table.values()}
        if _fllm_norm(name) in names or (ids & antecedents and not ids & consequents):
            actions.add(name)
    changers = {}
    for ante, cons in rules:
        found = set()
        _fllm_consts(ante, found)
        acts = [owner[i] for i in found if i in owner and owner[i][0] in actions]
        touched = set()
        _fllm_consts(cons, touched)
        for fact in touched:
            for act_name, act_key in acts:
                changers.setdefault(fact, set()).add((act_name, act_key))
    for name, table in tables.items():
        if name in actions:
            continue
        for key, var in table.items():
            prev_key = (*key[:-1], key[-1] - 1)
            if prev_key not in table:
                continue
            acts = [tables[a][k] for a, k in changers.get(var.get_id(), ()) if k[-1] == key[-1] - 1]
            if acts:
                solver.add(_z3.Implies(var != table[prev_key], _z3.Or(acts)))
            else:
                solver.add(var == table[prev_key])

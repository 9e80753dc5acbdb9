"""An independent plan checker, written from docs/spec.md only.

It re-decides whether a plan word is valid for a tool domain or a grammar domain, without
importing anything from fllm: a small loader reads the YAML (through PyYAML) into plain
grammars, and an Earley recognizer decides membership. Use limits, the plan-step cap and the
"at least one tool" rule are properties of the word (counts of its symbols), so they are
checked on the word directly.

The loader is deliberately conservative: when a domain uses a form the spec does not describe
clearly (non-string names, a symbol that is both terminal and nonterminal, a tool named like a
task input, ...) it raises :class:`Unsupported`, and the caller skips the comparison instead of
guessing.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from dataclasses import dataclass, field

import yaml

EPSILON = {"ε", "eps", "epsilon"}


class Unsupported(Exception):
    """The checker cannot decide this case with confidence; the comparison is skipped."""


@dataclass
class Cfg:
    """A context-free grammar with word-level limits."""

    start: str
    productions: dict[str, list[tuple[str, ...]]]
    terminals: set[str]
    limits: dict[str, int | None] = field(default_factory=dict)  # terminal -> max occurrences
    tool_terminals: set[str] = field(default_factory=set)
    require_tool: bool = False
    max_tools: int | None = None
    required: set[str] = field(default_factory=set)  # terminals every plan must use


# --------------------------------------------------------------------------- Earley


def earley_recognize(g: Cfg, word: list[str]) -> bool:
    """Return whether ``word`` is derivable from ``g.start`` (limits not considered)."""
    prods = g.productions
    nullable: set[str] = set()
    changed = True
    while changed:
        changed = False
        for lhs, alts in prods.items():
            if lhs not in nullable and any(all(s in nullable for s in rhs) for rhs in alts):
                nullable.add(lhs)
                changed = True
    n = len(word)
    # An item is (lhs, rhs, dot, origin).
    chart: list[set[tuple[str, tuple[str, ...], int, int]]] = [set() for _ in range(n + 1)]
    for rhs in prods.get(g.start, []):
        chart[0].add((g.start, rhs, 0, 0))
    for i in range(n + 1):
        agenda = list(chart[i])
        while agenda:
            lhs, rhs, dot, origin = agenda.pop()
            if dot < len(rhs):
                sym = rhs[dot]
                if sym in prods:  # predict
                    for alt in prods[sym]:
                        item = (sym, alt, 0, i)
                        if item not in chart[i]:
                            chart[i].add(item)
                            agenda.append(item)
                    if sym in nullable:  # Aycock-Horspool: step over a nullable symbol
                        item = (lhs, rhs, dot + 1, origin)
                        if item not in chart[i]:
                            chart[i].add(item)
                            agenda.append(item)
                elif i < n and word[i] == sym:  # scan
                    chart[i + 1].add((lhs, rhs, dot + 1, origin))
            else:  # complete
                for plhs, prhs, pdot, porigin in list(chart[origin]):
                    if pdot < len(prhs) and prhs[pdot] == lhs:
                        item = (plhs, prhs, pdot + 1, porigin)
                        if item not in chart[i]:
                            chart[i].add(item)
                            agenda.append(item)
    return any(
        lhs == g.start and dot == len(rhs) and origin == 0 for lhs, rhs, dot, origin in chart[n]
    )


def check_word(g: Cfg, word: list[str]) -> tuple[bool, str]:
    """Decide ``word`` against the grammar and its limits; return (valid, reason)."""
    for i, sym in enumerate(word):
        if sym not in g.terminals:
            return False, f"position {i + 1}: '{sym}' is not a terminal"
    counts = Counter(word)
    for term, most in g.limits.items():
        if most is not None and counts[term] > most:
            return False, f"'{term}' used {counts[term]} times, limit {most}"
    tools = sum(counts[t] for t in g.tool_terminals)
    if g.require_tool and tools == 0:
        return False, "the plan uses no tool"
    if g.max_tools is not None and tools > g.max_tools:
        return False, f"{tools} tool steps, limit {g.max_tools}"
    unused = sorted(t for t in g.required if counts[t] == 0)
    if unused:
        return False, f"the plan never uses {unused} (every task input must be used)"
    if not earley_recognize(g, word):
        return False, "not a word of the grammar"
    return True, "ok"


# --------------------------------------------------------------------------- loading


def _name(value: object) -> str:
    if not isinstance(value, str) or not value.strip() or value != value.strip():
        raise Unsupported(f"not a plain name: {value!r}")
    return value


def _limit(value: object) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise Unsupported(f"odd limit {value!r}")
    return value


_ALIAS = re.compile(r"(?:^|[\s,\[{:-])\*[^\s,\]}]")


def _load_yaml(text: str) -> dict:
    if len(text) > 500_000 or _ALIAS.search(text) or "<<" in text:
        # aliases can explode when walked (billion laughs); merge keys are not in the spec
        raise Unsupported("aliases, merge keys or a huge file")
    try:
        doc = yaml.safe_load(text)
    except Exception as exc:  # any YAML trouble: fllm decides, we do not compare
        raise Unsupported(f"yaml: {exc}") from None
    if not isinstance(doc, dict):
        raise Unsupported("top level is not a mapping")
    return doc


def domain_kind(doc: dict) -> str:
    """The domain's kind as docs/spec.md defines the default."""
    kind = doc.get("kind")
    if kind is None:
        return "grammar" if "grammar" in doc else "automaton" if "automaton" in doc else "tools"
    if kind not in ("tools", "grammar", "automaton"):
        raise Unsupported(f"kind {kind!r}")
    return kind


def _names_list(value: object) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str):
        return [_name(value)]
    if not isinstance(value, list):
        raise Unsupported("not a list")
    return [_name(v) for v in value]


def parse_inputs(specs: list[str]) -> list[tuple[str, str]]:
    """``--input`` values (MODALITY or NAME=MODALITY) as (name, modality), named per the spec."""
    seen: Counter[str] = Counter()
    out: list[tuple[str, str]] = []
    for spec in specs:
        name, sep, modality = spec.partition("=")
        if not sep:
            name, modality = "", spec
        name, modality = name.strip(), modality.strip()
        if not modality or (sep and not name):
            raise ValueError(f"bad input {spec!r}")
        if not name:
            seen[modality] += 1
            name = modality if seen[modality] == 1 else f"{modality}_{seen[modality]}"
        if any(n == name for n, _ in out) or any(c in name for c in " \t\n,"):
            raise ValueError(f"bad input name {name!r}")
        out.append((name, modality))
    return out


def tool_grammar(doc: dict, inputs: list[tuple[str, str]], output: str) -> Cfg:
    """The planning grammar of a tool domain for a task; raises ValueError for a bad task."""
    mods_raw = doc.get("modalities")
    if isinstance(mods_raw, dict):
        modalities = [_name(k) for k in mods_raw]
    elif isinstance(mods_raw, list):
        modalities = [_name(m) for m in mods_raw]
    else:
        raise Unsupported("modalities")
    if len(set(modalities)) != len(modalities):
        raise Unsupported("duplicate modality")
    limits = doc.get("limits") or {}
    if not isinstance(limits, dict):
        raise Unsupported("limits")
    if doc.get("vars") and "{" in str(doc.get("intro", "")):
        raise Unsupported("a templated intro (its render bounds decide whether it is valid)")
    default_uses = _limit(limits["max_uses"]) if "max_uses" in limits else 1
    max_tools = _limit(limits.get("max_plan_steps"))
    allow_empty = limits.get("allow_empty_plan", False)
    if not isinstance(allow_empty, bool) and allow_empty is not None:
        raise Unsupported("allow_empty_plan")
    every_input = limits.get("use_every_input", True)  # docs/spec.md: on unless turned off
    if not isinstance(every_input, bool):
        raise Unsupported("use_every_input")
    tools = doc.get("tools")
    if not isinstance(tools, list) or not tools:
        raise Unsupported("tools")
    prods: dict[str, list[tuple[str, ...]]] = {m: [] for m in modalities}
    lim: dict[str, int | None] = {}
    for t in tools:
        if not isinstance(t, dict):
            raise Unsupported("tool")
        name = _name(t.get("name"))
        if name in lim or name in modalities or name.startswith("input:"):
            raise Unsupported(f"tool name {name!r} clashes")
        ins = _names_list(t.get("inputs"))
        out = _name(t.get("output"))
        if not ins or out not in modalities or any(i not in modalities for i in ins):
            raise Unsupported("tool signature")
        lim[name] = _limit(t["max_uses"]) if "max_uses" in t else default_uses
        prods[out].append((name, *ins))
    task = doc.get("task")
    if task is not None and not isinstance(task, dict):
        raise Unsupported("task")
    task = task or {}
    t_in = _names_list(task.get("inputs"))
    t_out = _names_list(task.get("outputs"))
    max_inputs = _limit(task.get("max_inputs"))
    # The task interface (spec: "modalities a task may provide / ask for").
    if not inputs:
        raise ValueError("a tool task needs at least one input")
    for _n, m in inputs:
        if m not in modalities or (t_in and m not in t_in):
            raise ValueError(f"input modality {m!r} not allowed")
    if max_inputs is not None and len(inputs) > max_inputs:
        raise ValueError("too many task inputs")
    if output not in modalities or (t_out and output not in t_out):
        raise ValueError(f"output {output!r} not allowed")
    terms = set(lim)
    for n, m in inputs:
        term = f"input:{n}"
        if term in terms:
            raise Unsupported("input terminal clashes with a tool")
        terms.add(term)
        prods[m].append((term,))
    return Cfg(
        start=output,
        productions=prods,
        terminals=terms,
        limits=lim,
        tool_terminals=set(lim),
        require_tool=not allow_empty,
        max_tools=max_tools,
        required={f"input:{n}" for n, _ in inputs} if every_input else set(),
    )


def _alternatives(value: object) -> list[tuple[str, ...]]:
    if isinstance(value, str):
        parts: list[object] = list(value.split("|"))
    elif isinstance(value, list) and value:
        parts = list(value)
    else:
        raise Unsupported("productions")
    out: list[tuple[str, ...]] = []
    for part in parts:
        if isinstance(part, dict):
            if set(part) - {"rhs", "step"} or "rhs" not in part:
                raise Unsupported("alternative mapping")
            part = part["rhs"] if part["rhs"] is not None else "ε"
        if isinstance(part, str):
            words = part.split()
            if not words:
                raise Unsupported("empty alternative")
            out.append(() if len(words) == 1 and words[0] in EPSILON else tuple(words))
        elif isinstance(part, list):
            syms = [_name(s) for s in part if s is not None]
            out.append(tuple(s for s in syms if s not in EPSILON))
        else:
            raise Unsupported("alternative")
    return out


def grammar_grammar(doc: dict) -> Cfg:
    """The grammar of a grammar domain, with set-valued nonterminals as yes/no chains."""
    g = doc.get("grammar")
    if not isinstance(g, dict) or set(g) - {
        "start",
        "nonterminals",
        "terminals",
        "productions",
        "sets",
    }:
        raise Unsupported("grammar section")
    start = _name(g.get("start"))

    def symbols(node: object, allow_limit: bool) -> dict[str, int | None]:
        if node is None:
            return {}
        if isinstance(node, list):
            return {_name(x): None for x in node}
        if not isinstance(node, dict):
            raise Unsupported("symbols")
        out: dict[str, int | None] = {}
        for k, v in node.items():
            k = _name(k)
            if isinstance(v, dict):
                out[k] = _limit(v.get("max_uses")) if allow_limit else None
            elif v is None or isinstance(v, str):
                out[k] = None
            else:
                raise Unsupported("symbol value")
        return out

    nts = symbols(g.get("nonterminals"), False)
    terms = symbols(g.get("terminals"), True)
    raw = g.get("productions")
    if not isinstance(raw, dict):
        raise Unsupported("productions")
    prods: dict[str, list[tuple[str, ...]]] = {}
    for lhs, value in raw.items():
        prods.setdefault(_name(lhs), []).extend(_alternatives(value))
    for n in nts:
        prods.setdefault(n, [])
    limits = dict(terms)
    sets = g.get("sets") or {}
    if not isinstance(sets, dict):
        raise Unsupported("sets")
    for sname, spec in sets.items():
        sname = _name(sname)
        if sname in prods or not isinstance(spec, dict):
            raise Unsupported("set")
        elements = [_name(e) for e in spec.get("elements") or []]
        if not elements or len(set(elements)) != len(elements):
            raise Unsupported("set elements")
        # docs/spec.md: A -> A:e1 A/e2 | A/e2, ..., the last one -> A:en | ε
        chain = [sname if k == 0 else f"{sname}/{e}" for k, e in enumerate(elements)]
        for k, nt in enumerate(chain):
            rest = (chain[k + 1],) if k + 1 < len(chain) else ()
            term = f"{sname}:{elements[k]}"
            terms[term] = None
            prods[nt] = [(term, *rest), rest]
    if set(terms) & set(prods):
        raise Unsupported("a symbol is both terminal and nonterminal")
    for alts in prods.values():
        for rhs in alts:
            for s in rhs:
                if s not in prods and s not in terms:
                    raise Unsupported(f"undefined symbol {s!r}")
    if start not in prods:
        raise Unsupported("start")
    return Cfg(start=start, productions=prods, terminals=set(terms), limits=limits)


# --------------------------------------------------------------------------- plans

_COMMENT = re.compile(r"(?:^|\s)#.*$")


def read_plan(text: str) -> tuple[list[str], dict | None]:
    """A plan file per docs/spec.md: a plan JSON with a ``word`` list, or one terminal a line."""
    body = text.lstrip("\ufeff").lstrip()
    if body.startswith("{"):
        try:
            doc = json.loads(body)
        except ValueError:
            raise Unsupported("plan JSON does not parse") from None
        word = doc.get("word") if isinstance(doc, dict) else None
        if not isinstance(word, list) or not all(isinstance(w, str) for w in word):
            raise Unsupported("no word list")
        return word, doc
    items = [_COMMENT.sub("", line).strip().rstrip(",").strip() for line in text.splitlines()]
    word = [i for i in items if i]
    if len(word) == 1 and word[0] in EPSILON:
        return [], None
    if not word:
        # docs/spec.md: the empty plan is written "ε"; a file with no steps is refused as
        # empty (so a truncated file is never taken for the empty plan).
        raise Unsupported("a text plan with no steps is not a plan")
    return word, None


def check_plan(
    domain_text: str,
    plan_text: str,
    cli_inputs: list[str] | None,
    cli_output: str | None,
) -> tuple[bool, str]:
    """Decide a plan for a domain; ``cli_*`` are the --input/--output given (None: from JSON).

    Returns (valid, reason); raises :class:`Unsupported` when it cannot decide.
    """
    doc = _load_yaml(domain_text)
    kind = domain_kind(doc)
    word, plan_doc = read_plan(plan_text)
    if kind == "grammar":
        return check_word(grammar_grammar(doc), word)
    if kind != "tools":
        raise Unsupported(kind)
    inputs_specs = cli_inputs
    output = cli_output
    if plan_doc is not None:
        if not inputs_specs and isinstance(plan_doc.get("inputs"), dict):
            pairs = plan_doc["inputs"]
            if not all(isinstance(v, str) for v in pairs.values()):
                raise Unsupported("odd plan inputs")
            inputs_specs = [f"{k}={v}" for k, v in pairs.items()]
        if output is None and isinstance(plan_doc.get("output"), str):
            output = plan_doc["output"]
    if output is None or not inputs_specs:
        raise Unsupported("no task")
    try:
        inputs = parse_inputs(inputs_specs)
        g = tool_grammar(doc, inputs, output)
    except ValueError as exc:
        return False, f"bad task: {exc}"
    return check_word(g, word)

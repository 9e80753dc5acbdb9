"""Structured generators of valid-ish inputs of every kind.

Each generator takes a ``random.Random`` and returns text (and, for domains, the plain data it
was dumped from, so plans can be derived from it). "Valid-ish": most outputs are well formed,
some deliberately bend one rule (an undefined symbol, a zero limit, a recursive grammar with no
exit), because the edges are where bugs live.
"""

from __future__ import annotations

import json
import random

import yaml

NAME_POOL = [
    "Caption",
    "Denoise",
    "Ask",
    "Translate",
    "Summarize",
    "C# Compiler",
    "Image Super Resolution",
    "Détecteur",
    "tool_1",
    "x",
    "Q&A",
    "a-b",
    "step:1",
    "Tool #2",
    "ツール",
    "Z",
    "S",
    "input",
]
MODALITY_POOL = ["image", "text", "audio", "video", "table", "code", "vector", "模态", "t"]


def _pick_names(rng: random.Random, pool: list[str], n: int, prefix: str) -> list[str]:
    names: list[str] = []
    for i in range(n):
        if rng.random() < 0.5 and pool:
            cand = rng.choice(pool)
            if cand not in names:
                names.append(cand)
                continue
        names.append(f"{prefix}{i}")
    return list(dict.fromkeys(names))


def _limit(rng: random.Random) -> object:
    return rng.choice([1, 1, 2, 3, None, 5, 0, -1, 10**12, "2", 1.5, True])


def _clean_limit(rng: random.Random) -> object:
    return rng.choice([1, 1, 2, 3, None])


# Prompt templates that would eat the machine without the render bounds (fllm_cli.prompts):
# widths, padding, repetition, '~' growth, nested loops, output size. A domain with variables
# renders its intro, so each must end in a clean error at validate and at plan.
TEMPLATE_BOMBS = (
    "{{ '%3000000000d' % 1 }}",
    "{{ '{:>3000000000}'.format('x') }}",
    "{{ 'x'|center(3000000000) }}",
    "{{ 'x' * 3000000000 }}",
    "{% set ns = namespace(s='xx') %}{% for i in range(64) %}{% set ns.s = ns.s ~ ns.s %}"
    "{% endfor %}{{ ns.s }}",
    "{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}",
    "{% for i in range(100000) %}{% for j in range(100) %}{{ i }}{{ j }}{% endfor %}{% endfor %}",
    "Plan for {{ who }}.",  # a sound one among them
)


def tool_domain(rng: random.Random, bend: float = 0.15) -> dict:
    """A random tool domain as plain data."""
    mods = _pick_names(rng, MODALITY_POOL, rng.randint(1, 4), "m")
    n_tools = rng.choice([1, 2, 3, 4, 6, 8, 12, 20])
    tools = []
    names = _pick_names(rng, NAME_POOL, n_tools, "T")
    for name in names:
        t: dict = {
            "name": name,
            "description": rng.choice(["", "does a thing", "ünïcødé ✓", "x" * 50]),
            "inputs": [rng.choice(mods) for _ in range(rng.choice([1, 1, 1, 2, 3]))],
            "output": rng.choice(mods),
        }
        if rng.random() < 0.4:
            t["max_uses"] = _limit(rng) if rng.random() < bend else _clean_limit(rng)
        tools.append(t)
    doc: dict = {"fllm": 1, "name": f"gen-tools-{rng.randint(0, 999)}"}
    if rng.random() < 0.3:
        doc["kind"] = "tools"
    if rng.random() < 0.5:
        doc["modalities"] = {m: {"phrase": m, "description": f"a {m}"} for m in mods}
    elif rng.random() < 0.5:
        doc["modalities"] = {m: m for m in mods}
    else:
        doc["modalities"] = list(mods)
    doc["tools"] = tools
    if rng.random() < bend / 3:
        doc["vars"] = {"who": {"description": "who asks", "default": "me"}}
        doc["intro"] = rng.choice(TEMPLATE_BOMBS)
    if rng.random() < 0.6:
        task: dict = {
            "inputs": rng.sample(mods, rng.randint(1, len(mods))),
            "outputs": rng.sample(mods, rng.randint(1, len(mods))),
        }
        if rng.random() < 0.3:
            task["max_inputs"] = rng.choice([1, 2, 3, None])
        doc["task"] = task
    if rng.random() < 0.6:
        limits: dict = {}
        if rng.random() < 0.6:
            limits["max_uses"] = _clean_limit(rng) if rng.random() > bend else _limit(rng)
        if rng.random() < 0.4:
            limits["max_plan_steps"] = rng.choice([1, 2, 3, 5, None])
        if rng.random() < 0.4:
            limits["allow_empty_plan"] = rng.random() < 0.5
        doc["limits"] = limits
    if rng.random() < bend:  # bend one rule
        choice = rng.randrange(4)
        if choice == 0:
            tools[0]["inputs"].append("undefined_modality")
        elif choice == 1:
            tools.append(dict(tools[0]))
        elif choice == 2:
            tools[0]["output"] = "nowhere"
        else:
            doc["tools"] = []
    return doc


def grammar_domain(rng: random.Random, bend: float = 0.15) -> dict:
    """A random grammar domain (recursive productions, ε, limits, sometimes a set)."""
    n_nt = rng.randint(1, 5)
    nts = ["S"] + [f"N{i}" for i in range(1, n_nt)]
    terms = _pick_names(
        rng, ["a", "b", "c", "open", "close", "Stir fry", "ε-ish", "1"], rng.randint(1, 5), "t"
    )
    terminals: dict = {}
    for t in terms:
        r = rng.random()
        if r < 0.3:
            terminals[t] = {"description": f"the {t}", "max_uses": _clean_limit(rng)}
        elif r < 0.6:
            terminals[t] = f"the {t}"
        else:
            terminals[t] = {"phrase": t}
    productions: dict = {}
    for nt in nts:
        alts = []
        for _ in range(rng.randint(1, 4)):
            body = [rng.choice(terms + nts) for _ in range(rng.choice([0, 1, 1, 2, 3, 4]))]
            alts.append(body)
        if rng.random() < 0.7:  # make sure there is an exit
            alts.append([rng.choice(terms)])
        form = rng.randrange(4)
        if form == 0:
            productions[nt] = (
                " | ".join(" ".join(b) if b else "ε" for b in alts)
                if all(" " not in s for b in alts for s in b)
                else [list(b) for b in alts]
            )
        elif form == 1:
            productions[nt] = [list(b) for b in alts]
        elif form == 2 and all(" " not in s for b in alts for s in b):
            productions[nt] = [" ".join(b) if b else rng.choice(["ε", "eps"]) for b in alts]
        else:
            productions[nt] = [{"rhs": list(b), "step": f"do {nt}"} for b in alts]
    grammar: dict = {"start": "S", "terminals": terminals, "productions": productions}
    if rng.random() < 0.5:
        grammar["nonterminals"] = {nt: f"a {nt}" for nt in nts}
    if rng.random() < 0.25:
        elements = _pick_names(rng, ["onion", "salt", "garlic", "oil"], rng.randint(1, 4), "e")
        grammar["sets"] = {"A": {"phrase": "the seasoning", "elements": elements}}
        productions["S"] = (
            productions["S"] if isinstance(productions["S"], list) else [productions["S"]]
        )
        productions["S"].append(["A", rng.choice(terms)])
    doc = {
        "fllm": 1,
        "name": f"gen-grammar-{rng.randint(0, 999)}",
        "kind": "grammar",
        "grammar": grammar,
    }
    if rng.random() < bend:
        choice = rng.randrange(4)
        if choice == 0:
            productions["S"] = "S"  # no exit
        elif choice == 1:
            grammar["start"] = "Nope"
        elif choice == 2:
            productions.setdefault("N9", "undefined_sym")
        else:
            terminals[terms[0]] = {"max_uses": 0}
    return doc


NOTE_LANGUAGES = [
    "line", "integer", "yes-no", "number", "arithmetic", "regex:(a|b)+", "[0-9]{2}",
    'json-schema:{"type": "integer"}', 'gbnf:root ::= "x"+', "regex:(", "bogus(", "",
]  # fmt: skip


def _note(rng: random.Random) -> object:
    """A step's note: mostly well formed, sometimes broken in one way."""
    note = {"ask": rng.choice(["Say why.", "Give a number for {{ state }}.", "{{ nope }}"])}
    if rng.random() < 0.8:
        note["language"] = rng.choice(NOTE_LANGUAGES)
    if rng.random() < 0.4:
        note["max_tokens"] = rng.choice([1, 5, 60, 5000, -1, "many"])
    return rng.choice([note, note, note, {"language": "line"}, "just text", {"ask": 3}])


def automaton_domain(rng: random.Random, bend: float = 0.15) -> dict:
    """A random explicit automaton (sometimes with a stack, counters, a family)."""
    n = rng.randint(1, 6)
    states = [f"q{i}" for i in range(n)]
    alphabet = ["Z", "A", "B"][: rng.randint(1, 3)]
    counters = {}
    if rng.random() < 0.4:
        counters = {"c": rng.choice([1, 2, {"min": 0, "max": 2}, {"min": 1, "max": 1}])}
    transitions = []
    for _ in range(rng.randint(1, 10)):
        t: dict = {"from": rng.choice(states), "to": rng.choice(states)}
        if rng.random() < 0.85:
            t["input"] = rng.choice(["go", "stop", "left", "right", "wait 10:00-11:00", "ε"])
        if rng.random() < 0.4:
            t["pop"] = rng.choice([*alphabet, "∀", "*", "any"])
        if rng.random() < 0.4:
            t["push"] = rng.choice([*alphabet, "ε", " ".join(rng.choices(alphabet, k=2))])
        if counters and rng.random() < 0.3:
            t["count"] = "c"
        if rng.random() < 0.5:
            t["option"] = f"Do {t.get('input', 'nothing')}."
        if rng.random() < 0.3:
            t["step"] = rng.choice(["a step", {"text": "x", "activity": "y"}])
        if rng.random() < 0.15:
            t["note"] = _note(rng)
        transitions.append(t)
    auto: dict = {
        "start": states[0],
        "states": [
            s if rng.random() < 0.6 else {"name": s, "question": f"In {s}?"} for s in states
        ],
        "transitions": transitions,
    }
    acc = rng.sample(states, rng.randint(1, n))
    auto["accept"] = acc if rng.random() < 0.5 else {"states": acc, "stack_top": [alphabet[0]]}
    if rng.random() < 0.5:
        auto["stack"] = {"alphabet": alphabet, "initial": rng.choice(alphabet)}
    if counters:
        auto["counters"] = counters
    if rng.random() < 0.3:
        auto["order"] = "reverse"
    if rng.random() < 0.3:
        lo, hi = rng.randint(0, 5), rng.randint(0, 5)
        auto["states"].append({"for": {"k": {"from": lo, "to": hi}}, "name": "f{{ k }}"})
        auto["transitions"].append(
            {
                "for": {"k": {"from": lo, "to": hi}},
                "from": "f{{ k }}",
                "to": states[0],
                "input": "tick {{ k }}",
            }
        )
    doc = {
        "fllm": 1,
        "name": f"gen-auto-{rng.randint(0, 999)}",
        "kind": "automaton",
        "automaton": auto,
    }
    if rng.random() < bend:
        choice = rng.randrange(4)
        if choice == 0:
            transitions[0]["to"] = "undeclared"
        elif choice == 1:
            transitions[0]["pop"] = "Q"
        elif choice == 2:
            auto["transitions"].append(
                {
                    "for": {"k": "range(10**9)"},
                    "from": states[0],
                    "to": states[0],
                    "input": "{{ k }}",
                }
            )
        else:
            transitions[0]["count"] = "nocounter"
    return doc


def dump_yaml(doc: object) -> str:
    return yaml.safe_dump(doc, allow_unicode=True, sort_keys=False)


# --------------------------------------------------------------------------- plans


def derive(
    rng: random.Random,
    prods: dict[str, list[tuple[str, ...]]],
    start: str,
    max_len: int = 30,
    limits: dict[str, int | None] | None = None,
) -> list[str] | None:
    """A random word of a grammar (depth-bounded; None when no short word was found).

    With ``limits`` (terminal -> most uses), alternatives that would exceed a limit, counting
    the terminals already chosen, are avoided when another alternative exists.
    """
    limits = limits or {}
    used: dict[str, int] = {}
    word: list[str] = []
    stack = [start]
    steps = 0
    while stack:
        steps += 1
        if steps > 300 or len(word) > max_len:
            return None
        sym = stack.pop()
        if sym in prods:
            alts = prods[sym]
            if not alts:
                return None

            def fits(body: tuple[str, ...]) -> bool:
                need: dict[str, int] = {}
                for s in body:
                    if s in limits:
                        need[s] = need.get(s, 0) + 1
                return all(
                    limits[s] is None or used.get(s, 0) + n <= limits[s]  # type: ignore[operator]
                    for s, n in need.items()
                )

            alts = [a for a in alts if fits(a)] or alts
            if len(word) + len(stack) > max_len // 2 and rng.random() < 0.8:
                body = min(alts, key=len)
            else:
                body = rng.choice(alts)
            for s in body:
                if s in limits:
                    used[s] = used.get(s, 0) + 1
            stack.extend(reversed(body))
        else:
            word.append(sym)
    return word


def tool_plan(
    rng: random.Random, doc: dict, inputs: list[tuple[str, str]], output: str
) -> list[str] | None:
    """A random prefix-order word of a tool domain's task grammar (limits not enforced)."""
    prods: dict[str, list[tuple[str, ...]]] = {}
    default = (
        (doc.get("limits") or {}).get("max_uses", 1) if isinstance(doc.get("limits"), dict) else 1
    )
    limits: dict[str, int | None] = {}
    for t in doc.get("tools") or []:
        if isinstance(t, dict) and isinstance(t.get("inputs"), list):
            prods.setdefault(str(t.get("output")), []).append(
                (str(t.get("name")), *map(str, t["inputs"]))
            )
            uses = t.get("max_uses", default)
            limits[str(t.get("name"))] = uses if isinstance(uses, int) or uses is None else 1
    for name, m in inputs:
        prods.setdefault(m, []).append((f"input:{name}",))
    return derive(rng, prods, output, max_len=rng.choice([3, 6, 12]), limits=limits)


def perturb_word(rng: random.Random, word: list[str], alphabet: list[str]) -> list[str]:
    """Small edits to a word: the near misses a verifier must still reject."""
    w = list(word)
    for _ in range(rng.randint(1, 3)):
        op = rng.randrange(6)
        if op == 0 and w:
            del w[rng.randrange(len(w))]
        elif op == 1 and w:
            i = rng.randrange(len(w))
            w.insert(i, w[i])
        elif op == 2 and len(w) > 1:
            i, j = rng.randrange(len(w)), rng.randrange(len(w))
            w[i], w[j] = w[j], w[i]
        elif op == 3 and alphabet:
            w.insert(rng.randrange(len(w) + 1), rng.choice(alphabet))
        elif op == 4 and w and alphabet:
            w[rng.randrange(len(w))] = rng.choice(alphabet)
        elif op == 5:
            w = w + w
    return w


def plan_text(rng: random.Random, word: list[str]) -> str:
    """One terminal a line, with the decorations the spec allows (comments, commas, blanks)."""
    if not word:
        return rng.choice(["ε\n", "eps\n", "ε"])
    lines = []
    for s in word:
        r = rng.random()
        if r < 0.1:
            lines.append(f"{s},")
        elif r < 0.2:
            lines.append(f"{s}  # note")
        elif r < 0.25:
            lines.append("")
        else:
            lines.append(s)
    if rng.random() < 0.2:
        lines.insert(0, "# a plan")
    return "\n".join(lines) + ("\n" if rng.random() < 0.8 else "")


def plan_json(
    rng: random.Random, word: list[str], inputs: list[tuple[str, str]] | None, output: str | None
) -> str:
    doc: dict = {"fllm_plan": 1, "word": word}
    if inputs is not None:
        doc["inputs"] = dict(inputs)
    if output is not None:
        doc["output"] = output
    if rng.random() < 0.3:
        doc["task"] = "a task"
    text = json.dumps(doc, ensure_ascii=rng.random() < 0.5, indent=rng.choice([None, 2]))
    return ("\ufeff" + text) if rng.random() < 0.1 else text


# --------------------------------------------------------------------------- agents


STATE_POOL = [
    "Thought",
    "Action",
    "Action-Input",
    "Observation",
    "Final-Thought",
    "Answer",
    "User",
    "Chat-Bot",
    "Evaluator",
    "Reflection",
    "Finish",
    "Plan",
]


def ltl_formula(rng: random.Random, states: list[str], depth: int = 0) -> list:
    """A random formula of the fragment (nested lists)."""
    if depth > 3 or rng.random() < 0.3:
        return rng.choice(states)  # type: ignore[return-value]
    op = rng.choice(["next", "next", "until", "always", "implies", "->"])
    if op == "next":
        return ["next", *[ltl_formula(rng, states, depth + 1) for _ in range(rng.randint(1, 4))]]
    if op == "always":
        return ["always", ltl_formula(rng, states, depth + 1)]
    return [op, ltl_formula(rng, states, depth + 1), ltl_formula(rng, states, depth + 1)]


def _sexp(f: object) -> str:
    if isinstance(f, list):
        return "(" + " ".join(_sexp(x) for x in f) + ")"
    return str(f)


def agent_states(rng: random.Random) -> list[str]:
    return rng.sample(STATE_POOL, rng.randint(1, 6))


def agent_sexp(rng: random.Random, states: list[str]) -> str:
    lines = [f"(define gen-agent-{rng.randint(0, 99)}", "  (:states"]
    for s in states:
        extra = ""
        r = rng.random()
        if r < 0.2:
            extra = " (:choices :tools)"
        elif r < 0.3:
            extra = ' (:choices "YES" "NO")'
        elif r < 0.45:
            extra = " (:flags :env-input)"
        tag = s.replace("-", " ") + ":"
        lines.append(f'    ({s} (:text "{tag}"){extra})')
    lines.append("  )")
    lines.append(f"  (:behavior {_sexp(ltl_formula(rng, states))})")
    if rng.random() < 0.2:
        lines.append(f"  (:start {rng.choice(states)}) (:final {rng.choice(states)})")
    lines.append(")")
    return "\n".join(lines) + "\n"


def agent_yaml(rng: random.Random, states: list[str]) -> str:
    st: dict = {}
    for s in states:
        d: dict = {"text": s.replace("-", " ") + ":"}
        r = rng.random()
        if r < 0.2:
            d["choices"] = "tools"
        elif r < 0.3:
            d["choices"] = ["SUPPORTS", "REFUTES"]
        elif r < 0.45:
            d["env-input"] = True
        st[s] = d
    f = ltl_formula(rng, states)
    behavior: object = f if rng.random() < 0.5 else _sexp(f)
    return dump_yaml(
        {"agent": {"name": f"gen-agent-{rng.randint(0, 99)}", "states": st, "behavior": behavior}}
    )


def transcript(rng: random.Random, states: list[str], examples: int = 2) -> str:
    """Examples of tagged lines, some following a plausible order, some not."""
    out = []
    for _ in range(examples):
        out.append(rng.choice(["Question: what is 2+2?", "Claim: the sky is green.", "Question:"]))
        seq = list(states) if rng.random() < 0.5 else rng.choices(states, k=rng.randint(0, 8))
        for s in seq:
            tag = s.replace("-", " ") + ":"
            content = rng.choice(
                [
                    "",
                    "calculator",
                    "2+2",
                    "4",
                    "SUPPORTS",
                    "some text\nmore text",
                    "Thought: inline",
                ]
            )
            out.append(f"{tag} {content}".rstrip())
    return "\n".join(out) + "\n"


# --------------------------------------------------------------------------- problems and args


def problem(rng: random.Random) -> str:
    kind = rng.choice(["multi-constraint", "multi-step", "other"])
    p: dict = {
        "name": f"gen-{rng.randint(0, 99)}",
        "kind": kind,
        "description": "Minimise the cost.",
    }
    if rng.random() < 0.7:
        p["data"] = rng.choice(["x = 1\n", "supply = {'a': 3}\n", "import os\n", ""])
    if kind == "multi-constraint" or rng.random() < 0.3:
        p["objective"] = rng.choice(
            [
                {"variable": "total_cost", "sense": "minimize"},
                {"variable": "v", "sense": "sideways"},
                "cost",
            ]
        )
        p["output_format"] = rng.choice(['{"cost": 0}', "not json", "{}", '{"a": [1, 2]}'])
    if kind == "multi-step" or rng.random() < 0.3:
        p["domain"] = rng.choice(
            ["data/blocksworld_domain.pddl", "data/missing.pddl", "../../../etc/passwd"]
        )
        p["horizon"] = rng.choice([{"max": 16}, {"max": 0}, {"max": -3}, {"max": 10**9}, 5])
        p["instance"] = {
            "goal_marker": "your goal is",
            "init": [{"pattern": "(.*) is clear", "atom": "(clear {0})"}],
            "goal": [],
        }
    if rng.random() < 0.3:
        p["helpers"] = rng.choice(["helpers/planning.py", "helpers/nothere.py"])
    if rng.random() < 0.3:
        p["apis"] = [{"signature": "f(x)", "description": "does f"}]
    return dump_yaml({"problem": p})

"""Case builders: one fuzz case of a given input kind, from a seeded ``random.Random``.

A case is either *generated* (by :mod:`fuzz.generate`) or a *mutated* seed (by
:mod:`fuzz.mutate`), and is then put through one of the commands that read that kind of input.
"""

from __future__ import annotations

import contextlib
import json
import random

import yaml

from fuzz import checker, generate, mutate
from fuzz.oracle import Case

DOMAIN_PROMPTS = {"prompts": "domains/prompts"}
PROBLEM_LINKS = {"data": "domains/problems/data", "helpers": "domains/problems/helpers"}
RISK_VARS = ["--var", "seller=Shareholders of X", "--var", "buyer=Y"]


class Corpus:
    """File seeds by kind and the random-model plans (see :mod:`fuzz.corpus`)."""

    def __init__(self, seeds: dict[str, list[tuple[str, str]]], plans: list[dict]):
        self.seeds = seeds
        self.plans = plans


def _model(rng: random.Random) -> str:
    return f"random:{rng.randrange(10**6)}"


def _safe_doc(text: str) -> dict | None:
    if mutate.has_alias(text) or len(text) > 500_000:
        return None
    try:
        doc = yaml.safe_load(text)
    except Exception:
        return None
    return doc if isinstance(doc, dict) else None


def _tool_task(rng: random.Random, doc: dict | None) -> tuple[list[str], str]:
    """Pick --input specs and an --output that the domain probably accepts."""
    mods: list[str] = ["image", "text"]
    t_in: list[str] = []
    t_out: list[str] = []
    if doc:
        m = doc.get("modalities")
        if isinstance(m, (dict, list)):
            mods = [str(k) for k in m] or mods
        task = doc.get("task")
        if isinstance(task, dict):
            t_in = (
                [str(x) for x in task.get("inputs") or [] if isinstance(x, str)]
                if isinstance(task.get("inputs"), list)
                else []
            )
            t_out = (
                [str(x) for x in task.get("outputs") or [] if isinstance(x, str)]
                if isinstance(task.get("outputs"), list)
                else []
            )
    ins_pool = t_in or mods
    inputs = [rng.choice(ins_pool) for _ in range(rng.choice([1, 1, 2, 3]))]
    if rng.random() < 0.2:
        inputs = [f"q{i}={m}" for i, m in enumerate(inputs)]
    output = rng.choice(t_out or mods)
    if rng.random() < 0.05:
        output = rng.choice(["nope", "", "image text"])
    return inputs, output


def _io_argv(inputs: list[str], output: str) -> list[str]:
    argv: list[str] = []
    for i in inputs:
        argv += ["-i", i]
    return [*argv, "--output", output]


def _plan_word(
    rng: random.Random,
    kind: str,
    doc: dict | None,
    text: str,
    inputs: list[str],
    output: str,
    corpus: Corpus,
) -> list[str]:
    word: list[str] | None = None
    alphabet: list[str] = []
    try:
        if kind == "tools" and doc:
            pairs = checker.parse_inputs(inputs)
            word = generate.tool_plan(rng, doc, pairs, output)
            alphabet = [str(t.get("name")) for t in doc.get("tools") or [] if isinstance(t, dict)]
            alphabet += [f"input:{n}" for n, _ in pairs]
        elif kind == "grammar" and doc:
            g = checker.grammar_grammar(doc)
            word = generate.derive(
                rng, g.productions, g.start, max_len=rng.choice([4, 10, 25]), limits=g.limits
            )
            alphabet = sorted(g.terminals)
        elif kind == "automaton" and doc:
            auto = doc.get("automaton") or {}
            alphabet = [
                str(t.get("input"))
                for t in auto.get("transitions") or []
                if isinstance(t, dict) and t.get("input")
            ]
    except (checker.Unsupported, ValueError, TypeError, AttributeError, KeyError, RecursionError):
        pass
    if word is None:
        same = [
            p for p in corpus.plans if p["domain"].endswith(f"{(doc or {}).get('name', '')}.yaml")
        ]
        if same:
            word = json.loads(rng.choice(same)["json"])["word"]
        elif alphabet:
            word = rng.choices(alphabet, k=rng.randint(0, 8))
        else:
            word = ["a", "b"]
    if rng.random() < 0.5:
        word = generate.perturb_word(rng, word, alphabet)
    return word


def domain_case(rng: random.Random, kind: str, corpus: Corpus) -> Case:
    """A domain of ``kind`` (tools, grammar or automaton), generated or mutated, run once."""
    label = f"domain-{kind}"
    seeds = corpus.seeds.get(label) or []
    mutated = rng.random() < 0.55
    gen = {
        "tools": generate.tool_domain,
        "grammar": generate.grammar_domain,
        "automaton": generate.automaton_domain,
    }[kind]
    if mutated and seeds and rng.random() < 0.6:
        _, base = rng.choice(seeds)
    else:
        base = generate.dump_yaml(gen(rng))
    text = mutate.mutate(rng, base, "yaml") if mutated else base
    doc = _safe_doc(text)
    files = {"d.yaml": text}
    extra = RISK_VARS if "seller" in text else []
    inputs, output = _tool_task(rng, doc)
    io = _io_argv(inputs, output) if kind == "tools" else []
    cmd = rng.choices(["validate", "render-pda", "verify", "plan"], weights=[3, 2, 3, 2])[0]
    if cmd == "validate":
        argv = ["validate", "d.yaml", *rng.choice([[], ["-f", "json"], ["-q"]])]
        return Case(label, argv, files, links=dict(DOMAIN_PROMPTS))
    if cmd == "render-pda":
        fmt = rng.choice(["rich", "dot", "mermaid", "json", "table"])
        io_r = io if rng.random() < 0.5 else []
        return Case(
            label,
            ["render-pda", "d.yaml", "-f", fmt, *io_r, *extra],
            files,
            links=dict(DOMAIN_PROMPTS),
        )
    if cmd == "verify":
        word = _plan_word(rng, kind, doc, text, inputs, output, corpus)
        as_json = rng.random() < 0.4
        if as_json:
            pairs = None
            with contextlib.suppress(ValueError):
                pairs = checker.parse_inputs(inputs) if kind == "tools" else None
            files["plan.json"] = generate.plan_json(
                rng, word, pairs, output if kind == "tools" else None
            )
            plan_name, argv_io = "plan.json", ([] if pairs is not None else io)
        else:
            files["plan.txt"] = generate.plan_text(rng, word)
            plan_name, argv_io = "plan.txt", io
        argv = [
            "verify",
            "d.yaml",
            plan_name,
            *argv_io,
            *extra,
            "-f",
            rng.choice(["json", "text", "rich"]),
        ]
        check = {
            "domain": "d.yaml",
            "plan": plan_name,
            "inputs": (inputs if argv_io else None) if kind == "tools" else None,
            "output": (output if argv_io else None) if kind == "tools" else None,
            "compare_rejects": not mutated,
        }
        return Case(label, argv, files, links=dict(DOMAIN_PROMPTS), check=check)
    fmt = rng.choice(["json", "json", "text", "yaml", "mermaid", "dot", "rich"])
    argv = [
        "plan",
        "d.yaml",
        rng.choice(["a task", "", "x" * 2000, "ünï ✓"]),
        *io,
        *extra,
        "--model",
        _model(rng),
        "-f",
        fmt,
        "-o",
        "out.json",
        *rng.choice(
            [
                [],
                ["--max-moves", str(rng.choice([1, 5, 50]))],
                ["--max-backtracks", "0"],
                ["--max-llm-calls", "0"],
            ]
        ),
    ]
    # "-o" writes in the "-f" format; only a JSON plan is cross-checked.
    check = {
        "domain": "d.yaml",
        "plan": "out.json",
        "inputs": None,
        "output": None,
        "compare_rejects": False,
    }
    return Case(
        label, argv, files, links=dict(DOMAIN_PROMPTS), check=check if fmt == "json" else None
    )


def agent_case(rng: random.Random, syntax: str, corpus: Corpus) -> Case:
    label = f"agent-{syntax}"
    seeds = corpus.seeds.get(label) or []
    states = generate.agent_states(rng)
    mutated = rng.random() < 0.55
    if mutated and seeds and rng.random() < 0.6:
        _, base = rng.choice(seeds)
    else:
        base = (
            generate.agent_sexp(rng, states)
            if syntax == "sexp"
            else generate.agent_yaml(rng, states)
        )
    text = mutate.mutate(rng, base, "sexp" if syntax == "sexp" else "yaml") if mutated else base
    name = "a.sexp" if syntax == "sexp" else "a.yaml"
    files = {name: text}
    cmd = rng.choices(["validate", "render-pda", "check-trace", "agent"], weights=[3, 2, 3, 2])[0]
    if cmd == "validate":
        return Case(label, ["validate", name], files)
    if cmd == "render-pda":
        return Case(
            label, ["render-pda", name, "-f", rng.choice(["rich", "dot", "mermaid", "json"])], files
        )
    if cmd == "check-trace":
        if corpus.seeds.get("transcript") and rng.random() < 0.3:
            files["t.txt"] = rng.choice(corpus.seeds["transcript"])[1]
        else:
            files["t.txt"] = generate.transcript(rng, states, rng.randint(1, 3))
        argv = [
            "check-trace",
            name,
            "t.txt",
            *rng.choice([[], ["--split", ""], ["--tools", "calculator,search"], ["-f", "json"]]),
        ]
        return Case(label, argv, files)
    argv = [
        "agent",
        name,
        rng.choice(["What is 2+2?", "", "x" * 3000]),
        "--model",
        _model(rng),
        "--max-states",
        str(rng.choice([1, 2, 5, 20, 50])),
        "--max-loops",
        str(rng.choice([1, 2, 3])),
        "-f",
        rng.choice(["rich", "json", "transcript"]),
        "--tools",
        rng.choice(["calculator", "calculator,search,lookup", ""]),
    ]
    return Case(label, argv, files, stdin="hello\nsecond line\n/exit\n")


def problem_case(rng: random.Random, corpus: Corpus) -> Case:
    seeds = corpus.seeds.get("problem") or []
    mutated = rng.random() < 0.6
    if mutated and seeds and rng.random() < 0.7:
        _, base = rng.choice(seeds)
    else:
        base = generate.problem(rng)
    text = mutate.mutate(rng, base, "yaml") if mutated else base
    files = {"p.yaml": text}
    if rng.random() < 0.6:
        return Case("problem", ["validate", "p.yaml"], files, links=dict(PROBLEM_LINKS))
    query = rng.choice(
        [
            "What if demand rises by 10%?",
            "",
            "your goal is to have a on b",
            "(define (problem p) (:domain blocksworld))",
            "As initial conditions I have that, the red block is clear. "
            "My goal is to have that the red block is on the table.",
        ]
    )
    argv = [
        "solve",
        "p.yaml",
        query,
        "--model",
        _model(rng),
        "--max-rounds",
        "1",
        "--max-attempts",
        "1",
        "--code-timeout",
        "5",
        "--max-seconds",
        "12",
        "-f",
        rng.choice(["rich", "json"]),
    ]
    return Case("problem", argv, files, links=dict(PROBLEM_LINKS))


def plan_case(rng: random.Random, fmt: str, corpus: Corpus) -> Case:
    """A plan of a shipped domain, edited (word-level) or mutated (text/JSON level), verified."""
    label = f"plan-{fmt}"
    if not corpus.plans:
        return Case(label, ["verify", "missing.yaml", "missing.txt"])
    p = rng.choice(corpus.plans)
    files = {"d.yaml": corpus_text(p["domain"])}
    word = json.loads(p["json"])["word"]
    terminals = sorted(set(word))
    for other in corpus.plans:
        if other["domain"] == p["domain"]:
            terminals += json.loads(other["json"])["word"]
    word_edit = rng.random() < 0.5
    if word_edit:
        word = generate.perturb_word(rng, word, sorted(set(terminals)))
    if fmt == "text":
        body = generate.plan_text(rng, word) if word_edit else p["text"]
        if not word_edit:
            body = mutate.mutate(rng, body, "text")
        files["plan.txt"] = body
        io: list[str] = []
        if p["inputs"]:
            io = _io_argv([f"{k}={v}" for k, v in p["inputs"].items()], p["output"])
        argv = ["verify", "d.yaml", "plan.txt", *io]
        inputs = [f"{k}={v}" for k, v in p["inputs"].items()] if p["inputs"] else None
        check = {
            "domain": "d.yaml",
            "plan": "plan.txt",
            "inputs": inputs,
            "output": p["output"] if p["inputs"] else None,
            "compare_rejects": word_edit,
        }
    else:
        doc = json.loads(p["json"])
        doc["word"] = word
        body = json.dumps(doc, ensure_ascii=False)
        if not word_edit:
            body = mutate.mutate(rng, body, "json")
        files["plan.json"] = body
        argv = ["verify", "d.yaml", "plan.json"]
        check = {
            "domain": "d.yaml",
            "plan": "plan.json",
            "inputs": None,
            "output": None,
            "compare_rejects": word_edit,
        }
    if "seller" in files["d.yaml"]:
        argv += RISK_VARS
    argv += ["-f", rng.choice(["json", "text", "rich"])]
    if rng.random() < 0.1:  # through stdin
        name = "plan.txt" if fmt == "text" else "plan.json"
        argv[2] = "-"
        return Case(label, argv, files, stdin=files[name], links=dict(DOMAIN_PROMPTS))
    return Case(label, argv, files, links=dict(DOMAIN_PROMPTS), check=check)


_REPO_TEXT: dict[str, str] = {}


def corpus_text(rel: str) -> str:
    from fuzz.oracle import REPO

    if rel not in _REPO_TEXT:
        _REPO_TEXT[rel] = (REPO / rel).read_text(encoding="utf-8")
    return _REPO_TEXT[rel]


def transcript_case(rng: random.Random, corpus: Corpus) -> Case:
    seeds = corpus.seeds.get("transcript") or [("t", "Question: q\nThought: x\n")]
    _spec_name, spec = rng.choice(corpus.seeds.get("agent-sexp") or [("", "")])
    _, base = rng.choice(seeds)
    if rng.random() < 0.3:
        base = generate.transcript(rng, generate.STATE_POOL[:6], rng.randint(1, 4))
    text = mutate.mutate(rng, base, "text")
    files = {"spec.sexp": spec, "t.txt": text}
    opts = rng.choice(
        [
            [],
            ["--split", ""],
            ["--split", "^Q"],
            ["--split", "("],
            ["--split", "(a*)*$"],
            ["--tools", "calculator"],
            ["--tools", ""],
            ["-f", "json"],
        ]
    )
    if rng.random() < 0.15:
        return Case("transcript", ["check-trace", "spec.sexp", "-", *opts], files, stdin=text)
    return Case("transcript", ["check-trace", "spec.sexp", "t.txt", *opts], files)


COMMANDS = [
    "validate",
    "render-pda",
    "verify",
    "plan",
    "agent",
    "check-trace",
    "solve",
    "solve-bench",
    "bench",
]
OPTIONS = [
    "-i",
    "--input",
    "--output",
    "-f",
    "--format",
    "-o",
    "--out",
    "-q",
    "--quiet",
    "--var",
    "-m",
    "--model",
    "--max-moves",
    "--max-steps",
    "--max-llm-calls",
    "--max-backtracks",
    "--max-cost",
    "--max-seconds",
    "--max-states",
    "--max-loops",
    "--max-tokens",
    "--max-stop",
    "--shots",
    "--examples",
    "--tools",
    "--split",
    "--trace",
    "--temperature",
    "--timeout",
    "--retries",
    "--no-cache",
    "--limit",
    "--max-horizon",
    "--max-attempts",
    "--max-rounds",
    "--code-timeout",
    "--memory-mb",
    "--json",
    "--bogus",
    "--help",
    "-h",
    "--",
    "-",
    "--inpt",
    "--format=json",
    "--max-moves=0",
]
VALUES = [
    "d.yaml",
    "a.sexp",
    "plan.txt",
    "plan.json",
    "p.yaml",
    "t.txt",
    "missing.yaml",
    "",
    " ",
    "-",
    "0",
    "-1",
    "1",
    "10",
    "1e309",
    "nan",
    "inf",
    "99999999999999999999",
    "json",
    "text",
    "rich",
    "dot",
    "x=y",
    "=",
    "image",
    "text",
    "q=text",
    "random:1",
    "random:",
    "random:-5",
    "scripted:answers.txt",
    "scripted:missing.txt",
    "replay:missing.jsonl",
    "replay:t.txt",
    "ü",
    "\x7f",
    "a" * 5000,
    "/",
    ".",
    "out/../o.json",
    "calculator",
    "search,lookup,bogus",
    "(",
    "[",
    "seller=S",
    "buyer=B",
]


def cli_case(rng: random.Random, corpus: Corpus) -> Case:
    """Random command lines over a folder with a few real files."""
    files = {
        "d.yaml": corpus_text("domains/openagi.yaml"),
        "a.sexp": corpus_text("domains/agents/react.sexp"),
        "plan.txt": "Image Captioning\ninput:image\n",
        "plan.json": json.dumps(
            {
                "word": ["Image Captioning", "input:image"],
                "inputs": {"image": "image"},
                "output": "text",
            }
        ),
        "t.txt": corpus_text("prompts/react_examples.txt"),
        "answers.txt": "1\n2\nfoo\n",
    }
    cmd = rng.choice([*COMMANDS, "", "Verify", "help", "--help", "--version", "render_pda"])
    argv = [cmd] if cmd else []
    for _ in range(rng.randint(0, 8)):
        r = rng.random()
        if r < 0.5:
            argv.append(rng.choice(OPTIONS))
        argv.append(rng.choice(VALUES))
    model_cmds = {"plan", "agent", "solve", "solve-bench", "bench"}
    if cmd in model_cmds and "--model" not in argv and "-m" not in argv:
        argv += ["--model", _model(rng)]
    # Keep model strings to the offline back ends.
    for i, a in enumerate(argv[:-1]):
        if a in ("-m", "--model") and not argv[i + 1].startswith(("random", "scripted", "replay")):
            argv[i + 1] = _model(rng)
    if cmd in {"solve", "solve-bench"}:
        argv += ["--max-seconds", "12", "--code-timeout", "5"]
    return Case(
        "cli-args", argv, files, stdin="hello\n/exit\n", links={"problems": "domains/problems"}
    )


def build(kind: str, rng: random.Random, corpus: Corpus) -> Case:
    if kind == "domain-tools":
        return domain_case(rng, "tools", corpus)
    if kind == "domain-grammar":
        return domain_case(rng, "grammar", corpus)
    if kind == "domain-automaton":
        return domain_case(rng, "automaton", corpus)
    if kind == "agent-sexp":
        return agent_case(rng, "sexp", corpus)
    if kind == "agent-yaml":
        return agent_case(rng, "yaml", corpus)
    if kind == "problem":
        return problem_case(rng, corpus)
    if kind == "plan-text":
        return plan_case(rng, "text", corpus)
    if kind == "plan-json":
        return plan_case(rng, "json", corpus)
    if kind == "transcript":
        return transcript_case(rng, corpus)
    if kind == "cli-args":
        return cli_case(rng, corpus)
    raise ValueError(f"unknown kind {kind!r}")

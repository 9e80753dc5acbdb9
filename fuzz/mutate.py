"""Mutators: small, mostly-invalid edits of an input, at the byte, line and structure level.

``mutate(rng, text, fmt)`` applies 1-3 random mutations chosen for the format (``yaml``,
``sexp``, ``json``, ``text``) and returns the new text. Structural mutators parse the input
(PyYAML, ``json``, a tiny s-expression tokenizer), edit the tree and print it again; when the
input does not parse they fall back to line and byte mutations.
"""

from __future__ import annotations

import json
import random
import re

import yaml

INTERESTING = [
    0,
    -1,
    1,
    2,
    -(2**63),
    2**63,
    10**9,
    10**100,
    1.5,
    -0.0,
    float("inf"),
    True,
    False,
    None,
    "",
    "0",
    "1e309",
    "NaN",
    "ε",
    "∀",
    "{{ 7*7 }}",
    "{% for x in range(10**9) %}{% endfor %}",
    "x" * 5000,
    "\x00",
    "\u202e",
    "\ufeff",
    "a\nb",
    "#",
    "input:image",
    "[",
    "{",
    "*",
    "|",
]
UNICODE = [
    "\x00",
    "\x07",
    "\x1b[31m",
    "\u202e",
    "\u200b",
    "\ufeff",
    "é",
    "ε",
    "𝔘",
    "\ud7ff",
    "\r",
    "\t",
    "\x85",
    "\u2028",
]


def _rand_scalar(rng: random.Random) -> object:
    v = rng.choice(INTERESTING)
    if isinstance(v, str) and rng.random() < 0.2:
        v = v * rng.randint(2, 50)
    return v


# --------------------------------------------------------------------------- bytes and lines


def byte_mutation(rng: random.Random, text: str) -> str:
    if not text:
        return rng.choice(UNICODE)
    i = rng.randrange(len(text))
    op = rng.randrange(6)
    if op == 0:
        return text[:i] + text[i + 1 :]
    if op == 1:
        return text[:i] + rng.choice(UNICODE) + text[i:]
    if op == 2:
        return text[:i]  # truncation
    if op == 3:
        return text[:i] + chr(rng.randrange(32, 127)) + text[i + 1 :]
    if op == 4:
        return "\ufeff" + text
    return text[:i] + text[i : i + rng.randint(1, 40)] * rng.randint(2, 20) + text[i:]


def line_mutation(rng: random.Random, text: str) -> str:
    lines = text.splitlines(keepends=True)
    if not lines:
        return text + "\n"
    i = rng.randrange(len(lines))
    op = rng.randrange(8)
    if op == 0:
        del lines[i]
    elif op == 1:
        lines.insert(i, lines[i])
    elif op == 2:
        j = rng.randrange(len(lines))
        lines[i], lines[j] = lines[j], lines[i]
    elif op == 3:  # indent or dedent
        lines[i] = (
            (" " * rng.choice([1, 2, 4]) + lines[i]) if rng.random() < 0.5 else lines[i].lstrip()
        )
    elif op == 4:  # numbers to something else
        lines[i] = re.sub(r"-?\d+", lambda _m: str(_rand_scalar(rng)), lines[i])
    elif op == 5:
        lines.insert(i, lines[i].rstrip("\n") * rng.randint(2, 30) + "\n")
    elif op == 6:
        lines = lines[: i + 1]
    else:
        lines[i] = lines[i].replace(":", rng.choice(["", "::", ": :", ":\t"]), 1)
    return "".join(lines)


# --------------------------------------------------------------------------- YAML / JSON trees


def _paths(node: object, path: tuple = ()) -> list[tuple]:
    out = [path]
    if isinstance(node, dict):
        for k, v in node.items():
            out += _paths(v, (*path, k))
    elif isinstance(node, list):
        for i, v in enumerate(node):
            out += _paths(v, (*path, i))
    return out


def _get(node: object, path: tuple) -> object:
    for p in path:
        node = node[p]  # type: ignore[index]
    return node


def _set(root: object, path: tuple, value: object) -> object:
    if not path:
        return value
    parent = _get(root, path[:-1])
    parent[path[-1]] = value  # type: ignore[index]
    return root


def tree_mutation(rng: random.Random, doc: object) -> object:
    """One edit of a parsed YAML/JSON tree."""
    paths = _paths(doc)
    path = rng.choice(paths)
    node = _get(doc, path)
    op = rng.randrange(11)
    if op == 0:  # replace with an interesting scalar
        return _set(doc, path, _rand_scalar(rng))
    if op == 1:  # type swap
        swaps: list[object] = [[node], {"x": node}, str(node)[:100], None, [], {}]
        return _set(doc, path, rng.choice(swaps))
    if op == 2 and path:  # delete
        parent = _get(doc, path[:-1])
        del parent[path[-1]]  # type: ignore[attr-defined]
        return doc
    if op == 3:  # deep nesting
        deep: object = node
        for _ in range(rng.choice([10, 100, 500])):
            deep = [deep] if rng.random() < 0.5 else {"k": deep}
        return _set(doc, path, deep)
    if op == 4 and isinstance(node, list) and node:  # duplicate an item
        node.insert(rng.randrange(len(node) + 1), rng.choice(node))
        return doc
    if op == 5 and isinstance(node, list):  # many items
        node.extend([node[0] if node else _rand_scalar(rng)] * rng.choice([50, 500, 3000]))
        return doc
    if op == 6 and isinstance(node, dict) and node:  # rename a key
        k = rng.choice(list(node))
        new = rng.choice([str(k).upper(), str(k) + "s", str(k)[:-1], 1, None, True, "x" * 300])
        node[new] = node.pop(k)
        return doc
    if op == 7 and isinstance(node, dict):  # unknown key
        node[rng.choice(["extra", "kind", "fllm", "max_uses", "tools", "grammar"])] = _rand_scalar(
            rng
        )
        return doc
    if op == 8 and isinstance(node, str):  # edit a string
        return _set(
            doc,
            path,
            rng.choice(
                [
                    node * rng.randint(2, 200),
                    node + rng.choice(UNICODE),
                    node[: len(node) // 2],
                    "{{ " + node + " }}",
                ]
            ),
        )
    if op == 9 and len(paths) > 2:  # copy a subtree elsewhere
        other = _get(doc, rng.choice(paths))
        try:
            return _set(doc, path, json.loads(json.dumps(other, default=str)))
        except (TypeError, ValueError, RecursionError):
            return doc
    if op == 10 and isinstance(node, (int, float)) and not isinstance(node, bool):
        return _set(
            doc,
            path,
            rng.choice([0, -node, node * 10**12, float(node) + 0.5, str(node), bool(node)]),
        )
    return _set(doc, path, _rand_scalar(rng))


_ALIAS = re.compile(r"(?:^|[\s,\[{:-])\*[^\s,\]}]")


def has_alias(text: str) -> bool:
    """Whether a YAML text may use aliases (walking such a tree can explode: billion laughs)."""
    return bool(_ALIAS.search(text))


def yaml_structure(rng: random.Random, text: str) -> str:
    if has_alias(text) or len(text) > 200_000:
        return line_mutation(rng, text)
    try:
        doc = yaml.safe_load(text)
    except Exception:
        return line_mutation(rng, text)
    try:
        for _ in range(rng.randint(1, 2)):
            doc = tree_mutation(rng, doc)
    except RecursionError:
        return line_mutation(rng, text)
    try:
        return yaml.safe_dump(
            doc, allow_unicode=rng.random() < 0.7, sort_keys=False, width=rng.choice([80, 10**6])
        )
    except Exception:
        return line_mutation(rng, text)


def yaml_aliases(rng: random.Random, text: str) -> str:
    """Anchors, aliases and merge keys: the billion-laughs shape, or a merge into a mapping."""
    if rng.random() < 0.5:
        n = rng.choice([3, 6, 9])
        lines = ['a0: &a0 ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]']
        for i in range(1, n):
            lines.append(f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 9) + "]")
        return text + "\n" + "\n".join(lines) + "\n"
    return "base: &base {name: X, inputs: [image], output: image}\n" + text.replace(
        "- name:", "- <<: *base\n  name:", 1
    )


def json_structure(rng: random.Random, text: str) -> str:
    body = text.lstrip("\ufeff")
    try:
        doc = json.loads(body)
    except ValueError:
        return line_mutation(rng, text)
    try:
        for _ in range(rng.randint(1, 2)):
            doc = tree_mutation(rng, doc)
        return json.dumps(doc, ensure_ascii=rng.random() < 0.5, allow_nan=True)
    except (TypeError, ValueError, RecursionError):
        return text


# --------------------------------------------------------------------------- s-expressions

_TOKEN = re.compile(r'"(?:[^"\\]|\\.)*"|;[^\n]*|[()]|[^\s()";]+|\s+|.')


def sexp_structure(rng: random.Random, text: str) -> str:
    tokens = _TOKEN.findall(text)
    if not tokens:
        return "(" * rng.randint(1, 5000)
    op = rng.randrange(9)
    i = rng.randrange(len(tokens))
    if op == 0:  # drop a parenthesis
        parens = [k for k, t in enumerate(tokens) if t in "()"]
        if parens:
            del tokens[rng.choice(parens)]
    elif op == 1:  # stray parenthesis
        tokens.insert(i, rng.choice(["(", ")", ")", "()"]))
    elif op == 2:  # deep nesting
        depth = rng.choice([50, 1000, 5000, 50000])
        tokens.insert(i, "(" * depth + "Thought" + ")" * depth)
    elif op == 3:  # swap two atoms
        atoms = [k for k, t in enumerate(tokens) if t.strip() and t not in "()"]
        if len(atoms) > 1:
            a, b = rng.sample(atoms, 2)
            tokens[a], tokens[b] = tokens[b], tokens[a]
    elif op == 4:  # operator misspelling or unknown keyword
        tokens.insert(
            i,
            rng.choice(
                [
                    " nxet ",
                    " until ",
                    " :flags ",
                    " :choices ",
                    " :bogus ",
                    " -> ",
                    " always ",
                    " implies ",
                ]
            ),
        )
    elif op == 5:  # unterminated string
        tokens.insert(i, '"' + "x" * rng.randint(0, 100))
    elif op == 6:  # duplicate a span
        j = min(len(tokens), i + rng.randint(1, 30))
        tokens[i:i] = tokens[i:j] * rng.randint(1, 20)
    elif op == 7:  # strange atoms
        tokens.insert(i, " " + str(_rand_scalar(rng)) + " ")
    else:  # truncate
        tokens = tokens[:i]
    return "".join(tokens)


# --------------------------------------------------------------------------- front door

_BY_FORMAT = {
    "yaml": [
        yaml_structure,
        yaml_structure,
        yaml_structure,
        line_mutation,
        byte_mutation,
        yaml_aliases,
    ],
    "json": [json_structure, json_structure, line_mutation, byte_mutation],
    "sexp": [sexp_structure, sexp_structure, sexp_structure, line_mutation, byte_mutation],
    "text": [line_mutation, line_mutation, byte_mutation],
}


def mutate(rng: random.Random, text: str, fmt: str) -> str:
    """Apply 1-3 mutations suited to ``fmt``; sometimes return an extreme input instead."""
    r = rng.random()
    if r < 0.02:
        return ""
    if r < 0.03:
        return text * rng.randint(50, 400)  # big input
    for _ in range(rng.randint(1, 3)):
        text = rng.choice(_BY_FORMAT.get(fmt, _BY_FORMAT["text"]))(rng, text)
    return text

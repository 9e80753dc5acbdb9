"""The package's layers, enforced: imports only go down, and nothing imports in a circle.

The layers are drawn in docs/architecture.md. Every import counts, including imports inside
functions (a lazy import that goes up is still a back-edge). ``make lint`` runs this file.
"""

from __future__ import annotations

import ast
import functools
from collections import defaultdict
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "src" / "fllm_cli"

# Bottom to top. A module may import its own unit and any unit on a lower layer. Units on the
# same layer are peers and may not import each other.
LAYERS: tuple[tuple[str, ...], ...] = (
    ("diagnostics", "resources", "__init__"),
    ("errors",),
    ("textio", "keystore"),
    ("prompts", "llm", "sexp", "content", "meaning"),
    ("domain", "travel", "toolset"),
    ("grammar",),
    ("automaton",),
    ("plan",),
    ("search", "verify"),
    ("databound",),
    ("kinds",),
    ("ltl", "solve", "execute"),
    ("api",),
    ("bench",),
    ("cli",),
    ("__main__",),
)
# Presentation libraries: only the command line draws on a terminal.
PRESENTATION = ("rich", "typer", "click")
PRESENTATION_UNITS = ("cli", "__main__")
# The command line calls the library through fllm_cli.api (and the benchmark, itself a client of
# the api), besides the bottom utilities; it never reaches around the api into lower packages.
CLI_MAY_IMPORT = ("api", "bench", "errors", "diagnostics", "resources", "textio", "__init__")
# Units only the named units may import, whatever their layers: the TravelPlanner benchmark's
# evaluator serves the benchmark, and the generic packages (databound/ plans any data-bound
# domain) share no code with it.
ONLY_FOR: dict[str, tuple[str, ...]] = {"travel": ("bench",)}


def unit_of(module: str) -> str:
    """Return the layer unit of a dotted module name inside fllm_cli."""
    return module.split(".")[1] if "." in module else "__init__"


def layer_of(unit: str) -> int:
    for number, units in enumerate(LAYERS):
        if unit in units:
            return number
    raise AssertionError(f"unit '{unit}' has no layer: add it to LAYERS and docs/architecture.md")


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports_of(path: Path) -> list[tuple[int, str]]:
    """Return (line, imported module) for every import in the file, at any depth."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    me = module_name(path)
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = me.split(".")
                package = base if path.name == "__init__.py" else base[:-1]
                package = package[: len(package) - (node.level - 1)]
                target = ".".join([*package, node.module] if node.module else package)
            else:
                target = node.module or ""
            for alias in node.names:
                # "from pkg import sub" names the submodule; "from mod import name" the module.
                sub = f"{target}.{alias.name}"
                found.append((node.lineno, sub if _existing(sub) == {sub} else target))
    return found


@functools.cache
def all_imports() -> dict[Path, list[tuple[int, str]]]:
    """Return every package file (sorted) with its imports, parsed once for all the tests."""
    return {path: imports_of(path) for path in sorted(PACKAGE.rglob("*.py"))}


def _graph() -> dict[str, set[tuple[str, int, str]]]:
    """Return unit -> {(imported unit, line, file)} for imports between fllm_cli units."""
    edges: dict[str, set[tuple[str, int, str]]] = defaultdict(set)
    for path, imports in all_imports().items():
        source = unit_of(module_name(path))
        for line, target in imports:
            if target.startswith("fllm_cli.") or target == "fllm_cli":
                modules = {m for m in _existing(target)}
                for module in modules:
                    dest = unit_of(module)
                    if dest != source:
                        edges[source].add((dest, line, str(path.relative_to(PACKAGE))))
    return edges


@functools.cache
def _existing(target: str) -> frozenset[str]:
    """Resolve ``fllm_cli.x.y`` (a module or a name inside one) to the module that exists."""
    parts = target.split(".")
    while parts:
        candidate = PACKAGE.parent.joinpath(*parts)
        if candidate.with_suffix(".py").exists() or (candidate / "__init__.py").exists():
            return frozenset({".".join(parts)})
        parts = parts[:-1]
    return frozenset()


def test_every_import_goes_down() -> None:
    problems = []
    for source, targets in _graph().items():
        for dest, line, where in targets:
            if layer_of(dest) >= layer_of(source):
                problems.append(f"{where}:{line}: {source} imports {dest}")
    assert not problems, "imports that do not go down:\n" + "\n".join(sorted(problems))


def test_the_command_line_calls_only_the_api() -> None:
    problems = [
        f"{where}:{line}: cli imports {dest}"
        for dest, line, where in _graph().get("cli", set())
        if dest not in CLI_MAY_IMPORT
    ]
    assert not problems, "the command line reaches around the api:\n" + "\n".join(sorted(problems))


def test_presentation_stays_in_the_command_line() -> None:
    problems = []
    for path, imports in all_imports().items():
        if unit_of(module_name(path)) in PRESENTATION_UNITS:
            continue
        for line, target in imports:
            if target.split(".")[0] in PRESENTATION:
                problems.append(f"{path.relative_to(PACKAGE)}:{line}: imports {target}")
    assert not problems, "terminal presentation outside cli/:\n" + "\n".join(sorted(set(problems)))


def test_benchmark_units_serve_only_their_benchmark() -> None:
    problems = [
        f"{where}:{line}: {source} imports {dest}"
        for source, targets in _graph().items()
        for dest, line, where in targets
        if dest in ONLY_FOR and source not in ONLY_FOR[dest]
    ]
    assert not problems, "imports of a benchmark's own code:\n" + "\n".join(sorted(problems))


def test_no_import_cycles_inside_a_package() -> None:
    """Modules of one package may import each other, but never in a circle."""
    graph: dict[str, set[str]] = defaultdict(set)
    for path, imports in all_imports().items():
        me = module_name(path)
        for _, target in imports:
            for module in _existing(target):
                if module != me and unit_of(module) == unit_of(me):
                    graph[me].add(module)
    cycle = _find_cycle(graph)
    assert cycle is None, "import cycle: " + " -> ".join(cycle or [])


def _find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    colour: dict[str, int] = {}
    for root in sorted(graph):
        if colour.get(root):
            continue
        stack = [(root, iter(sorted(graph[root])))]
        path = [root]
        colour[root] = 1
        while stack:
            node, children = stack[-1]
            child = next(children, None)
            if child is None:
                colour[node] = 2
                stack.pop()
                path.pop()
            elif colour.get(child) == 1:
                return [*path[path.index(child) :], child]
            elif not colour.get(child):
                colour[child] = 1
                path.append(child)
                stack.append((child, iter(sorted(graph.get(child, ())))))
    return None


@pytest.mark.parametrize(
    "graph, expected",
    [
        ({"a": {"b"}, "b": {"c"}, "c": {"a"}}, ["a", "b", "c", "a"]),
        ({"a": {"b"}, "b": {"c"}, "c": set()}, None),
    ],
)
def test_cycle_finder(graph: dict[str, set[str]], expected: list[str] | None) -> None:
    assert _find_cycle(graph) == expected

"""LTL-specified agents: specs, the LTL fragment, its automaton, trace checking and the runtime.

The formal core (``sexp``, ``formula``, ``spec``, ``regex``, ``automaton``, ``trace``) does no
I/O beyond reading spec files; the runtime (``runtime``, ``tools``, ``environment``) drives a model.
"""

from __future__ import annotations

from pathlib import Path

from fllm_cli.diagnostics import Diagnostic, Location, sort_key
from fllm_cli.errors import UsageError

__all__ = [
    "agent_automaton",
    "is_agent_spec",
    "render_agent_automaton",
    "validate_agent_spec",
]


def is_agent_spec(path: str) -> bool:
    """Return True for ``.sexp`` files and YAML files with a top-level ``agent:`` key."""
    from fllm_cli.ltl.spec import is_yaml_path
    from fllm_cli.resources import resolve_spec_path

    p = Path(path)
    if p.suffix.lower() == ".sexp":
        return True
    if not is_yaml_path(p):
        return False
    try:
        text = resolve_spec_path(p).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return False
    # A cheap look at the top-level keys; a full parse happens in validation.
    return any(line.startswith(("agent:", '"agent":', "'agent':")) for line in text.splitlines())


def validate_agent_spec(path: str) -> list[Diagnostic]:
    """Return every diagnostic of the agent spec at ``path`` (errors and warnings), sorted."""
    from fllm_cli.ltl.automaton import compile_spec
    from fllm_cli.ltl.spec import parse_spec, read_spec_text

    try:
        resolved, text = read_spec_text(path)
    except UsageError as exc:
        return [Diagnostic("error", exc.message, Location(path))]
    spec, diagnostics = parse_spec(text, resolved)
    if spec is not None and compile_spec(spec).empty:
        diagnostics.append(
            Diagnostic(
                "error",
                f"the behaviour admits no run that starts in '{spec.start}' and ends in "
                f"'{spec.final}'",
                spec.behavior_loc or Location(resolved),
            )
        )
    return sorted(diagnostics, key=sort_key)


def _load(path: str):  # type: ignore[no-untyped-def]
    from fllm_cli.ltl.automaton import compile_spec
    from fllm_cli.ltl.spec import load_spec

    spec = load_spec(path)
    automaton = compile_spec(spec)
    if automaton.empty:
        from fllm_cli.errors import SpecError

        raise SpecError(validate_agent_spec(path))
    return spec, automaton


def render_agent_automaton(path: str, fmt: str) -> str:
    """Return the compiled automaton of an agent spec as table, dot, mermaid or json text."""
    from fllm_cli.ltl.render import FORMATS, render

    if fmt not in FORMATS:
        raise UsageError(f"unknown format '{fmt}'; use one of {', '.join(FORMATS)}")
    spec, automaton = _load(path)
    return render(spec, automaton, fmt)


def agent_automaton(path: str) -> tuple[str, tuple[str, ...], list[tuple[str, ...]]]:
    """Return the compiled automaton of an agent spec as (title, headers, rows) of a table."""
    from fllm_cli.ltl.render import TABLE_HEADERS, table_rows

    spec, automaton = _load(path)
    title, rows = table_rows(spec, automaton)
    return title, TABLE_HEADERS, rows

"""Scenario variables of a domain: ``--var NAME=VALUE`` options, defaults, the filled mapping."""

from __future__ import annotations

from fllm_cli.diagnostics import did_you_mean
from fllm_cli.domain.model import Domain
from fllm_cli.errors import UsageError


def resolve_vars(domain: Domain, given: dict[str, str] | None) -> dict[str, str]:
    """Fill the domain's scenario variables from ``--var`` values and defaults."""
    given = dict(given or {})
    known = {v.name for v in domain.vars}
    for name in given:
        if name not in known:
            shown = ", ".join(sorted(known)) or "none"
            raise UsageError(
                f"unknown --var '{name}'{did_you_mean(name, known)} "
                f"('{domain.name}' declares: {shown})"
            )
    out: dict[str, str] = {}
    for v in domain.vars:
        if v.name in given:
            out[v.name] = given[v.name]
        elif v.default is not None:
            out[v.name] = v.default
        else:
            what = f" ({v.description})" if v.description else ""
            raise UsageError(f"missing --var {v.name}=VALUE{what} for '{domain.name}'")
    return out


def placeholder_vars(domain: Domain, given: dict[str, str] | None) -> dict[str, str]:
    """Like :func:`resolve_vars`, but a missing variable shows as ``{name}`` instead of failing."""
    filled = {v.name: v.default or f"{{{v.name}}}" for v in domain.vars}
    return resolve_vars(domain, {**filled, **(given or {})})


def parse_var_options(values: list[str]) -> dict[str, str]:
    """Turn ``--var NAME=VALUE`` options into a mapping."""
    out: dict[str, str] = {}
    for item in values:
        name, sep, value = item.partition("=")
        if not sep or not name.strip():
            raise UsageError(f"bad --var '{item}': write NAME=VALUE")
        out[name.strip()] = value
    return out

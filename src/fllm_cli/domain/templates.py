"""Which prompt template a domain uses for each prompt key: its own, else the shipped one."""

from __future__ import annotations

from fllm_cli.domain.kinds import KINDS
from fllm_cli.domain.model import Domain

# The shipped prompt templates by prompt key (docs/spec.md); a kind's row may replace some.
DEFAULT_TEMPLATES: dict[str, str] = {
    "choice": "plan/choice.j2",
    "interface": "plan/interface.j2",
    "candidates": "plan/candidates.j2",
    "propose": "plan/propose.j2",
}


def default_template(domain: Domain, key: str) -> str:
    """Return the shipped template for prompt ``key`` of this kind of domain."""
    row = KINDS.get(domain.kind)
    shipped = row.templates.get(key) if row is not None else None
    return shipped or DEFAULT_TEMPLATES.get(key, "")


def template_for(domain: Domain, key: str) -> str:
    """Return the template the domain uses for prompt ``key``: its own, else the shipped one."""
    return domain.prompts.get(key) or default_template(domain, key)

"""The local model's settings: scoring and listing modes, unpacking, context size, sequences.

Each setting is read from its environment variable (or given explicitly) and checked against
the values it allows, so a misspelt one fails at once with a one-line hint.
"""

from __future__ import annotations

import os

from fllm_cli.errors import UsageError

SCORING_MODES = ("raw", "calibrated", "text")
DEFAULT_SCORING = "text"
LISTINGS = ("drop", "keep")  # text scoring: drop the prompt's listing of the options, or keep it
DEFAULT_LISTING = "drop"
CTX_HINT = "set FLLM_LOCAL_CTX higher (SmolLM2 was trained on 8192)"
UNPACKS = ("auto", "1", "0")
SEQUENCES = 32  # llama.cpp sequences per context: 0 holds the prompt, the others score options
PRIOR_SEQ = SEQUENCES - 1  # the neutral prompt of text scoring's priors


def context_size() -> int:
    """Return ``$FLLM_LOCAL_CTX``, the context size in tokens (at least 256)."""
    raw = os.environ.get("FLLM_LOCAL_CTX", "8192")  # what SmolLM2 was trained on
    if not raw.isdigit() or int(raw) < 256:
        raise UsageError(f"FLLM_LOCAL_CTX must be an integer >= 256, got '{raw}'")
    return int(raw)


def _setting(
    variable: str, what: str, allowed: tuple[str, ...], default: str, given: str | None
) -> str:
    """Return ``given``, else ``$variable``, else ``default``, checked against ``allowed``."""
    value = (given or os.environ.get(variable) or default).strip().lower()
    if value not in allowed:
        raise UsageError(
            f"unknown {what} '{value}'", hint=f"{variable} is one of {', '.join(allowed)}"
        )
    return value


def scoring_mode(explicit: str | None = None) -> str:
    """Return the scoring mode: the argument, then ``$FLLM_LOCAL_SCORING``, then the default."""
    return _setting(
        "FLLM_LOCAL_SCORING", "local scoring mode", SCORING_MODES, DEFAULT_SCORING, explicit
    )


def unpack_mode() -> str:
    """Return ``$FLLM_LOCAL_UNPACK``: auto (small quantized models), 1 (any size) or 0."""
    return _setting("FLLM_LOCAL_UNPACK", "local unpack setting", UNPACKS, "auto", None)


def listing_mode(explicit: str | None = None) -> str:
    """Return whether text scoring drops the prompt's option listing (``$FLLM_LOCAL_LISTING``)."""
    return _setting("FLLM_LOCAL_LISTING", "local listing mode", LISTINGS, DEFAULT_LISTING, explicit)

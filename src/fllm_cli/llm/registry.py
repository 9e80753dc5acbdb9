"""Turn a ``--model`` string into a back end, through one table of prefixes.

A model string is ``PREFIX[:ARG]``. The table maps each prefix to a factory
``factory(arg, options) -> Model``; the built-in back ends are listed in :data:`BUILTINS`, and
installed packages add more through the ``fllm.models`` entry-point group (the entry point's
name is the prefix, its object the factory). A string whose prefix is not in the table is a
LiteLLM model name (``gpt-4o``, ``ollama/llama3:8b``, ``openai/NAME``...); an unknown
``WORD:ARG`` that does not look like one is a usage error.

Unset, the string is ``$FLLM_MODEL``, else ``local``. Real models answer through the on-disk
reply cache (``llm/cache.py``) unless ``ModelOptions.cache`` is off or ``$FLLM_NO_CACHE`` is set.
"""

from __future__ import annotations

import importlib
import os
import re
from collections.abc import Callable
from dataclasses import dataclass
from importlib.metadata import entry_points

from fllm_cli.diagnostics import did_you_mean
from fllm_cli.errors import UsageError
from fllm_cli.llm.base import Model
from fllm_cli.llm.options import ModelOptions

__all__ = [
    "BUILTINS",
    "DEFAULT_MODEL",
    "ENTRY_POINT_GROUP",
    "LITELLM",
    "Backend",
    "ModelOptions",
    "backends",
    "make_model",
    "model_help",
    "parse_model_spec",
    "resolve_model_name",
]

DEFAULT_MODEL = "local"
ENTRY_POINT_GROUP = "fllm.models"
LITELLM = "litellm"

Factory = Callable[[str, ModelOptions], Model]


@dataclass(frozen=True)
class Backend:
    """One row of the table: a prefix, where its factory lives, and its line of help."""

    prefix: str
    target: str  # "module:attribute" of the factory, imported on first use
    usage: str  # how the string is written, e.g. "random[:SEED]"
    help: str = ""

    def load(self) -> Factory:
        """Import and return the factory."""
        module, _, attribute = self.target.partition(":")
        try:
            factory = getattr(importlib.import_module(module), attribute)
        except Exception as exc:  # a broken plugin must not crash fllm
            raise UsageError(f"cannot load model back end '{self.prefix}': {exc}") from None
        if not callable(factory):
            raise UsageError(f"model back end '{self.prefix}' ({self.target}) is not callable")
        return factory  # type: ignore[no-any-return]


BUILTINS: tuple[Backend, ...] = (
    Backend(
        "local",
        "fllm_cli.llm.local:factory",
        "local[:PATH.gguf], local:hf:OWNER/REPO[@REV]/FILE.gguf",
        "embedded, the default; hf: is fetched once from Hugging Face",
    ),
    Backend("random", "fllm_cli.llm.simple:random_factory", "random[:SEED]", "uniform choice"),
    Backend(
        "scripted", "fllm_cli.llm.simple:scripted_factory", "scripted:FILE", "answers, one per line"
    ),
    Backend("replay", "fllm_cli.llm.replay:factory", "replay:TRACE.jsonl", "a --trace file"),
    Backend(
        LITELLM,
        "fllm_cli.llm.litellm_backend:factory",
        "litellm:MODEL",
        "any other string too: gpt-4o, anthropic/..., ollama/llama3, openai/NAME with --api-base",
    ),
)


def backends() -> dict[str, Backend]:
    """Return the table: the built-ins, then the ``fllm.models`` plugins (built-ins win)."""
    table = {b.prefix: b for b in BUILTINS}
    for ep in entry_points(group=ENTRY_POINT_GROUP):
        if ep.name not in table:
            table[ep.name] = Backend(ep.name, ep.value, f"{ep.name}[:ARG]", "plugin")
    return table


def resolve_model_name(spec: str | None) -> str:
    """Return the model string in force: the flag, then ``$FLLM_MODEL``, then the default."""
    if spec:
        return spec
    return os.environ.get("FLLM_MODEL") or DEFAULT_MODEL


# LiteLLM strings with a colon: "ollama/llama3:8b", "bedrock/...-v1:0", "ft:gpt-4o-mini:org::id".
_LITELLM_COLON = re.compile(r"^(?:[^:]*/|ft:)")


def parse_model_spec(spec: str | None, table: dict[str, Backend] | None = None) -> tuple[str, str]:
    """Return ``(prefix, arg)`` for a model string: ``"local:m.gguf"`` -> ``("local", "m.gguf")``.

    A LiteLLM model name gives ``("litellm", name)``. An unknown ``WORD:ARG`` is a UsageError
    that names the known prefixes.
    """
    table = backends() if table is None else table
    name = resolve_model_name(spec).strip()
    if not name:
        raise UsageError("--model is empty")
    prefix, colon, arg = name.partition(":")
    if prefix in table:
        return prefix, arg.strip()
    if colon and not _LITELLM_COLON.match(name):
        known = ", ".join(sorted(table))
        raise UsageError(
            f"unknown model back end '{prefix}' in '{name}'{did_you_mean(prefix, table)}",
            hint=f"known prefixes: {known}; a LiteLLM model is written provider/model",
        )
    return LITELLM, name


def make_model(spec: str | None, options: ModelOptions | None = None) -> Model:
    """Build the back end named by ``spec``."""
    table = backends()
    prefix, arg = parse_model_spec(spec, table)
    if prefix == LITELLM and not arg:
        raise UsageError("--model litellm: needs a model name, e.g. litellm:gpt-4o")
    model = table[prefix].load()(arg, options or ModelOptions())
    if not isinstance(model, Model):
        raise UsageError(f"model back end '{prefix}' did not return a model")
    return model


def model_help(table: dict[str, Backend] | None = None) -> str:
    """Return the ``--model`` help text, one entry per prefix of the table."""
    table = backends() if table is None else table
    parts = [f"{b.usage} ({b.help})" if b.help else b.usage for b in table.values()]
    return "Model: " + "; ".join(parts) + ". Default: $FLLM_MODEL, else local."

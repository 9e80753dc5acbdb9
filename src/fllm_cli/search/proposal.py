"""The model reads the request once and proposes the interface and the tools it needs.

With a model that can read a request (an API model through LiteLLM), plan-level search starts
from the model's proposal: one call, a JSON reply under a schema whose enums are the domain's
modalities and tools. The proposal is evidence, not the plan: the automaton still decides what
is valid, so a tool that cannot fit is dropped, a missing type conversion is added, and the
best valid plan closest to the proposal is returned. The reply is untrusted: anything outside
the enums is ignored, and an unusable reply leaves the other signals to decide.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from fllm_cli.domain.model import Domain
from fllm_cli.domain.templates import template_for
from fllm_cli.llm.base import GenerateRequest
from fllm_cli.llm.meter import RunMeter
from fllm_cli.prompts import render

MAX_REPLY_TOKENS = 256
_OBJECT = re.compile(r"\{.*\}", re.DOTALL)


@dataclass(frozen=True)
class Proposal:
    """What the model read: the tools (known names only) and, when usable, the interface."""

    tools: tuple[str, ...]
    inputs: tuple[str, ...] | None = None
    output: str | None = None

    def as_dict(self) -> dict[str, Any]:
        return {"tools": list(self.tools), "inputs": self.inputs and list(self.inputs),
                "output": self.output}  # fmt: skip


def schema(domain: Domain) -> dict[str, Any]:
    """The reply's JSON schema: enums of the domain's modalities and tools."""
    modalities = [m.name for m in domain.modalities]
    most = domain.task.max_inputs if domain.task and domain.task.max_inputs else 2
    return {
        "type": "object",
        "properties": {
            "inputs": {"type": "array", "items": {"enum": modalities}, "minItems": 1,
                       "maxItems": most},
            "output": {"enum": modalities},
            "tools": {"type": "array", "items": {"enum": [t.name for t in domain.tools]}},
        },
        "required": ["inputs", "output", "tools"],
        "additionalProperties": False,
    }  # fmt: skip


def parse(text: str, domain: Domain) -> Proposal | None:
    """Read a reply; keep only known tools and modalities. None when nothing usable is left."""
    found = _OBJECT.search(text or "")
    if found is None:
        return None
    try:
        data = json.loads(found.group(0))
    except ValueError:
        return None
    if not isinstance(data, dict):
        return None
    names = {t.name for t in domain.tools}
    modalities = {m.name for m in domain.modalities}
    raw_tools = data.get("tools")
    tools = tuple(
        dict.fromkeys(t for t in raw_tools if isinstance(t, str) and t in names)
        if isinstance(raw_tools, list)
        else ()
    )
    raw_inputs = data.get("inputs")
    inputs: tuple[str, ...] | None = None
    if isinstance(raw_inputs, list) and raw_inputs:
        kept = tuple(m for m in raw_inputs if isinstance(m, str) and m in modalities)
        inputs = kept if len(kept) == len(raw_inputs) else None
    output = data.get("output")
    output = output if isinstance(output, str) and output in modalities else None
    if not tools and inputs is None and output is None:
        return None
    return Proposal(tools, inputs, output)


def propose(domain: Domain, text: str, meter: RunMeter) -> tuple[Proposal | None, int]:
    """Ask the model once; return its proposal (None if unusable) and the calls it took."""
    prompt = render(
        template_for(domain, "propose"),
        {"task": text, "domain": domain.name, "intro": domain.intro,
         "modalities": list(domain.modalities), "tools": list(domain.tools)},
        domain.prompt_dirs,
    )  # fmt: skip
    gen = meter.generate(
        GenerateRequest(prompt, max_tokens=MAX_REPLY_TOKENS, kind="propose", schema=schema(domain))
    )
    return parse(gen.text, domain), gen.calls

"""Ask the model what a task provides and produces, when ``--input/--output`` are omitted.

The options come from the domain's task interface, and only combinations for which a valid plan
exists are offered, so the answer can always be planned for.
"""

from __future__ import annotations

from collections import Counter
from itertools import combinations_with_replacement
from typing import Any

from fllm_cli.automaton.lookahead import GrammarLookahead
from fllm_cli.automaton.pda import pda_from_grammar
from fllm_cli.domain.model import DEFAULT_TEMPLATES, Domain, Task
from fllm_cli.errors import NoPlanError
from fllm_cli.grammar.compile import parse_inputs, tool_grammar
from fllm_cli.llm.base import ChoiceRequest, ChoiceResult, Model
from fllm_cli.llm.meter import RunMeter
from fllm_cli.prompts import render

NUMBER_WORDS = {2: "two", 3: "three", 4: "four"}


def _article(word: str) -> str:
    return "an" if word[:1].lower() in "aeiou" else "a"


def _phrase(domain: Domain, modality: str) -> str:
    m = domain.modality(modality)
    return m.phrase if m else modality


def describe_inputs(modalities: tuple[str, ...], domain: Domain) -> str:
    """Return 'an image and a text', 'two texts'."""
    parts = []
    for modality, count in Counter(modalities).items():
        m = domain.modality(modality)
        phrase = m.phrase if m else modality
        parts.append(
            f"{_article(phrase)} {phrase}"
            if count == 1
            else f"{NUMBER_WORDS.get(count, count)} {phrase}s"
        )
    return " and ".join(parts)


def feasible_interfaces(domain: Domain) -> list[tuple[tuple[str, ...], list[str]]]:
    """Return (input modalities, feasible outputs) for every allowed input combination."""
    iface = domain.task
    names = tuple(m.name for m in domain.modalities)
    ins = iface.inputs if iface and iface.inputs else names
    outs = iface.outputs if iface and iface.outputs else names
    most = iface.max_inputs if iface and iface.max_inputs else 2
    found = []
    for size in range(1, most + 1):
        for combo in combinations_with_replacement(ins, size):
            pairs = parse_inputs(list(combo))
            ok = []
            for output in outs:
                pda = pda_from_grammar(tool_grammar(domain, Task("", pairs, output)))
                if GrammarLookahead(pda).word_exists():
                    ok.append(output)
            if ok:
                found.append((combo, ok))
    return found


def infer_interface(
    domain: Domain, text: str, model: Model, trace: list[dict[str, Any]]
) -> tuple[list[str], str, list[ChoiceResult]]:
    """Return (--input values, --output) chosen by the model among feasible ones."""
    options = feasible_interfaces(domain)
    if not options:
        raise NoPlanError(f"no task of '{domain.name}' has a valid plan")
    template = domain.prompts.get("interface", DEFAULT_TEMPLATES["interface"])
    results: list[ChoiceResult] = []
    meter = RunMeter.wrap(model).fork(records=trace)

    def ask(question: str, choices: list[str], chosen: list[str]) -> int:
        if len(choices) == 1:
            return 0
        prompt = render(
            template,
            {
                "task": text,
                "domain": domain.name,
                "intro": domain.intro,
                "question": question,
                "choices": choices,
                "chosen": chosen,
            },
            domain.prompt_dirs,
        )
        result = meter.choose(ChoiceRequest(prompt, tuple(choices), "interface"))
        results.append(result)
        return result.index

    texts = [describe_inputs(combo, domain) for combo, _ in options]
    pick = ask("What does the task give us to work with?", texts, [])
    combo, outs = options[pick]
    phrases = [f"{_article(p)} {p}" for p in (_phrase(domain, o) for o in outs)]
    out_pick = ask("What must the final result be?", phrases, [f"the task gives {texts[pick]}"])
    return list(combo), outs[out_pick], results

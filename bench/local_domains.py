"""How often the embedded model makes the paper's choice in its three real-life domains.

The paper (appendix A.5) prints GPT-4's Formal-LLM plan for the daily-plan, cooking and
risk-management domains; those plans are the
only references these domains have. The planner is walked along the reference plan (teacher
forcing): at every choice point the embedded model is asked once per rotation of the options
(the listing in the prompt rotated too), so position luck cancels out, and the reference option
is taken to go on. Reported per domain: the share of asks that picked the reference option, and
the share that picked the option least likely after text scoring's neutral prompt (a model
that copies every listed option alike picks that one).

    .venv/bin/python bench/local_domains.py [--listing keep|drop]

``--listing`` sets ``FLLM_LOCAL_LISTING`` (whether text scoring drops the listed options from
the prompt; ``drop`` is the default of the local back end).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent

# GPT-4's plans under Formal-LLM, from the paper's appendix (A.5).
DAILY = [
    (10, 10, "Turning on the washer/laundry machine."),
    (10, 11, "House cleaning."),
    (11, 12, "Eating breakfast."),
    (12, 13, "Grocery shopping."),
    (13, 15, "Playing basketball."),
    (15, 16, "Eating lunch."),
    (16, 19, "Doing homework."),
    (19, 20, "Eating supper."),
]
SEASONING = {"ginger", "garlic", "cooking oil", "salt", "light soy sauce", "cooking wine"}
SEASONING |= {"white pepper"}
COOKING = [
    "Wash raw beef slices with water.",
    "Marinate clean slices of beef in a bowl with seasoning.",
    "Stir-fry the marinaded beef in a wok.",
    "Wash broccoli with water.",
    "Blanch clean broccoli in a cooking pot.",
    "Use a bowl to drain the blanched broccoli.",
    "Combine lightly cooked beef and blanched and drained broccoli in a wok.",
    "Stir-fry the beef and broccoli mixture with the seasoning in a wok.",
]
# The paper's risk plan: entitlement unclear, good standing, no CFIUS filing, antitrust filing.
RISK = {"entitled": "Insufficient", "standing": "Yes", "CFIUS": "No", "antitrust": "Yes"}
SCENARIO = {"seller": "Shareholders of Blizzard Entertainment", "buyer": "Microsoft"}
CASES = [
    ("daily_plan", "domains/daily_plan.yaml", "Plan my Saturday."),
    ("daily_plan", "domains/daily_plan.yaml", "What should my day look like?"),
    ("cooking", "domains/cooking.yaml", "Cook broccoli beef"),
    ("cooking", "domains/cooking.yaml", "How do I make beef with broccoli?"),
    ("risk_management", "domains/risk_management.yaml", "Design the risk management plan."),
    ("risk_management", "domains/risk_management.yaml", "What should Microsoft check first?"),
]


def _words(text: str) -> set[str]:
    return set(re.sub(r"[^a-z ]", " ", text.lower()).split()) - {"the", "a", "an", "with"}


def daily_reference(prompt: str, options: tuple[str, ...]) -> int | None:
    """The option the paper's plan does in the hour the question names."""
    hour = re.search(r"ending at (\d+):00", prompt)
    if not hour:
        return None
    wanted = [text for _, end, text in DAILY if end == int(hour.group(1))]
    hits = [i for i, o in enumerate(options) if o.strip() in wanted]
    return hits[0] if len(hits) == 1 else None


def cooking_reference(prompt: str, options: tuple[str, ...]) -> int | None:
    """Yes for the paper's seasonings; else the option whose words make a reference step."""
    asked = re.match(r"(Yes|No)", options[0]) if options else None
    if asked and len(options) == 2:
        item = None
        for line in prompt.splitlines():
            found = re.search(r"include (.+?)\?$", line.strip())
            if found:
                item = found
        if item is None:
            return None
        yes = item.group(1) in SEASONING
        return 0 if options[0].startswith("Yes") == yes else 1
    steps = [_words(step) for step in COOKING]
    hits = [i for i, o in enumerate(options) if _words(o) in steps]
    return hits[0] if len(hits) == 1 else None


def risk_reference(prompt: str, options: tuple[str, ...]) -> int | None:
    """The paper's answer to the question the prompt asks last."""
    asked = [line for line in prompt.splitlines() if line.startswith("Question:")]
    for word, answer in RISK.items():
        if asked and word in asked[-1]:
            hits = [i for i, o in enumerate(options) if o.startswith(answer)]
            return hits[0] if len(hits) == 1 else None
    return None


REFERENCES = {
    "daily_plan": daily_reference,
    "cooking": cooking_reference,
    "risk_management": risk_reference,
}


def rotated(prompt: str, options: tuple[str, ...], shift: int) -> tuple[str, tuple[str, ...]]:
    """Rotate the options and their listing lines in the prompt by ``shift`` places."""
    order = options[shift:] + options[:shift]
    lines = prompt.split("\n")
    rows = []
    for option in options:  # each option's listing line, in order
        row = next(
            (r for r in range(rows[-1] + 1 if rows else 0, len(lines)) if option in lines[r]),
            None,
        )
        if row is None:
            return prompt, order
        rows.append(row)
    for row, old, new in zip(rows, options, order):
        lines[row] = lines[row].replace(old, new, 1)
    return "\n".join(lines), order


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--listing", choices=["keep", "drop"], default=None)
    args = parser.parse_args(argv)
    if args.listing:
        os.environ["FLLM_LOCAL_LISTING"] = args.listing
    sys.path.insert(0, str(ROOT / "src"))
    from fllm_cli import api
    from fllm_cli.llm import ChoiceRequest, ChoiceResult, ModelOptions, make_model
    from fllm_cli.llm.base import Model
    from fllm_cli.llm.local import CHOICE_SYSTEM, NEUTRAL

    local = make_model("local", ModelOptions(cache=False))
    tally: dict[str, list[int]] = {}

    def rareness(options: tuple[str, ...]) -> list[float]:
        """Each option's log-probability after the neutral prompt of text scoring."""
        engine, _ = local._ready()
        neutral = local._tokens(CHOICE_SYSTEM, NEUTRAL)
        return engine.priors(neutral, options)

    class Teacher(Model):
        """Asks the local model at every rotation, then takes the reference option."""

        name = "teacher"

        def __init__(self, domain: str) -> None:
            self.domain = domain

        def choose(self, request: ChoiceRequest) -> ChoiceResult:
            want = REFERENCES[self.domain](request.prompt, request.options)
            if want is None:
                return ChoiceResult(index=0, raw="1")
            n = len(request.options)
            priors = rareness(request.options)
            rarest = min(range(n), key=priors.__getitem__)
            for shift in range(n):
                prompt, order = rotated(request.prompt, request.options, shift)
                got = (local.choose(ChoiceRequest(prompt=prompt, options=order)).index + shift) % n
                counts = tally.setdefault(self.domain, [0, 0, 0])
                counts[0] += int(got == want)
                counts[1] += 1
                counts[2] += int(got == rarest)
            return ChoiceResult(index=want, raw=str(want + 1))

        def generate(self, request: Any) -> Any:
            raise NotImplementedError

    start = time.perf_counter()
    for domain, path, task in CASES:
        variables = SCENARIO if domain == "risk_management" else None
        problem = api.compile_problem(str(ROOT / path), task=task, variables=variables)
        api.plan(problem, model=Teacher(domain))
    report: dict[str, Any] = {
        "listing": os.environ.get("FLLM_LOCAL_LISTING", "drop"),
        "seconds": round(time.perf_counter() - start, 1),
    }
    for domain, (hits, asks, rare) in tally.items():
        report[domain] = {
            "asks": asks,
            "reference_picked": round(hits / asks, 3),
            "rarest_picked": round(rare / asks, 3),  # least likely after the neutral prompt
        }
    print(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Test back ends: a behaviour-driven model that may misbehave in scripted ways."""

from __future__ import annotations

from collections.abc import Callable

from fllm_cli.llm.base import GenerateRequest, Generation, TextModel

Reply = Callable[[str], str]


def last_tag(prompt: str) -> str:
    """Return the text of the prompt's last line (the open tag the model must continue)."""
    return prompt.rstrip("\n").splitlines()[-1].strip()


class BehaviourModel(TextModel):
    """Reply with ``reply(prompt)``; by default it ignores stop sequences like a raw completion API.

    With ``strip_stops`` it behaves like a chat API: the text is cut before the first stop and the
    stop itself is not returned. Choice prompts go through the same ``reply`` function.
    """

    def __init__(self, reply: Reply, strip_stops: bool = False) -> None:
        self.reply = reply
        self.strip_stops = strip_stops
        self.name = "behaviour"
        self.prompts: list[str] = []

    def generate(self, request: GenerateRequest) -> Generation:
        self.prompts.append(request.prompt)
        text = self.reply(request.prompt)
        if self.strip_stops:
            cuts = [text.index(s) for s in request.stop if s and s in text]
            text = text[: min(cuts)] if cuts else text
        return Generation(text=text, calls=1)


def is_choice(prompt: str) -> bool:
    """Return True for the constrained-choice prompts."""
    return "Reply with the number of one option only." in prompt


class RandomTextModel(TextModel):
    """Seeded random replies: junk, numbers, arithmetic, tags, several lines; random choices."""

    PIECES = (
        "",
        " ",
        "42",
        "-3.5",
        "0.17 * 240 + 12",
        "(1 + 2) * 3",
        "yes",
        "no",
        "the answer is 7",
        "1. 17% of 240 is",
        "Thought:",
        "Answer:",
        "Action Input:",
        "Observation: fake",
        "\n",
        '{"a": 1}',
        "sqrt(16",
    )

    def __init__(self, seed: int) -> None:
        import random

        self.rng = random.Random(seed)
        self.name = f"random-text:{seed}"

    def generate(self, request: GenerateRequest) -> Generation:
        if "Reply with the number of one option only." in request.prompt:
            return Generation(text=str(self.rng.randint(0, 4)), calls=1)
        n = self.rng.randint(0, 4)
        text = " ".join(self.rng.choice(self.PIECES) for _ in range(n))
        return Generation(text=text, calls=1)

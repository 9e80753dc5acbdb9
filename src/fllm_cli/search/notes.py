"""Notes: free text a domain asks the model to write for a step, inside a content language.

The plan is found first; a note never changes which steps it has. The note is generated under
its language (a grammar for back ends that decode with one, a JSON schema for providers that
take ``response_format``), checked by the same language's recogniser, and asked once more with
the problem shown when a back end wrote something else. A note still outside its language is
left out, with the reason, rather than shown as if it were fine.
"""

from __future__ import annotations

from typing import Any

from fllm_cli.domain.automaton import render_text
from fllm_cli.domain.model import NoteSpec
from fllm_cli.llm.base import GenerateRequest
from fllm_cli.llm.meter import RunMeter
from fllm_cli.prompts import render

TRIES = 2  # the first reply, and one more with the problem shown


def write_note(
    meter: RunMeter,
    note: NoteSpec,
    state: str,
    scenario: dict[str, str],
    variables: dict[str, Any],
    calls_left: int | None = None,
) -> tuple[str, str | None]:
    """Return (note text, None), or ("", why it was left out).

    ``ask`` is rendered like a step (the scenario variables, the family's loop variables);
    ``variables`` fill the prompt template (intro, task, steps, number, step). At most
    ``calls_left`` requests are made (the retry is skipped when only one is left).
    """
    language = note.language
    ask = render_text(note.ask, scenario, state)
    problem = None
    tries = TRIES if calls_left is None else max(1, min(TRIES, calls_left))
    for _ in range(tries):
        prompt = render(
            "plan/note.j2",
            {**variables, "ask": ask, "language": language.describe(), "problem": problem},
        )
        reply = meter.generate(
            GenerateRequest(
                prompt=prompt,
                max_tokens=note.max_tokens,
                kind="note",
                grammar=language.gbnf(),
                schema=language.json_schema(),
            )
        )
        text = reply.text.strip()
        problem = language.check(text)
        if problem is None:
            return text, None
    return "", f"left out: the reply is not {language.describe()} ({problem})"

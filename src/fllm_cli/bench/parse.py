"""Turn a free-text step-by-step plan into a word of the domain's grammar.

The text is cut at its step markers ("Step 2:", "2.", the paper's own "Setp"); each step's tool
mentions become plan steps in the order stated. Data flow is recovered as far as the text
allows: a step that names earlier steps ("the output of step 1") or earlier tools ("the result
of Image Denoising") takes those outputs; otherwise it takes the previous step's output (a chain
in stated order) when that output fits. An input slot still open takes the latest earlier step
output of its modality that nothing uses yet, else a task input of that modality. The last
step is the plan's root; the word is the tree written root first, as ``fllm verify`` reads it.
Whether the word is a valid plan is the verifier's business, not the parser's.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from fllm_cli.bench.match import Matcher, Mention, stem
from fllm_cli.diagnostics import did_you_mean
from fllm_cli.domain.model import Domain, Task
from fllm_cli.kinds import kind_of

_MARKER = re.compile(r"(?im)(?:^|(?<=\s))(?:ste?p|setp)\s*(\d+)\s*[:.)\-–]|^\s*(\d+)[.)]\s")
_STEP_REF = re.compile(r"(?i)\bste?ps?\s*(\d+)((?:\s*(?:,|and|&)\s*\d+)*)")
_STOP = re.compile(r"(?im)^\s*(?:problem|task|question)\s*:")
_REF_WORDS = frozenset({"output", "result", "from", "outcome"})
_LEAD_VERBS = frozenset(
    {
        "use",
        "apply",
        "run",
        "call",
        "perform",
        "then",
        "next",
        "first",
        "finally",
        "feed",
        "pass",
        "invoke",
        "using",
        "employ",
        "with",
    }
)


class ParseError(ValueError):
    """The text does not describe a plan; the message says why."""


@dataclass
class PlanStep:
    """A parsed step: a tool and where its inputs come from (``step:N`` or ``input:NAME``)."""

    tool: str
    label: int
    inputs: list[str] = field(default_factory=list)


@dataclass
class Segment:
    """The text of one stated step."""

    label: int
    text: str


def segments(text: str) -> list[Segment]:
    """Cut the reply at its step markers; no markers means one segment per line."""
    stop = _STOP.search(text, 1)
    if stop and _MARKER.search(text, 0, stop.start()):
        text = text[: stop.start()]
    marks = list(_MARKER.finditer(text))
    if not marks:
        lines = [ln for ln in text.splitlines() if ln.strip()]
        return [Segment(i, ln) for i, ln in enumerate(lines, 1)]
    out = []
    for k, m in enumerate(marks):
        end = marks[k + 1].start() if k + 1 < len(marks) else len(text)
        label = int(m.group(1) or m.group(2))
        out.append(Segment(label, text[m.end() : end]))
    return out


def parse_plan(text: str, domain: Domain, task: Task) -> list[str]:
    """Return the word a free-text plan describes, or raise ParseError."""
    if not text.strip():
        raise ParseError("model produced no plan")
    names = _terminal_names(domain)
    drop = frozenset(w for m in domain.modalities for w in (m.name, m.phrase))
    matcher = Matcher(names, drop)
    segs = segments(text)
    if not kind_of(domain).has_interface:
        word = [m.name for s in segs for m in matcher.find(s.text)]
        if not word:
            raise ParseError(f"the reply names no step of '{domain.name}'")
        return word
    steps = _steps(segs, matcher, domain, task)
    return _word(steps)


def _terminal_names(domain: Domain) -> list[str]:
    """Return the names the text may use: tools, or the grammar's terminals."""
    if kind_of(domain).has_interface:
        return [t.name for t in domain.tools]
    grammar = domain.grammar
    return [t.name for t in grammar.terminals] if grammar is not None else []


def _steps(segs: list[Segment], matcher: Matcher, domain: Domain, task: Task) -> list[PlanStep]:
    """Build the plan steps with their inputs from the segments."""
    steps: list[PlanStep] = []
    by_label: dict[int, int] = {}
    for seg in segs:
        mentions = _dedupe(matcher.find(seg.text))
        if not mentions:
            _check_unknown(seg, domain)
            continue
        refs = _step_refs(seg, by_label)
        for mention in mentions:
            earlier = _earlier_step(steps, mention, seg.text)
            if earlier is not None:
                refs.append(f"step:{earlier}")
                continue
            step = PlanStep(mention.name, seg.label)
            _fill(step, refs, steps, domain, task)
            refs = []
            steps.append(step)
            by_label[seg.label] = len(steps)
    if not steps:
        raise ParseError(f"the reply names no tool of '{domain.name}'")
    return steps


def _dedupe(mentions: list[Mention]) -> list[Mention]:
    """Keep the first mention of each name within one step."""
    seen: set[str] = set()
    out = []
    for m in mentions:
        if m.name not in seen:
            seen.add(m.name)
            out.append(m)
    return out


def _step_refs(seg: Segment, by_label: dict[int, int]) -> list[str]:
    """Return ``step:N`` for each earlier step the segment names ("output of step 2")."""
    refs = []
    for m in _STEP_REF.finditer(seg.text):
        numbers = [int(m.group(1)), *(int(n) for n in re.findall(r"\d+", m.group(2) or ""))]
        for n in numbers:
            if n < seg.label and n in by_label and f"step:{by_label[n]}" not in refs:
                refs.append(f"step:{by_label[n]}")
    return refs


def _earlier_step(steps: list[PlanStep], mention: Mention, text: str) -> int | None:
    """Return the step number of an earlier use of the tool named as a source, if so named."""
    before = [stem(w) for w in re.findall(r"[A-Za-z]+", text[: mention.start])[-3:]]
    if not _REF_WORDS.intersection(before):
        return None
    for number in range(len(steps), 0, -1):
        if steps[number - 1].tool == mention.name:
            return number
    return None


def _fill(
    step: PlanStep, refs: list[str], steps: list[PlanStep], domain: Domain, task: Task
) -> None:
    """Give each input slot of ``step`` a source, or raise ParseError."""
    tool = domain.tool(step.tool)
    assert tool is not None
    slots: list[str | None] = [None] * len(tool.inputs)
    for source in refs or _chain_source(tool.inputs, steps, domain, task):
        modality = _modality(source, steps, domain, task)
        free = [i for i, s in enumerate(slots) if s is None]
        if not free:
            break
        same = [i for i in free if tool.inputs[i] == modality]
        slots[(same or free)[0]] = source
    for i, slot in enumerate(slots):
        if slot is None:
            slots[i] = _open_step(tool.inputs[i], steps, slots, domain, task) or _task_input(
                tool.inputs[i], _used_inputs(steps), slots, step, domain, task
            )
    step.inputs = [s for s in slots if s is not None]


def _chain_source(
    inputs: tuple[str, ...], steps: list[PlanStep], domain: Domain, task: Task
) -> list[str]:
    """Return the previous step as a source when its output fits one of the inputs."""
    if not steps:
        return []
    previous = f"step:{len(steps)}"
    return [previous] if _modality(previous, steps, domain, task) in inputs else []


def _open_step(
    modality: str, steps: list[PlanStep], slots: list[str | None], domain: Domain, task: Task
) -> str | None:
    """Return the latest earlier step of ``modality`` whose output nothing uses yet."""
    consumed = {s for step in steps for s in step.inputs} | {s for s in slots if s}
    for number in range(len(steps), 0, -1):
        source = f"step:{number}"
        if source not in consumed and _modality(source, steps, domain, task) == modality:
            return source
    return None


def _modality(source: str, steps: list[PlanStep], domain: Domain, task: Task) -> str:
    """Return the modality a source provides."""
    if source.startswith("step:"):
        tool = domain.tool(steps[int(source[5:]) - 1].tool)
        return tool.output if tool else ""
    return dict(task.inputs).get(source[6:], "")


def _used_inputs(steps: list[PlanStep]) -> set[str]:
    """Return the task inputs the steps so far already read."""
    return {s for step in steps for s in step.inputs if s.startswith("input:")}


def _task_input(
    modality: str,
    used: set[str],
    slots: list[str | None],
    step: PlanStep,
    domain: Domain,
    task: Task,
) -> str:
    """Pick a task input of ``modality``, preferring one no step has read yet."""
    names = [f"input:{n}" for n, m in task.inputs if m == modality]
    fresh = [n for n in names if n not in used and n not in slots]
    if fresh or names:
        return (fresh or names)[0]
    phrase = next((m.phrase for m in domain.modalities if m.name == modality), modality)
    raise ParseError(
        f"step {step.label}: '{step.tool}' needs {phrase} input, "
        f"and neither an earlier step nor the task provides one"
    )


def _check_unknown(seg: Segment, domain: Domain) -> None:
    """Reject a step whose head is a Title Case name that is not a tool of the domain."""
    head = re.split(r"[:\-–—(,.;!?]", seg.text.replace("*", "").replace("`", ""), maxsplit=1)
    words = head[0].split()
    while words and words[0].lower().strip("'\"") in _LEAD_VERBS:
        words = words[1:]
    name: list[str] = []
    for w in words:
        w = w.strip("'\"")
        if not (w[:1].isupper() or (name and w in ("to", "of", "and"))):
            break
        name.append(w)
    while name and not name[-1][:1].isupper():
        name.pop()
    if len(name) >= 2:
        known = [t.name for t in domain.tools]
        phrase = " ".join(name)
        raise ParseError(
            f"step {seg.label}: '{phrase}' is not a tool of '{domain.name}'"
            f"{did_you_mean(phrase, known)}"
        )


def _word(steps: list[PlanStep]) -> list[str]:
    """Write the tree rooted at the last step in prefix order; reject unused steps."""
    used: set[int] = set()

    def visit(number: int) -> list[str]:
        used.add(number)
        step = steps[number - 1]
        out = [step.tool]
        for source in step.inputs:
            out += visit(int(source[5:])) if source.startswith("step:") else [source]
        return out

    word = visit(len(steps))
    for number, step in enumerate(steps, 1):
        if number not in used:
            raise ParseError(
                f"step {step.label}: the output of '{step.tool}' is never used by the final result"
            )
    return word

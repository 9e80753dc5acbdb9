"""Present a run as data: the bare transcript, JSON, the stats line (the CLI styles it)."""

from __future__ import annotations

from typing import Any

from fllm_cli.ltl.runtime import AgentRun, transcript
from fllm_cli.ltl.trace import escape_text


def stats_dict(run: AgentRun) -> dict[str, Any]:
    """Return the run's statistics as plain data (model usage in the shape every command uses)."""
    return run.stats.as_dict()


def stats_line(run: AgentRun) -> str:
    """Return a one-line summary of the statistics."""
    s = run.stats
    parts = [
        f"{s.steps} steps",
        f"{s.loops} loops",
        f"{s.llm_calls} model calls",
        f"{s.prompt_tokens + s.completion_tokens} tokens",
        f"{s.forced_tags} forced tags",
        f"{s.dropped_tags} dropped tags",
        f"{s.tool_calls} tool calls ({s.tool_errors} errors)",
    ]
    if s.content_rejects:
        parts.append(
            f"{s.content_rejects} replies outside their language "
            f"({s.content_retries} asked again, {s.content_built} built by choices, "
            f"{s.content_failures} closed)"
        )
    if s.budget_hit:
        parts.append(f"budget hit: {s.budget_hit}")
    return ", ".join(parts)


def to_json(run: AgentRun) -> dict[str, Any]:
    """Return the whole run as plain data."""
    return {
        "agent": run.agent,
        "question": run.question,
        "answer": run.answer,
        "reached_final": run.reached_final,
        "ended_by": run.ended_by,
        "steps": [
            {
                "state": st.state,
                "tag": st.tag,
                "text": st.text,
                "source": st.source,
                "tag_forced": st.tag_forced,
                "notes": st.notes,
            }
            for st in run.steps
        ],
        "transcript": bare_transcript(run),  # the same text --format transcript writes
        "stats": stats_dict(run),
    }


def bare_transcript(run: AgentRun) -> str:
    """Return the question line and the transcript in the spec's own tags."""
    head = f"Question: {escape_text(run.question, run.tags)}\n" if run.question else ""
    return head + transcript(run.steps, run.tags) + "\n"

"""A short, fixed-seed fuzz campaign through the real entry point: it must find nothing.

The long campaign is ``python -m fuzz.run`` (see fuzz/README.md). This one runs every input
kind a few times; a failure names the folder where the failing inputs were saved.
"""

from __future__ import annotations

import pytest
from fuzz.oracle import FAILURES
from fuzz.run import run_campaign, table

SEED = 20240615
BUDGET = 100
JOBS = 2


@pytest.mark.slow
def test_fuzz_smoke_finds_nothing() -> None:
    pairs, saved = run_campaign(SEED, BUDGET, jobs=JOBS, timeout=20.0, memory_mb=2048)
    assert len(pairs) == BUDGET
    failing = [(c, r) for c, r in pairs if r.outcome in FAILURES]
    summary = "\n".join(
        f"{r.outcome} [{c.kind}] {' '.join(c.argv)[:150]}: {r.detail}" for c, r in failing
    )
    assert not failing, (
        f"{len(failing)} failing case(s), saved under {saved}:\n{summary}\n{table(pairs)}"
    )

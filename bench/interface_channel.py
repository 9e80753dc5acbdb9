"""Can a language model re-rank the interface readings? (Measured; not adopted.)

    .venv/bin/python bench/interface_channel.py [--model local|local:PATH.gguf] [--wording 0|1|2]

For each request of the seven held-out sets read during development, the readings are ranked
as ``fllm plan`` ranks them (default strategy); the top four are then scored by the model as
log P(request | a line stating the reading): the noisy-channel direction, where the model only
has to find the request likely, not pick a label. Printed per set: the ranking's first reading
right, the right one among the top four (what any re-ranker is bounded by), the model's pick
right, and the two mixed (ranking score + 0.3 x the model's log-prob, relative to its best).
About 3 minutes with the embedded model on 2 cores.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT / "bench"))

from plan_quality import request_sets  # noqa: E402

from fllm_cli import api  # noqa: E402
from fllm_cli.llm.registry import make_model  # noqa: E402
from fllm_cli.search import interface as I  # noqa: E402
from fllm_cli.search.strategy import STRATEGIES  # noqa: E402

SETS = [
    "openagi-everyday", "data_cleaning", "office_docs", "openagi-everyday2",
    "audio_production", "support_tickets", "code_review",
]  # fmt: skip
TOP = 4
MIX = 0.3


def _header(domain: api.Domain, combo: list[str], output: str, wording: int, chat) -> str:
    gives = I.describe_inputs(tuple(combo), domain)
    phrase = I._phrase(domain, output)
    wants = f"{I._article(phrase)} {phrase}"
    if wording == 0:
        return f'Someone who has {gives} and wants {wants} back wrote this request:\n"'
    if wording == 1:
        return f'Input: {gives}.\nOutput: {wants}.\nRequest: "'
    return chat.render(
        None, f"I will give you {gives}. Write the request I would make for {wants}."
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--model", default="local")
    parser.add_argument("--wording", type=int, default=1, choices=(0, 1, 2))
    args = parser.parse_args()
    engine, chat = make_model(args.model, None)._ready()
    strategy = STRATEGIES["meaning"]
    sets = request_sets()
    sums = [0.0, 0.0, 0.0, 0.0]
    for name in SETS:
        path, rows = sets[name]
        domain = api.load_domain(str(path))
        compiled: dict = {}
        options = I.feasible_interfaces(domain, compiled)
        counts = [0, 0, 0, 0]
        for row in rows:
            want = (sorted(row["inputs"].values()), row["output"])
            relevance = I.tool_evidence(domain, row["task"], strategy)
            named = strategy.read_types(*I._texts(domain), row["task"])
            ranked = I.rank_interfaces(
                domain, row["task"], options, relevance, compiled, None, named
            )
            top = [(score, sorted(combo), output) for score, combo, output in ranked[:TOP]]
            if not top:  # no reading reached a plan: counted as wrong
                continue
            request = engine.tokenize(row["task"] + '"', special=False)
            logp = [
                engine.score_sequences(
                    engine.tokenize(
                        _header(domain, c, o, args.wording, chat), special=args.wording == 2
                    ),
                    [request],
                )[0]
                for _, c, o in top
            ]
            best = max(logp)
            pick = max(range(len(top)), key=lambda i: logp[i])
            mixed = max(range(len(top)), key=lambda i: top[i][0] + MIX * (logp[i] - best))
            right = [(c, o) == want for _, c, o in top]
            counts[0] += right[0]
            counts[1] += any(right)
            counts[2] += right[pick]
            counts[3] += right[mixed]
        rates = [c / len(rows) for c in counts]
        sums = [s + r for s, r in zip(sums, rates)]
        print(f"{name:<20} first {rates[0]:.3f}  in top {TOP} {rates[1]:.3f}  "
              f"model {rates[2]:.3f}  mixed {rates[3]:.3f}", flush=True)  # fmt: skip
    means = [s / len(SETS) for s in sums]
    print(f"{'mean':<20} first {means[0]:.3f}  in top {TOP} {means[1]:.3f}  "
          f"model {means[2]:.3f}  mixed {means[3]:.3f}")  # fmt: skip


if __name__ == "__main__":
    main()

"""Check a synthetic request set against its domain file.

    .venv/bin/python bench/synthetic/check.py bench/synthetic/NAME_requests.jsonl

The domain is ``bench/synthetic/domains/NAME.yaml``. Each line must have ``id``, ``task``,
``inputs`` (name -> modality), ``output`` and ``plan`` (prefix order); the plan must pass
``fllm verify`` for the request's interface, read every declared input and use no tool twice.
Prints one line per problem and exits 1 when there is any.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "src"))

from fllm_cli import api  # noqa: E402


def check(path: Path) -> list[str]:
    domain = path.parent / "domains" / f"{path.name.removesuffix('_requests.jsonl')}.yaml"
    if not domain.exists():
        return [f"{path}: no domain file {domain}"]
    problems, seen = [], set()
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        where = f"{path.name}:{n}"
        try:
            row = json.loads(line)
            inputs = [f"{name}={kind}" for name, kind in row["inputs"].items()]
            plan, output, task = row["plan"], row["output"], row["task"]
        except (ValueError, KeyError, AttributeError, TypeError) as exc:
            problems.append(f"{where}: not a request line ({exc})")
            continue
        if row.get("id") in seen or not task.strip():
            problems.append(f"{where}: duplicate id or empty task")
        seen.add(row.get("id"))
        try:
            _, verdict = api.verify_plan(domain, plan, inputs=inputs, output=output)
        except Exception as exc:
            problems.append(f"{where}: {exc}")
            continue
        if not verdict.valid:
            problems.append(f"{where}: invalid plan: {verdict}")
        used = {w.removeprefix("input:") for w in plan if w.startswith("input:")}
        if used != set(row["inputs"]):
            problems.append(f"{where}: the plan must read exactly the declared inputs")
        tools = [w for w in plan if not w.startswith("input:")]
        if len(tools) != len(set(tools)):
            problems.append(f"{where}: a tool is used twice")
    return problems


def main() -> None:
    problems = [p for arg in sys.argv[1:] for p in check(Path(arg))]
    for p in problems:
        print(p)
    print(f"{len(problems)} problem(s)")
    sys.exit(1 if problems else 0)


if __name__ == "__main__":
    main()

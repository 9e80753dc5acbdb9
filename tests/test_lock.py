"""The lock files agree with pyproject.toml and the Makefile, and the running venv was built
from them (docs/install.md). Offline: reads files and installed package metadata only."""

from __future__ import annotations

import importlib.metadata as md
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import NormalizedName, canonicalize_name
from packaging.version import Version

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10 takes tomli from the lock
    import tomli as tomllib

ROOT = Path(__file__).resolve().parent.parent
MAIN_LOCK = "requirements.lock"
NODEPS_LOCK = "requirements-nodeps.lock"
SELF = "fllm-cli (pyproject.toml)"  # how uv names this project in a "# via" comment


@dataclass
class Pin:
    """One requirement line of a lock: name==version, an optional marker, its provenance."""

    req: Requirement
    hashes: list[str]
    via: list[str] = field(default_factory=list)

    @property
    def name(self) -> NormalizedName:
        return canonicalize_name(self.req.name)

    @property
    def version(self) -> Version:
        (spec,) = self.req.specifier
        assert spec.operator == "==", f"{self.req}: not an exact pin"
        return Version(spec.version)

    def applies(self, env: dict[str, str] | None = None) -> bool:
        return self.req.marker is None or self.req.marker.evaluate(env)


@dataclass
class Lock:
    command: str
    pins: list[Pin]

    def by_name(self) -> dict[NormalizedName, list[Pin]]:
        out: dict[NormalizedName, list[Pin]] = {}
        for pin in self.pins:
            out.setdefault(pin.name, []).append(pin)
        return out


def parse_lock(text: str) -> Lock:
    """Parse uv's requirements output: header command, pins with hashes, '# via' lines."""
    command = ""
    pins: list[Pin] = []
    pending = ""
    in_via = False
    for raw in text.splitlines():
        line = raw.strip()
        if not line:
            continue
        if line.startswith("#"):
            body = line[1:].strip()
            if not pins and body.startswith("uv pip compile"):
                command = body
            elif pins and body.startswith("via"):
                rest = body[3:].strip()
                pins[-1].via += [rest] if rest else []
                in_via = not rest
            elif pins and in_via:
                pins[-1].via.append(body)
            continue
        in_via = False
        pending += line.removesuffix("\\").strip() + " "
        if line.endswith("\\"):
            continue
        tokens = pending.split()
        pending = ""
        hashes = [t.split("=", 1)[1] for t in tokens if t.startswith("--hash=")]
        req = Requirement(" ".join(t for t in tokens if not t.startswith("--hash=")))
        pins.append(Pin(req, hashes))
    return Lock(command, pins)


def make_var(makefile: str, name: str) -> str:
    m = re.search(rf"^{name}\s*:?=\s*(.+)$", makefile, re.M)
    assert m, f"Makefile defines no {name}"
    return m.group(1).strip()


def declared(pyproject: dict, extras: list[str]) -> list[Requirement]:
    """The project's own requirements plus those of the given extras."""
    project = pyproject["project"]
    reqs = [Requirement(r) for r in project.get("dependencies", [])]
    for extra in extras:
        reqs += [Requirement(r) for r in project["optional-dependencies"][extra]]
    return reqs


# Environments a universal lock must serve: each name may have at most one pin in each.
SAMPLE_ENVS = [
    {
        "python_version": py,
        "python_full_version": f"{py}.0",
        "sys_platform": plat,
        "platform_system": system,
        "os_name": os_name,
        "platform_machine": machine,
        "implementation_name": "cpython",
        "platform_python_implementation": "CPython",
    }
    for py in ("3.10", "3.11", "3.12", "3.13", "3.14")
    for plat, system, os_name in (
        ("linux", "Linux", "posix"),
        ("darwin", "Darwin", "posix"),
        ("win32", "Windows", "nt"),
    )
    for machine in ("x86_64", "arm64", "aarch64", "AMD64")
]


# ---- the checks, as functions returning a list of problems, so each can be shown to fail ----


def header_problems(lock: Lock, expected_args: str) -> list[str]:
    expected = f"uv pip compile {expected_args}"
    if lock.command != expected:
        return [f"lock header says {lock.command!r}, make lock runs {expected!r}"]
    return []


def extras_problems(pyproject: dict, lock_args: str) -> list[str]:
    locked = set(re.findall(r"--extra (\S+)", lock_args))
    declared_extras = set(pyproject["project"].get("optional-dependencies", {}))
    if locked != declared_extras:
        return [
            f"make lock covers extras {sorted(locked)}, pyproject has {sorted(declared_extras)}"
        ]
    return []


def range_problems(reqs: list[Requirement], lock: Lock) -> list[str]:
    """Every declared requirement is pinned, every pin of it within the declared range."""
    problems = []
    by_name = lock.by_name()
    for req in reqs:
        pins = by_name.get(canonicalize_name(req.name), [])
        if not pins:
            problems.append(f"{req} is declared but not in the lock: run make lock")
        for pin in pins:
            if not req.specifier.contains(pin.version, prereleases=True):
                problems.append(f"lock pins {pin.req} outside the declared {req}: run make lock")
    return problems


def stale_problems(reqs: list[Requirement], lock: Lock) -> list[str]:
    """A pin the lock says comes from pyproject.toml must still be declared there."""
    names = {canonicalize_name(r.name) for r in reqs}
    return [
        f"lock has {pin.req.name} for {SELF}, which no longer declares it: run make lock"
        for pin in lock.pins
        if SELF in pin.via and pin.name not in names
    ]


def duplicate_problems(lock: Lock) -> list[str]:
    problems = []
    for name, pins in lock.by_name().items():
        for env in SAMPLE_ENVS:
            hits = [str(p.req) for p in pins if p.applies(env)]
            if len(hits) > 1:
                problems.append(
                    f"{name}: several pins apply on {env['python_version']}, "
                    f"{env['sys_platform']}: {hits}"
                )
                break
    return problems


def hash_problems(lock: Lock) -> list[str]:
    return [f"{pin.req} has no --hash" for pin in lock.pins if not pin.hashes]


def closure_problems(reqs: list[Requirement], lock: Lock) -> list[str]:
    """Installed with --no-deps, the lock must hold every dependency itself: walk the
    installed metadata from the declared requirements (with their extras) on this Python."""
    pins = {n: [p for p in ps if p.applies()] for n, ps in lock.by_name().items()}
    problems = []
    todo = [(r, "fllm-cli") for r in reqs]
    seen: set[tuple[str, frozenset[str]]] = set()
    while todo:
        req, parent = todo.pop()
        name = canonicalize_name(req.name)
        if req.marker is not None and not any(
            req.marker.evaluate({"extra": e}) for e in ({""} | _extras_of(parent))
        ):
            continue
        here = pins.get(name, [])
        if not here:
            problems.append(f"{parent} needs {req}, which the lock lacks for this Python")
            continue
        if not req.specifier.contains(here[0].version, prereleases=True):
            problems.append(f"{parent} needs {req}, the lock pins {here[0].req}")
        key = (name, frozenset(req.extras))
        if key in seen:
            continue
        seen.add(key)
        try:
            subreqs = md.requires(name) or []
        except md.PackageNotFoundError:
            continue  # reported by test_installed_versions_match_lock
        tag = f"{name}[{','.join(sorted(req.extras))}]" if req.extras else name
        todo += [(Requirement(s), tag) for s in subreqs]
    return problems


def _extras_of(parent: str) -> set[str]:
    m = re.search(r"\[(.*)\]$", parent)
    return set(m.group(1).split(",")) - {""} if m else set()


def installed_problems(lock: Lock) -> list[str]:
    problems = []
    for pin in lock.pins:
        if not pin.applies():
            continue
        try:
            have = md.version(pin.req.name)
        except md.PackageNotFoundError:
            problems.append(f"{pin.req.name} is locked but not installed: run make install")
            continue
        if Version(have) != pin.version:
            problems.append(f"{pin.req.name} {have} is installed, the lock says {pin.version}")
    return problems


# ---- the tests, on the repository's real files ----


def _ok(problems: list[str]) -> None:
    assert not problems, "\n".join(problems)


@pytest.fixture(scope="module")
def makefile() -> str:
    return (ROOT / "Makefile").read_text()


@pytest.fixture(scope="module")
def pyproject() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text())


@pytest.fixture(scope="module")
def main_lock() -> Lock:
    return parse_lock((ROOT / MAIN_LOCK).read_text())


@pytest.fixture(scope="module")
def nodeps_lock() -> Lock:
    return parse_lock((ROOT / NODEPS_LOCK).read_text())


@pytest.fixture(scope="module")
def reqs(pyproject: dict, makefile: str) -> list[Requirement]:
    return declared(pyproject, re.findall(r"--extra (\S+)", make_var(makefile, "LOCK_ARGS")))


def test_headers_match_make_lock(makefile: str, main_lock: Lock, nodeps_lock: Lock) -> None:
    _ok(header_problems(main_lock, make_var(makefile, "LOCK_ARGS")))
    _ok(header_problems(nodeps_lock, make_var(makefile, "NODEPS_LOCK_ARGS")))
    assert f"--output-file {MAIN_LOCK}" in make_var(makefile, "LOCK_ARGS")
    assert f"--output-file {NODEPS_LOCK}" in make_var(makefile, "NODEPS_LOCK_ARGS")


def test_lock_covers_every_extra(pyproject: dict, makefile: str) -> None:
    _ok(extras_problems(pyproject, make_var(makefile, "LOCK_ARGS")))


def test_declared_pinned_in_range(reqs: list[Requirement], main_lock: Lock) -> None:
    _ok(range_problems(reqs, main_lock))


def test_no_stale_direct_pins(reqs: list[Requirement], main_lock: Lock) -> None:
    _ok(stale_problems(reqs, main_lock))


def test_nodeps_lock_holds_exactly_the_nodeps_packages(makefile: str, nodeps_lock: Lock) -> None:
    wanted = {canonicalize_name(n) for n in make_var(makefile, "NODEPS").split()}
    assert set(nodeps_lock.by_name()) == wanted


@pytest.mark.parametrize("lock_name", [MAIN_LOCK, NODEPS_LOCK])
def test_one_hashed_pin_per_package_and_environment(lock_name: str) -> None:
    lock = parse_lock((ROOT / lock_name).read_text())
    assert lock.pins
    _ok(duplicate_problems(lock))
    _ok(hash_problems(lock))


def test_lock_is_closed_under_dependencies(reqs: list[Requirement], main_lock: Lock) -> None:
    _ok(closure_problems(reqs, main_lock))


def test_installed_versions_match_lock(main_lock: Lock, nodeps_lock: Lock) -> None:
    _ok(installed_problems(main_lock) + installed_problems(nodeps_lock))


# ---- each check catches what it is for ----


def test_checks_catch_a_broken_setup(pyproject: dict, main_lock: Lock) -> None:
    reqs = declared(pyproject, ["dev", "local", "server"])
    pin = next(p for p in main_lock.pins if p.name == "rich" and p.applies())
    bad_range = [*reqs, Requirement(f"rich<{pin.version}")]
    assert range_problems(bad_range, main_lock)
    assert range_problems([*reqs, Requirement("no-such-dist-xyz>=1")], main_lock)
    assert stale_problems([r for r in reqs if r.name != "rich"], main_lock)
    assert header_problems(main_lock, "pyproject.toml --output-file requirements.lock")
    assert extras_problems(pyproject, "pyproject.toml --extra dev")
    doubled = Lock(main_lock.command, [*main_lock.pins, pin])
    assert duplicate_problems(doubled)
    assert hash_problems(Lock("", [Pin(Requirement("rich==1.0"), [])]))
    without = Lock(main_lock.command, [p for p in main_lock.pins if p.name != "markdown-it-py"])
    assert closure_problems(reqs, without)
    bumped = Lock("", [Pin(Requirement(f"rich=={pin.version}.1"), ["x"])])
    assert installed_problems(bumped)

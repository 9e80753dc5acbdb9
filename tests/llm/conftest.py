"""Shared fixtures for the model back-end tests: an isolated FLLM_HOME, free ports."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest


@pytest.fixture(autouse=True)
def _isolated_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Keep every cache file a test writes inside its own temporary folder."""
    home = tmp_path / "fllm-home"
    monkeypatch.setenv("FLLM_HOME", str(home))
    monkeypatch.delenv("FLLM_NO_CACHE", raising=False)
    monkeypatch.delenv("FLLM_LOCAL_SCORING", raising=False)
    return home


@pytest.fixture
def free_port() -> int:
    """Return a TCP port on 127.0.0.1 nobody listens on right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])

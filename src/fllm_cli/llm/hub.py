"""Model files named on the Hugging Face Hub, downloaded once into fllm's cache and reused.

``local:hf:OWNER/REPO[@REVISION]/PATH/FILE.gguf[#sha256=HEX]`` names one file of a model
repository; :func:`parse_hub_file` reads the part after ``local:``. :func:`fetch` returns the file
on disk:

* a copy already in the cache is used as it is, with no network at all (a branch such as ``main``
  is not checked for updates; pin a commit with ``@REVISION`` for a run that never changes);
* otherwise it is downloaded with ``huggingface_hub.hf_hub_download`` (resumable, to a temporary
  file then renamed, with a progress bar when stderr is a terminal), after one quick request for
  the file's metadata so that a wrong name or no network fails at once, on one line;
* with ``#sha256=HEX`` the file must have that digest; a fresh download that does not is removed.

The cache is ``$FLLM_HOME/models`` in the Hugging Face hub layout
(``models--OWNER--REPO/{blobs,refs,snapshots}``), so the ``hf`` tools can fill and clean it with
``--cache-dir``. ``FLLM_OFFLINE=1`` (or ``HF_HUB_OFFLINE=1``) forbids the network: only cached
files are used. ``HF_TOKEN`` is sent for private or gated repositories. ``FLLM_HF_ENDPOINT`` (or
``HF_ENDPOINT``) points at a mirror instead of https://huggingface.co.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fllm_cli.errors import BackendError, FllmError, UsageError
from fllm_cli.keystore import fllm_home

__all__ = [
    "HF_PREFIX",
    "SYNTAX",
    "HubFile",
    "cached_file",
    "fetch",
    "hub_endpoint",
    "is_hub_spec",
    "models_dir",
    "offline",
    "parse_hub_file",
]

HF_PREFIX = "hf:"
SYNTAX = "local:hf:OWNER/REPO[@REVISION]/FILE.gguf[#sha256=HEX]"
EXAMPLE = "local:hf:Qwen/Qwen2.5-0.5B-Instruct-GGUF/qwen2.5-0.5b-instruct-q4_k_m.gguf"
DEFAULT_ENDPOINT = "https://huggingface.co"
DEFAULT_REVISION = "main"
TIMEOUT = 10.0  # seconds the hub may take to answer a request (and between chunks of a download)
_TRUE = ("1", "true", "yes", "on")

# Hub names: letters, digits, "-", "_", "." (not first or last), at most 96, no "--" or "..".
_NAME = re.compile(r"[A-Za-z0-9](?:[\w.-]{0,94}[A-Za-z0-9])?")
_REVISION = re.compile(r"[\w][\w.-]{0,199}")
_COMMIT = re.compile(r"[0-9a-f]{40}")
_SHA256 = re.compile(r"[0-9a-f]{64}")


@dataclass(frozen=True)
class HubFile:
    """One file of a model repository on the hub, at a revision, maybe with its digest."""

    repo: str  # OWNER/REPO
    filename: str  # path inside the repository, "/"-separated
    revision: str = DEFAULT_REVISION
    sha256: str | None = None

    def __str__(self) -> str:
        at = "" if self.revision == DEFAULT_REVISION else f"@{self.revision}"
        owner, name = self.repo.split("/")
        return f"hf:{owner}/{name}{at}/{self.filename}"

    @property
    def folder(self) -> str:
        """Return the repository's folder in the hub cache layout."""
        return "models--" + self.repo.replace("/", "--")


def is_hub_spec(text: str | None) -> bool:
    """Return whether a ``local:`` argument names a hub file (``hf:...``)."""
    return bool(text) and str(text).startswith(HF_PREFIX)


def _bad(text: str, why: str) -> UsageError:
    return UsageError(f"bad hub model '{text}': {why}", hint=f"write {SYNTAX}, e.g. {EXAMPLE}")


def _check_name(text: str, kind: str, name: str) -> None:
    if not _NAME.fullmatch(name) or "--" in name or ".." in name or name.endswith(".git"):
        raise _bad(text, f"'{name}' is not a valid {kind} name")


def parse_hub_file(text: str) -> HubFile:
    """Read ``hf:OWNER/REPO[@REVISION]/PATH.gguf[#sha256=HEX]``; a malformed one is a UsageError."""
    body = text[len(HF_PREFIX) :] if text.startswith(HF_PREFIX) else text
    body, hashed, digest = body.strip().partition("#")
    sha256 = None
    if hashed:
        algorithm, _, value = digest.partition("=")
        sha256 = value.strip().lower()
        if algorithm.strip().lower() != "sha256" or not _SHA256.fullmatch(sha256):
            raise _bad(text, "the digest is written #sha256= and 64 hex digits")
    parts = body.split("/")
    if len(parts) < 3 or not all(parts):
        raise _bad(text, "it needs OWNER/REPO/FILE")
    owner, name_at, *path = parts
    name, at, revision = name_at.partition("@")
    _check_name(text, "user or organisation", owner)
    _check_name(text, "repository", name)
    if at and not _REVISION.fullmatch(revision):
        raise _bad(text, f"'{revision}' is not a revision (a branch, tag or commit)")
    if any(part in (".", "..") or "\\" in part for part in path):
        raise _bad(text, "the file path may not contain '.', '..' or '\\'")
    filename = "/".join(path)
    if not filename.lower().endswith(".gguf"):
        raise _bad(text, f"'{filename}' is not a .gguf file")
    return HubFile(f"{owner}/{name}", filename, revision or DEFAULT_REVISION, sha256)


# ---------------------------------------------------------------- settings


def models_dir() -> Path:
    """Return the folder downloaded models are kept in: ``$FLLM_HOME/models``."""
    return fllm_home() / "models"


def offline() -> str | None:
    """Return the variable that forbids network access (``FLLM_OFFLINE``, ``HF_HUB_OFFLINE``)."""
    for name in ("FLLM_OFFLINE", "HF_HUB_OFFLINE"):
        if os.environ.get(name, "").strip().lower() in _TRUE:
            return name
    return None


def hub_endpoint() -> str:
    """Return the hub's address: ``$FLLM_HF_ENDPOINT``, ``$HF_ENDPOINT``, else huggingface.co."""
    raw = os.environ.get("FLLM_HF_ENDPOINT") or os.environ.get("HF_ENDPOINT") or DEFAULT_ENDPOINT
    return raw.strip().rstrip("/")


# ---------------------------------------------------------------- the cache


def cached_file(ref: HubFile, root: Path | None = None) -> Path | None:
    """Return the cached copy of ``ref`` (no network), or None.

    The hub layout: ``refs/BRANCH`` holds a commit id, ``snapshots/COMMIT/PATH`` is the file
    (a link to ``blobs/ETAG``).
    """
    folder = (root or models_dir()) / ref.folder
    commit = ref.revision
    if not _COMMIT.fullmatch(commit):
        try:
            commit = (folder / "refs" / ref.revision).read_text(encoding="utf-8").strip()
        except (OSError, UnicodeDecodeError):
            return None
        if not _COMMIT.fullmatch(commit):
            return None
    path = folder / "snapshots" / commit / Path(*ref.filename.split("/"))
    return path if path.is_file() else None


def _sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        while chunk := handle.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()


def _digest_matches(ref: HubFile, path: Path) -> tuple[bool, str]:
    """Check ``path`` against ``ref.sha256``; a blob named by its sha256 is not read again."""
    if ref.sha256 is None or path.resolve().name == ref.sha256:
        return True, ref.sha256 or ""
    actual = _sha256_of(path)
    return actual == ref.sha256, actual


# ---------------------------------------------------------------- fetching


def fetch(ref: HubFile, root: Path | None = None) -> Path:
    """Return ``ref`` on disk: the cached copy, else a fresh download (see the module doc)."""
    root = root or models_dir()
    path = cached_file(ref, root)
    if path is not None:
        ok, actual = _digest_matches(ref, path)
        if not ok:
            raise BackendError(
                f"the cached {ref} has sha256 {actual}, not {ref.sha256}",
                hint=f"pin the revision with @COMMIT, or delete {root / ref.folder} to download "
                "it again",
            )
        return path
    blocked = offline()
    if blocked:
        raise BackendError(
            f"{ref} is not in the model cache, and {blocked}=1 forbids downloading it",
            hint=f"run once without {blocked} to download it into {root}",
        )
    return _download(ref, root)


def _import_hub() -> Any:
    try:
        import huggingface_hub
    except ImportError:
        raise BackendError(
            "downloading a model from the hub needs huggingface_hub, which is not installed",
            hint="pip install huggingface_hub, or download the file and use local:PATH.gguf",
        ) from None
    return huggingface_hub


def _download(ref: HubFile, root: Path) -> Path:
    hub = _import_hub()
    endpoint = hub_endpoint()
    try:
        # One metadata request without retries first, so that a wrong name or no network fails
        # at once (hf_hub_download retries with backoff, up to a minute per try); it also gives
        # the size for the note and the blob's name.
        url = hub.hf_hub_url(ref.repo, ref.filename, revision=ref.revision, endpoint=endpoint)
        meta = hub.get_hf_file_metadata(url, timeout=TIMEOUT, endpoint=endpoint)
        blob = root / ref.folder / "blobs" / str(meta.etag)
        had_blob = meta.etag is not None and blob.exists()
        if not had_blob:  # else the hub only links the blob it has under this revision
            _note(f"downloading {ref}{_size(meta.size)} into {root}")
        local = hub.hf_hub_download(
            ref.repo,
            ref.filename,
            revision=ref.revision,
            cache_dir=root,
            endpoint=endpoint,
            etag_timeout=TIMEOUT,
            library_name="fllm",
            tqdm_class=_progress_bar(hub, ref.filename.rsplit("/", 1)[-1]),
        )
    except FllmError:
        raise
    except Exception as exc:  # the hub's, httpx's and the file system's errors
        raise _translate(exc, ref, endpoint) from None
    path = Path(local)
    ok, actual = _digest_matches(ref, path)
    if not ok:
        blob_file = path.resolve()
        path.unlink(missing_ok=True)  # the snapshot entry
        if not had_blob:  # the blob came with this download: nothing else uses it
            blob_file.unlink(missing_ok=True)
        raise BackendError(
            f"downloaded {ref} has sha256 {actual}, not {ref.sha256}; the file was removed",
            hint="check the digest, or pin the revision it belongs to with @COMMIT",
        )
    return path


def _translate(exc: Exception, ref: HubFile, endpoint: str) -> FllmError:
    """Turn a download failure into one line with a hint (usage errors for wrong names)."""
    from huggingface_hub import errors

    host = endpoint.split("://", 1)[-1]
    status = getattr(getattr(exc, "response", None), "status_code", None)
    page = f"{endpoint}/{ref.repo}/tree/{ref.revision}"
    if isinstance(exc, errors.GatedRepoError):
        return BackendError(
            f"{ref.repo} is a gated repository on {host}",
            hint="accept its terms on its page and set HF_TOKEN to a token of that account",
        )
    if isinstance(exc, errors.RepositoryNotFoundError):
        return UsageError(
            f"no model repository '{ref.repo}' on {host}",
            hint="check the name; a private repository also needs HF_TOKEN",
        )
    if isinstance(exc, errors.RevisionNotFoundError):
        return UsageError(f"no revision '{ref.revision}' in {ref.repo} on {host}", hint=page)
    if isinstance(exc, errors.RemoteEntryNotFoundError) or status == 404:
        return UsageError(
            f"no file '{ref.filename}' in {ref.repo} ({ref.revision}) on {host}",
            hint=f"the files are listed at {page}",
        )
    if status is not None:
        return BackendError(
            f"{host} answered HTTP {status} for {ref}",
            retryable=status in (408, 429) or status >= 500,
            hint="try again later" if status >= 500 else "is HF_TOKEN right?",
        )
    name = type(exc).__name__
    if isinstance(exc, errors.OfflineModeIsEnabled):
        return BackendError(
            f"cannot download {ref}: the hub is switched off (HF_HUB_OFFLINE)",
            hint="unset HF_HUB_OFFLINE to download it",
        )
    if "Connect" in name or "Timeout" in name or "Network" in name or "Protocol" in name:
        return BackendError(
            f"cannot reach {host} to download {ref}: {_first_line(exc) or name}",
            retryable=True,
            hint="check the network (FLLM_OFFLINE=1 runs on cached models only)",
        )
    return BackendError(f"cannot download {ref}: {_first_line(exc) or name}")


def _first_line(exc: BaseException) -> str:
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    return lines[0] if lines else ""


def _size(size: int | None) -> str:
    if not size:
        return ""
    for unit, scale in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if size >= scale:
            return f" ({size / scale:.1f} {unit})"
    return f" ({size} B)"


def _progress_bar(hub: Any, label: str) -> Any:
    """Return the hub's progress bar (drawn only on a terminal), labelled, sized by ``COLUMNS``.

    tqdm asks the terminal for its size, and one that reports 0 by 0 (a fresh pseudo-terminal,
    some editors' shells) would get no bar at all.
    """
    base = hub.utils.tqdm

    class Progress(base):  # type: ignore[misc, valid-type]
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            size = shutil.get_terminal_size()
            kwargs.setdefault("ncols", size.columns)
            kwargs.setdefault("nrows", size.lines)
            kwargs["desc"] = label  # the hub labels plain downloads with the URL
            super().__init__(*args, **kwargs)

    return Progress


def _note(message: str) -> None:
    """Say what is happening on a terminal (the hub's progress bar follows the same rule)."""
    if sys.stderr.isatty():
        sys.stderr.write(f"fllm: {message}\n")
        sys.stderr.flush()

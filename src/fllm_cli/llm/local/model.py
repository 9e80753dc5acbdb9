"""The local back end: a GGUF model run in process, loaded on first use, shared by instances."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fllm_cli.errors import BackendError
from fllm_cli.llm import hub
from fllm_cli.llm.base import (
    ChoiceRequest,
    ChoiceResult,
    GenerateRequest,
    Generation,
    Model,
    Usage,
)
from fllm_cli.llm.cache import cache_for
from fllm_cli.llm.local.binding import prepare_llama_cpp, quiet_stderr, require_llama_cpp
from fllm_cli.llm.local.cores import threads
from fllm_cli.llm.local.engine import Engine, Stats, normalise
from fllm_cli.llm.local.files import resolve_gguf
from fllm_cli.llm.local.load import load_llama
from fllm_cli.llm.local.prompt import (
    CHOICE_SYSTEM,
    NEUTRAL,
    ChatTemplate,
    blank_options,
    generic_choice_prompt,
    unlisted,
)
from fllm_cli.llm.local.settings import (
    DEFAULT_LISTING,
    DEFAULT_SCORING,
    listing_mode,
    scoring_mode,
    unpack_mode,
)
from fllm_cli.llm.options import ModelOptions
from fllm_cli.resources import exists


@dataclass
class LocalModel(Model):
    """A GGUF model run in process; loaded on first use, shared by every instance."""

    path: Path
    scoring: str = DEFAULT_SCORING
    listing: str = DEFAULT_LISTING
    cache: Any = None
    name: str = "local"
    stats: Stats = field(default_factory=Stats)
    _engine: Engine | None = None
    _chat: ChatTemplate | None = None
    _load_seconds: float = 0.0
    _grammars: dict[str, Any] = field(default_factory=dict)
    supports_grammar: bool = True

    def _ready(self) -> tuple[Engine, ChatTemplate]:
        if self._engine is None or self._chat is None:
            loaded = load_llama(self.path)
            self._load_seconds = loaded.load_seconds
            self._engine = Engine(loaded.llm, self.stats)
            self._chat = ChatTemplate(loaded.llm)
        self._engine.fit_threads(threads())
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
            # A tiny model copies from a listing: every listed option becomes about as likely,
            # and the prior alone decides (the rarest text wins). Without it the question is
            # what is read, and the prompt is shorter; bench/local_quality.py and
            # bench/local_domains.py measure both.
            prompt = request.prompt
            if self.listing == "drop":
                prompt = unlisted(prompt, request.options) or prompt
            given, priors = engine.text_scores_and_priors(
                self._tokens(CHOICE_SYSTEM, prompt), neutral, request.options
            )
            return [g - p for g, p in zip(given, priors)]
        raw = normalise(engine.label_scores(self._tokens(CHOICE_SYSTEM, request.prompt), n))
        if mode == "raw":
            return raw
        blank = blank_options(request.prompt, request.options) or generic_choice_prompt(n)
        prior = normalise(engine.label_scores(self._tokens(CHOICE_SYSTEM, blank), n))
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
            with quiet_stderr():
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


def make_local_model(path: str | None, options: ModelOptions, cache: Any = None) -> Model:
    """Build the local back end: find the file and llama-cpp-python now, load on first use."""
    if hub.is_hub_spec(path):
        hub.parse_hub_file(str(path))  # a malformed name fails first,
        require_llama_cpp()  # and a missing llama-cpp-python before a download it cannot use
    target = resolve_gguf(path)
    require_llama_cpp()
    unpack_mode()  # a misspelt setting fails now, not at the first choice
    name = f"local:{path}" if path else "local"
    return LocalModel(
        path=target, scoring=scoring_mode(), listing=listing_mode(), cache=cache, name=name
    )


def factory(arg: str, options: ModelOptions) -> Model:
    """Build ``local``, ``local:PATH.gguf`` or ``local:hf:...`` (the registry's ``local`` row)."""
    return make_local_model(arg or None, options, cache=cache_for(options))

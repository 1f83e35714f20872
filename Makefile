# The two set-up commands of the README: `make demo` and `make test`. Both create .venv on first use.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
# llama-cpp-python has no binary wheel. packaging/install_llama_cpp.py compiles only what the runtime loads
# (libllama and ggml's CPU backend: no common library, HTTP client, multimodal library, tools or server),
# on every core, with a progress line; the README gives the measured time. Keep in step with pyproject.
LLAMA_CPP := llama-cpp-python>=0.3.36,<0.4

.PHONY: demo test bench peers

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip

$(VENV)/.llama-installed: packaging/install_llama_cpp.py packaging/llama_cpp_minimal.cmake | $(BIN)/python
	$(BIN)/python packaging/install_llama_cpp.py '$(LLAMA_CPP)'
	touch $@

$(VENV)/.demo-installed: pyproject.toml $(VENV)/.llama-installed
	$(BIN)/pip install -e '.[local]'
	touch $@

$(VENV)/.test-installed: pyproject.toml $(VENV)/.llama-installed
	$(BIN)/pip install -e '.[dev]'
	touch $@

# Third-party peers the tests talk to: the PyPI time server (in a venv of its own), and from npm the MCP
# Inspector CLI, the reference server `server-everything` and the A2A JS SDK (the tests that need npm are
# skipped, with the reason, where it is missing).
TIME_SERVER := .venvs/mcp-server-time
INSPECTOR := .venvs/inspector
EVERYTHING := .venvs/server-everything
A2A_JS := .venvs/a2a-js

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

$(A2A_JS)/.installed:
	if command -v npm >/dev/null; then \
		npm install --prefix $(A2A_JS) --no-audit --no-fund --silent @a2a-js/sdk@1.3.0 && touch $@; \
	else echo "npm not found: the A2A JS SDK test will be skipped"; fi

peers: $(TIME_SERVER)/bin/mcp-server-time $(INSPECTOR)/.installed $(EVERYTHING)/.installed $(A2A_JS)/.installed

# A real task on the bundled model: the user names an order, the program looks it up in its table and
# tells the user its status and date (examples/order_status.pal).
demo: $(VENV)/.demo-installed
	$(BIN)/pal run examples/order_status.pal --no-input --message "Hi! Where is my order 2718?"

test: $(VENV)/.test-installed peers
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	PAL_TEST_MCP_INSPECTOR="$$( [ -x $(INSPECTOR)/node_modules/.bin/mcp-inspector ] && echo $(CURDIR)/$(INSPECTOR)/node_modules/.bin/mcp-inspector )" \
		$(BIN)/pytest

bench: $(VENV)/.test-installed
	for bench in benchmarks/bench_*.py; do echo "== $$bench"; $(BIN)/python $$bench || exit 1; done

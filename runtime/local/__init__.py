"""The bundled local model: SmolLM2-135M-Instruct through llama-cpp-python, constrained per turn.

`turns` works out what one turn of a playbook may contain (from pal_core.flow), `grammar` writes it as
a GBNF grammar, `fewshot` builds the prompt's example turns from the program, `hooks` gives both to
the runtime, `model` is the `local/...` provider behind litellm, `gbnf_check` a pure-Python GBNF
recognizer and `llama_grammar` llama.cpp's own grammar machinery. Nothing here imports
llama-cpp-python or litellm until a model is used. See docs/local-model.md.
"""

"""The bundled local model: SmolLM2-135M-Instruct through llama-cpp-python, constrained per turn.

`grammar` builds the GBNF grammar of a turn from the running program, `fewshot` the example turns of
its prompt, `model` the `local/...` provider behind litellm, `gbnf_check` a pure-Python GBNF
recognizer for tests. Nothing here imports llama-cpp-python or litellm until a model is used.
"""

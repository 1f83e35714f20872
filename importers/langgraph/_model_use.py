"""What a node's Python reaches for besides its state: chat models, and LangGraph's run context.

Read from the function itself, never by running it: the names its code (and the code nested in it) uses,
looked up in its globals and closure. A name bound to a LangChain chat model (or a runnable built on one:
`llm.bind_tools(tools)`, `prompt | llm`), to a chat model class, to `init_chat_model`, or to a function of
the user's own package whose code reaches one (followed a few calls deep) means the node calls a model in
Python. A name bound to `get_config`, `get_stream_writer`, `get_store` or `get_runtime` means it reads
LangGraph's run context from inside.
"""

from __future__ import annotations

import inspect
import sys
from collections.abc import Iterator
from types import CodeType, ModuleType
from typing import Any

from importers.langgraph._agents import closure_vars

_CONTEXT_READERS = (
    ("langgraph.config", "get_config"),
    ("langgraph.config", "get_stream_writer"),
    ("langgraph.config", "get_store"),
    ("langgraph.runtime", "get_runtime"),
)
_MODEL_FACTORIES = (
    ("langchain.chat_models", "init_chat_model"),
    ("langchain.chat_models.base", "init_chat_model"),
)
_DEPTH = 3
"""Calls into the user's own functions followed when looking for a model."""


def code_names(code: CodeType) -> Iterator[str]:
    """The global and attribute names of a code object and of the code nested in it."""
    yield from code.co_names
    for constant in code.co_consts:
        if isinstance(constant, CodeType):
            yield from code_names(constant)


def _referenced(function: Any) -> Iterator[tuple[str, Any]]:
    """(name, value) of what the function's code names in its globals and closure, and the attributes it
    names of the modules it uses."""
    code = getattr(function, "__code__", None)
    if code is None:
        return
    names = set(code_names(code))
    namespace = getattr(function, "__globals__", {}) or {}
    cells = closure_vars(function)
    for name in sorted(names | set(code.co_freevars)):
        if name in cells:
            yield name, cells[name]
        elif name in namespace:
            value = namespace[name]
            yield name, value
            if isinstance(value, ModuleType):
                for attribute in sorted(names):
                    if hasattr(value, attribute):
                        yield f"{name}.{attribute}", getattr(value, attribute)


def reads_run_context(function: Any) -> list[str]:
    """The LangGraph functions the node calls to read its run context (`get_stream_writer`, ...)."""
    readers = []
    for module_name, function_name in _CONTEXT_READERS:
        module = sys.modules.get(module_name)
        wanted = getattr(module, function_name, None) if module is not None else None
        if wanted is None:
            continue
        if any(value is wanted for _, value in _referenced(function)):
            readers.append(function_name)
    return readers


def model_reference(function: Any) -> str | None:
    """How the node reaches a chat model, in words (`the chat model llm`), or None when it does not."""
    if "langchain_core" not in sys.modules:
        return None  # no chat model can exist in this process
    return _find_model(function, _DEPTH, set(), _package(function))


def _find_model(function: Any, depth: int, seen: set[int], package: str | None) -> str | None:
    if id(function) in seen:
        return None
    seen.add(id(function))
    for name, value in _referenced(function):
        what = _model_value(value)
        if what is not None:
            return f"{what} {name}"
        if depth > 0 and _is_own_function(value, package):
            found = _find_model(value, depth - 1, seen, package)
            if found is not None:
                return f"{found} (through {getattr(value, '__qualname__', name)})"
    return None


def _model_value(value: Any) -> str | None:
    from langchain_core.language_models.chat_models import BaseChatModel

    if isinstance(value, type) and issubclass(value, BaseChatModel):
        return "the chat model class"
    if inspect.isfunction(value) and any(
        getattr(value, "__module__", None) == module and value.__name__ == name
        for module, name in _MODEL_FACTORIES
    ):
        return "the model factory"
    if _holds_chat_model(value, 4):
        return "the chat model"
    return None


def _holds_chat_model(value: Any, depth: int) -> bool:
    from langchain_core.language_models.chat_models import BaseChatModel
    from langchain_core.runnables import Runnable

    if isinstance(value, BaseChatModel):
        return True
    if depth <= 0 or not isinstance(value, Runnable):
        return False
    parts: list[Any] = []
    for attribute in ("bound", "first", "last", "default", "runnable"):
        part = getattr(value, attribute, None)
        if part is not None:
            parts.append(part)
    parts.extend(getattr(value, "middle", None) or ())
    parts.extend((getattr(value, "steps__", None) or {}).values())
    return any(_holds_chat_model(part, depth - 1) for part in parts)


def _package(function: Any) -> str | None:
    module = getattr(function, "__module__", None)
    return module.split(".", 1)[0] if isinstance(module, str) else None


def _is_own_function(value: Any, package: str | None) -> bool:
    """A plain function of the user's own package (the node's top-level package), not a library's."""
    if package is None or not inspect.isfunction(value):
        return False
    module = getattr(value, "__module__", None)
    return isinstance(module, str) and module.split(".", 1)[0] == package


__all__ = ["code_names", "model_reference", "reads_run_context"]

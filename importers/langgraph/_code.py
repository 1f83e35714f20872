"""What a node's or router's source code says about its routing, where its annotations do not.

`Command(goto=["a", "b"])` (parallel goto), a router that returns a list of names, and the nodes a
router's `Send("node", ...)` calls name are written in the code, not in the annotations. The function's
source is read with `inspect.getsource` and parsed with `ast` (never run); a function whose source cannot
be read tells nothing, and the importer falls back to what the annotations say.
"""

from __future__ import annotations

import ast
import functools
import inspect
import textwrap
from typing import Any

_SEQUENCES = (ast.List, ast.Tuple, ast.Set, ast.ListComp, ast.SetComp, ast.GeneratorExp)


@functools.lru_cache(maxsize=256)
def _tree(function: Any) -> ast.AST | None:
    try:
        source = inspect.getsource(function)
    except (OSError, TypeError):
        return None
    try:
        return ast.parse(textwrap.dedent(source))
    except SyntaxError:
        return None


def function_tree(function: Any) -> ast.AST | None:
    """The parsed source of `function` (a module holding its definition), or None when it cannot be read."""
    return _tree(function)


def _calls(function: Any, name: str) -> list[ast.Call]:
    tree = _tree(function)
    if tree is None:
        return []
    return [node for node in ast.walk(tree) if isinstance(node, ast.Call) and _called(node) == name]


def send_targets(function: Any) -> tuple[str, ...] | None:
    """The nodes named by the function's `Send("node", ...)` calls, in order; None when it has none or
    one names its node otherwise than by a string literal."""
    found: list[str] = []
    for call in _calls(function, "Send"):
        node = call.args[0] if call.args else next((k.value for k in call.keywords if k.arg == "node"), None)
        if not isinstance(node, ast.Constant) or not isinstance(node.value, str):
            return None
        found.append(node.value)
    return tuple(dict.fromkeys(found)) or None


def returns_several(function: Any) -> bool:
    """Whether a `return` of the function gives a list, tuple or set (of destinations)."""
    tree = _tree(function)
    if tree is None:
        return False
    return any(isinstance(node, ast.Return) and isinstance(node.value, _SEQUENCES) for node in ast.walk(tree))


def gotos_several(function: Any) -> bool:
    """Whether the function writes `Command(goto=<a list, tuple or set>)`: several destinations at once."""
    for call in _calls(function, "Command"):
        for keyword in call.keywords:
            if keyword.arg == "goto" and isinstance(keyword.value, _SEQUENCES):
                elements = getattr(keyword.value, "elts", None)
                if elements is None or len(elements) > 1:
                    return True
    return False


def writes_command_goto(function: Any) -> bool:
    """Whether the function builds a `Command` with a `goto`: it routes, whatever its annotation says."""
    return any(keyword.arg == "goto" for call in _calls(function, "Command") for keyword in call.keywords)


def unfollowed_commands(function: Any) -> list[str]:
    """What the function's `Command`s do that an imported program does not follow: a `goto` to a `Send`,
    or `graph=Command.PARENT`."""
    found: list[str] = []
    for call in _calls(function, "Command"):
        for keyword in call.keywords:
            if keyword.arg == "goto" and any(
                isinstance(node, ast.Call) and _called(node) == "Send" for node in ast.walk(keyword.value)
            ):
                found.append("Command(goto=Send(...))")
            if (
                keyword.arg == "graph"
                and isinstance(keyword.value, ast.Attribute)
                and keyword.value.attr == "PARENT"
            ):
                found.append("Command(graph=Command.PARENT)")
    return list(dict.fromkeys(found))


def _called(call: ast.Call) -> str | None:
    if isinstance(call.func, ast.Name):
        return call.func.id
    if isinstance(call.func, ast.Attribute):
        return call.func.attr
    return None


def goto_combinations(function: Any) -> tuple[tuple[str, ...], ...] | None:
    """The destinations each `Command(goto=[...])` of the function writes together, when every one is a
    list of string literals (`END` counts as one); None when one is built otherwise (any combination)."""
    values = [k.value for call in _calls(function, "Command") for k in call.keywords if k.arg == "goto"]
    return _literal_lists(values)


def return_combinations(function: Any) -> tuple[tuple[str, ...], ...] | None:
    """The destinations each `return [...]` of a router gives together, when every returned list is of
    string literals; None when one is built otherwise (any combination)."""
    tree = _tree(function)
    if tree is None:
        return None
    values = [
        node.value for node in ast.walk(tree) if isinstance(node, ast.Return) and node.value is not None
    ]
    return _literal_lists(values)


def _literal_lists(values: list[ast.expr]) -> tuple[tuple[str, ...], ...] | None:
    found: list[tuple[str, ...]] = []
    for value in values:
        if not isinstance(value, _SEQUENCES):
            continue  # one destination (or whatever a call returns): not a combination
        elements = getattr(value, "elts", None)
        if elements is None:
            return None  # a comprehension: any combination
        names: list[str] = []
        for element in elements:
            if isinstance(element, ast.Constant) and isinstance(element.value, str):
                names.append(element.value)
            elif isinstance(element, ast.Name) and element.id == "END":
                names.append("__end__")
            else:
                return None
        found.append(tuple(names))
    return tuple(found)

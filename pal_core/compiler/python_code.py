"""Python blocks: give `@playbook(triggers=[...])` strings their PAL trigger ids and codes.

In markdown a Python playbook's trigger is plain text (`"When user provides a PIN"`); in PAL it is
`"T1:CND When user provides a PIN"`. Only those string literals are rewritten, in place; the rest of
the code is left byte for byte as written.
"""

from __future__ import annotations

import ast
import json

from pal_core.compiler.phrases import trigger_code
from pal_core.pysource import parse_python
from pal_core.python_blocks import TRIGGER_RE


def number_python_triggers(code: str) -> str:
    """`code` with every plain trigger string of a `@playbook` decorator written as `T<n>:<CODE> text`.

    Code that does not parse is returned unchanged; reading it later reports the syntax error.
    """
    try:
        module = parse_python(code)
    except (SyntaxError, ValueError):
        return code
    lines = code.split("\n")
    replacements: list[tuple[int, int, str]] = []
    for node in module.body:
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        for decorator in node.decorator_list:
            for element, position in _trigger_strings(decorator):
                if TRIGGER_RE.match(element.value):
                    continue
                code_name, text = trigger_code(element.value)
                start = _offset(lines, element.lineno, element.col_offset)
                end = _offset(lines, element.end_lineno or element.lineno, element.end_col_offset or 0)
                replacements.append(
                    (start, end, _literal(f"T{position}:{code_name} {text}", code[start:end]))
                )
    for start, end, literal in sorted(replacements, reverse=True):
        code = code[:start] + literal + code[end:]
    return code


def _trigger_strings(decorator: ast.expr) -> list[tuple[ast.Constant, int]]:
    """The string constants of `triggers=[...]` in a `@playbook(...)` decorator, with 1-based positions."""
    if not isinstance(decorator, ast.Call):
        return []
    target = decorator.func
    named = (isinstance(target, ast.Name) and target.id == "playbook") or (
        isinstance(target, ast.Attribute) and target.attr == "playbook"
    )
    if not named:
        return []
    found: list[tuple[ast.Constant, int]] = []
    for keyword in decorator.keywords:
        if keyword.arg != "triggers" or not isinstance(keyword.value, (ast.List, ast.Tuple)):
            continue
        for position, element in enumerate(keyword.value.elts, 1):
            if isinstance(element, ast.Constant) and isinstance(element.value, str) and element.value.strip():
                found.append((element, position))
    return found


def _offset(lines: list[str], line: int, byte_column: int) -> int:
    """The string index of (1-based line, UTF-8 byte column), as `ast` reports positions."""
    before = sum(len(text) + 1 for text in lines[: line - 1])
    return before + len(lines[line - 1].encode("utf-8")[:byte_column].decode("utf-8", errors="replace"))


def _literal(value: str, original: str) -> str:
    """A Python string literal for `value`, quoted like the literal it replaces where that is simple."""
    if original.startswith("'"):
        return repr(value)
    return json.dumps(value, ensure_ascii=False)

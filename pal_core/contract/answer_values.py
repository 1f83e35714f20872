"""Values and inline calls of a model answer, read with `json` and `ast`. Nothing is ever evaluated.

An inline call (`$x:float = Y(num=$temp)`) is handed to `ast.parse` after `$name` becomes `_name`
(one character for one, so positions stay put) and real newlines inside strings become `\\n`
escapes. Each argument keeps the text the model wrote, found through the node positions.
"""

from __future__ import annotations

import ast
import json
import math
import re
from bisect import bisect_right
from typing import Any

from pal_core.contract.errors import BAD_CALL, UNTERMINATED
from pal_core.contract.scan import DOUBLE_QUOTED, SINGLE_QUOTED
from pal_core.ir import ArgKind, Argument, Call, JsonValue, Variable

ASSIGNMENT_TARGET = re.compile(
    r"\$(?P<name>[A-Za-z_]\w*)(?:[ \t]*:[ \t]*(?P<type>[A-Za-z_][\w.]*(?:\[[^\]\n`]*\])?))?[ \t]*=(?!=)[ \t]*"
)
"""`$x = ` or `$x:type = ` in front of a call."""

_PYTHON_TOKENS = re.compile(rf"{DOUBLE_QUOTED.pattern}|{SINGLE_QUOTED.pattern}|\$(?=[A-Za-z_])", re.DOTALL)
_JSON_NAMES: dict[str, JsonValue] = {"true": True, "false": False, "null": None}
_LITERAL_STARTS = frozenset("\"'[{(-+.0123456789TFNtfn")
_SOURCE_ERRORS = (SyntaxError, ValueError, RecursionError, MemoryError, UnicodeError)


class InlineError(Exception):
    """Internal: an inline call that cannot be read, at `offset` in the text handed to `parse_call`.

    The answer parser turns it into a ContractSyntaxError with the answer's line and column.
    """

    def __init__(self, message: str, offset: int, code: str = BAD_CALL) -> None:
        super().__init__(message)
        self.message = message
        self.offset = offset
        self.code = code


def parse_value(raw: str) -> tuple[JsonValue, bool]:
    """The value of `Var[$x, raw]` or `Return[raw]`: (value, True) for a JSON or Python literal,
    else (the stripped text, False)."""
    text = raw.strip()
    if not text:
        return text, False
    first = text[0]
    if first in '"[{-0123456789tfn':
        try:
            return _JSON.decode(text), True
        except (ValueError, RecursionError):
            pass
    if first in _LITERAL_STARTS:
        try:
            tree = ast.parse(text, mode="eval")
        except _SOURCE_ERRORS:
            return text, False
        value, ok = literal_value(tree.body)
        if ok:
            return value, True
    return text, False


def literal_value(node: ast.AST) -> tuple[JsonValue, bool]:
    """The JSON-compatible value of a literal node (JSON's true/false/null included), and whether it is one."""
    if isinstance(node, ast.Constant):
        value = node.value
        if value is None or isinstance(value, (bool, int, str)):
            return value, True
        if isinstance(value, float) and math.isfinite(value):
            return value, True
        return None, False
    if isinstance(node, ast.List):
        items = []
        for element in node.elts:
            item, ok = literal_value(element)
            if not ok:
                return None, False
            items.append(item)
        return items, True
    if isinstance(node, ast.Dict):
        mapping: dict[str, Any] = {}
        for key_node, value_node in zip(node.keys, node.values, strict=True):
            if not (isinstance(key_node, ast.Constant) and isinstance(key_node.value, str)):
                return None, False
            item, ok = literal_value(value_node)
            if not ok:
                return None, False
            mapping[key_node.value] = item
        return mapping, True
    if (
        isinstance(node, ast.UnaryOp)
        and isinstance(node.op, (ast.USub, ast.UAdd))
        and isinstance(node.operand, ast.Constant)
        and type(node.operand.value) in (int, float)
    ):
        number = node.operand.value
        return (-number if isinstance(node.op, ast.USub) else number), math.isfinite(number)
    if isinstance(node, ast.Name) and node.id in _JSON_NAMES:
        return _JSON_NAMES[node.id], True
    return None, False


def parse_call(source: str, target: Variable | None = None) -> Call:
    """`[$x[:type] = ]Callee(args)` -> Call. `target` is an assignment written outside the backticks.

    Raises InlineError when the text is not a call.
    """
    assignment = ASSIGNMENT_TARGET.match(source)
    start = 0
    if assignment:
        target = Variable(name=assignment.group("name"), type=assignment.group("type"))
        start = assignment.end()
    code = source[start:]
    python, inserted = _python_source(code)
    positions = _Positions(code, python, inserted)
    try:
        tree = ast.parse(python, mode="eval")
    except SyntaxError as error:
        offset = positions.from_syntax_error(error)
        code = UNTERMINATED if error.msg.startswith("unterminated") else BAD_CALL
        raise InlineError(f"the inline call is not valid Python: {error.msg}", start + offset, code) from None
    except _SOURCE_ERRORS:
        raise InlineError("the inline call is not valid Python", start) from None
    node = tree.body
    if not isinstance(node, ast.Call):
        raise InlineError('expected a call such as `Say("user", "...")`', start)
    name = _callee_name(node.func, positions)
    if name is None:
        offset = positions.node_start(node.func)
        raise InlineError(
            "the callee of an inline call must be a name such as `Say` or `Agent.Playbook`", start + offset
        )
    arguments = tuple(_argument(item, positions) for item in _in_source_order(node))
    return Call(name=name, arguments=arguments, result=target)


def _in_source_order(call: ast.Call) -> list[ast.expr | ast.keyword]:
    items: list[ast.expr | ast.keyword] = [*call.args, *call.keywords]
    if call.args and call.keywords:  # `f(a=1, *rest)` is valid Python: order by position
        items.sort(key=lambda item: (item.lineno, item.col_offset))
    return items


def _argument(item: ast.expr | ast.keyword, positions: _Positions) -> Argument:
    name: str | None = None
    node: ast.AST = item
    if isinstance(item, ast.keyword):
        if item.arg is None:  # `**mapping`
            return Argument(text=positions.text_of(item), kind=ArgKind.EXPRESSION)
        name = item.arg
        if positions.written_with_dollar(item):
            name = name[1:]
        node = item.value
    text = positions.text_of(node)
    if isinstance(node, ast.Name) and positions.written_with_dollar(node):
        return Argument(text=text, kind=ArgKind.VARIABLE, name=name, value=node.id[1:])
    value, ok = literal_value(node)
    if ok:
        return Argument(text=text, kind=ArgKind.LITERAL, name=name, value=value)
    return Argument(text=text, kind=ArgKind.EXPRESSION, name=name)


def _callee_name(node: ast.AST, positions: _Positions) -> str | None:
    if isinstance(node, ast.Name):
        return None if positions.written_with_dollar(node) else node.id
    if isinstance(node, ast.Attribute):
        head = _callee_name(node.value, positions)
        return None if head is None else f"{head}.{node.attr}"
    return None


def _python_source(code: str) -> tuple[str, list[int]]:
    """`code` for `ast`: `$name` -> `_name` outside strings, real newlines in strings -> `\\n`.

    Returns the source and the (sorted) indexes in it of the characters added by escaping.
    """
    if "$" not in code and "\n" not in code:
        return code, []
    parts: list[str] = []
    inserted: list[int] = []
    last = 0
    for token in _PYTHON_TOKENS.finditer(code):
        text = token.group()
        if text == "$":
            parts.append(code[last : token.start()])
            parts.append("_")
            last = token.end()
        elif "\n" in text:
            parts.append(code[last : token.start()])
            # The token starts at token.start() + len(inserted) in the source; each escaped newline
            # adds one character (the `n` after the backslash that replaces it).
            base = token.start() + len(inserted)
            index = text.find("\n")
            escaped = 0
            while index >= 0:
                inserted.append(base + index + escaped + 1)
                escaped += 1
                index = text.find("\n", index + 1)
            parts.append(text.replace("\n", "\\n"))
            last = token.end()
    parts.append(code[last:])
    return "".join(parts), inserted


class _Positions:
    """Maps `ast` positions in the Python source back to the code the model wrote."""

    __slots__ = ("_code", "_direct", "_inserted", "_line_starts", "_python")

    def __init__(self, code: str, python: str, inserted: list[int]) -> None:
        self._code = code
        self._python = python
        self._inserted = inserted
        self._line_starts: list[int] | None = None
        # One ASCII line, nothing escaped: an ast column is the index in the code (the common case).
        self._direct = not inserted and "\n" not in python and python.isascii()

    def _python_index(self, lineno: int, column: int, column_in_bytes: bool) -> int:
        if self._direct:
            return min(max(column, 0), len(self._python))
        if self._line_starts is None:
            self._line_starts = [0] + [found.end() for found in re.finditer("\n", self._python)]
        line = max(1, min(lineno, len(self._line_starts)))
        start = self._line_starts[line - 1]
        if column_in_bytes and column:
            end = self._line_starts[line] - 1 if line < len(self._line_starts) else len(self._python)
            text = self._python[start:end]
            if not text.isascii():
                column = len(text.encode()[:column].decode(errors="ignore"))
        return min(start + max(column, 0), len(self._python))

    def _code_index(self, python_index: int) -> int:
        return python_index - bisect_right(self._inserted, python_index)

    def node_start(self, node: ast.AST) -> int:
        """Where `node` starts in the code."""
        if self._direct:
            return node.col_offset  # type: ignore[attr-defined,no-any-return]
        return self._code_index(self._python_index(node.lineno, node.col_offset, True))  # type: ignore[attr-defined]

    def node_end(self, node: ast.AST) -> int:
        """Where `node` ends in the code."""
        if self._direct:
            return node.end_col_offset  # type: ignore[attr-defined,no-any-return]
        return self._code_index(self._python_index(node.end_lineno, node.end_col_offset, True))  # type: ignore[attr-defined]

    def text_of(self, node: ast.AST) -> str:
        """The code the model wrote for `node`."""
        return self._code[self.node_start(node) : self.node_end(node)]

    def written_with_dollar(self, node: ast.AST) -> bool:
        """Whether the name at `node` was written `$name`."""
        start = self.node_start(node)
        return self._code[start : start + 1] == "$"

    def from_syntax_error(self, error: SyntaxError) -> int:
        """Where a SyntaxError points in the code (its offset counts characters from 1)."""
        if error.lineno is None or error.offset is None:
            return 0
        index = self._python_index(error.lineno, error.offset - 1, False)
        return min(self._code_index(index), len(self._code))


def _reject(constant: str) -> float:
    raise ValueError(f"{constant} is not a JSON value")


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"{text} is out of range")
    return value


# Built once: json.loads with options builds a decoder on every call. Real newlines in strings are
# allowed (strict=False); NaN, Infinity and 1e999 are not JSON values.
_JSON = json.JSONDecoder(strict=False, parse_constant=_reject, parse_float=_finite_float)

"""Python playbooks declared in an agent's ```python blocks (`@playbook` functions), read with `ast`.

The code is only parsed here, never run: the runtime loads it later in the agent's namespace.
"""

from __future__ import annotations

import ast
import inspect
from dataclasses import dataclass
from typing import cast

from pal_core.ir import Metadata, Parameter, Playbook, PlaybookKind, Trigger
from pal_core.pysource import literal_eval, parse_python
from pal_core.triggers import TRIGGER_RE

__all__ = ["TRIGGER_RE", "CodeProblem", "python_playbooks"]


@dataclass(frozen=True, slots=True)
class CodeProblem:
    """A problem in a python block, relative to the block's first code line."""

    message: str
    line: int
    """1-based line within the code."""
    column: int
    """1-based column."""


def python_playbooks(
    code: str, block_index: int, module: ast.Module | None = None
) -> tuple[list[Playbook], list[CodeProblem]]:
    """The `@playbook` functions of one code block, in order, and the problems found (`module`: the code's
    syntax tree, when the caller has it already)."""
    if module is None:
        try:
            module = cast(ast.Module, parse_python(code))  # mode "exec" gives a Module
        except SyntaxError as error:
            return [], [
                CodeProblem(f"Python syntax error: {error.msg}", error.lineno or 1, error.offset or 1)
            ]
    playbooks: list[Playbook] = []
    problems: list[CodeProblem] = []
    for node in module.body:
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        decorator = _playbook_decorator(node)
        if decorator is None:
            continue
        playbook, found = _playbook_from_function(node, decorator, block_index)
        playbooks.append(playbook)
        problems.extend(found)
    return playbooks, problems


def _playbook_decorator(node: ast.FunctionDef | ast.AsyncFunctionDef) -> ast.expr | None:
    for decorator in node.decorator_list:
        target = decorator.func if isinstance(decorator, ast.Call) else decorator
        if isinstance(target, ast.Name) and target.id == "playbook":
            return decorator
        if isinstance(target, ast.Attribute) and target.attr == "playbook":
            return decorator
    return None


def _playbook_from_function(
    node: ast.FunctionDef | ast.AsyncFunctionDef, decorator: ast.expr, block_index: int
) -> tuple[Playbook, list[CodeProblem]]:
    problems: list[CodeProblem] = []
    triggers: list[Trigger] = []
    public: bool | None = None
    permissions: dict[str, bool] = {}
    """`model_callable=False` / `requires_approval=True` (what a model may call: docs/security.md)."""
    description: str | None = None
    extra: dict[str, object] = {}
    if isinstance(decorator, ast.Call):
        for keyword in decorator.keywords:
            if keyword.arg is None:
                continue
            try:
                value = literal_eval(keyword.value)
            except (ValueError, SyntaxError, TypeError):
                problems.append(
                    CodeProblem(
                        f"@playbook argument {keyword.arg!r} must be a literal",
                        keyword.value.lineno,
                        keyword.value.col_offset + 1,
                    )
                )
                continue
            if keyword.arg == "triggers":
                if not isinstance(value, (list, tuple)) or not all(isinstance(t, str) for t in value):
                    problems.append(
                        CodeProblem(
                            "triggers must be a list of strings",
                            keyword.value.lineno,
                            keyword.value.col_offset + 1,
                        )
                    )
                    continue
                for text in value:
                    match = TRIGGER_RE.match(text)
                    if match is None:
                        problems.append(
                            CodeProblem(
                                f"trigger {text!r} is not of the form 'T1:CND when ...'",
                                keyword.value.lineno,
                                keyword.value.col_offset + 1,
                            )
                        )
                        continue
                    triggers.append(
                        Trigger(
                            id=match.group("id"), code=match.group("code"), text=match.group("text").strip()
                        )
                    )
            elif keyword.arg == "public":
                public = bool(value)
            elif keyword.arg in ("model_callable", "requires_approval") and isinstance(value, bool):
                permissions[keyword.arg] = value
            elif keyword.arg == "description" and isinstance(value, str):
                description = value
            elif _json_like(value):
                extra[keyword.arg] = _jsonify(value)
    if description is None:
        docstring = ast.get_docstring(node, clean=False)
        description = inspect.cleandoc(docstring) if docstring else ""
    playbook = Playbook(
        name=node.name,
        kind=PlaybookKind.PYTHON,
        parameters=_parameters(node.args),
        returns=ast.unparse(node.returns) if node.returns is not None else None,
        description=description,
        metadata=Metadata(public=public, extra=extra, **permissions),
        triggers=tuple(triggers),
        code_block=block_index,
    )
    return playbook, problems


def _parameters(arguments: ast.arguments) -> tuple[Parameter, ...]:
    positional = [*arguments.posonlyargs, *arguments.args]
    defaults: list[ast.expr | None] = [None] * (len(positional) - len(arguments.defaults))
    defaults.extend(arguments.defaults)
    result: list[Parameter] = []
    for argument, default in zip(positional, defaults, strict=True):
        result.append(_parameter(argument, default))
    for argument, default in zip(arguments.kwonlyargs, arguments.kw_defaults, strict=True):
        result.append(_parameter(argument, default))
    return tuple(result)


def _parameter(argument: ast.arg, default: ast.expr | None) -> Parameter:
    return Parameter(
        name=argument.arg,
        type=ast.unparse(argument.annotation) if argument.annotation is not None else None,
        default=ast.unparse(default) if default is not None else None,
    )


def _json_like(value: object) -> bool:
    if value is None or isinstance(value, (bool, int, float, str)):
        return True
    if isinstance(value, (list, tuple)):
        return all(_json_like(item) for item in value)
    if isinstance(value, dict):
        return all(isinstance(k, str) and _json_like(v) for k, v in value.items())
    return False


def _jsonify(value: object) -> object:
    if isinstance(value, (list, tuple)):
        return [_jsonify(item) for item in value]
    if isinstance(value, dict):
        return {k: _jsonify(v) for k, v in value.items()}
    return value

"""Mapping between `metadata:` YAML values and the typed Metadata / RemoteSpec nodes.

Known keys become typed fields (a wrongly typed value is an error naming the key); unknown keys are
kept in `extra`, in order, so nothing a program says is dropped.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pal_core.codes import BAD_METADATA
from pal_core.errors import SourceReporter
from pal_core.ir import EMPTY_METADATA, Metadata, RemoteSpec

MetadataProblem = tuple[str, str]
"""(key path, message) for a value of the wrong type."""


def _bool(value: Any) -> bool:
    if isinstance(value, bool):
        return value
    raise TypeError("must be true or false")


def _str(value: Any) -> str:
    if isinstance(value, str):
        return value
    raise TypeError("must be a string")


def _names(value: Any) -> tuple[str, ...]:
    if isinstance(value, str):
        # `required_attendees: HeadChef, MarketingSpecialist` is a common hand-written form.
        return tuple(part.strip() for part in value.split(",") if part.strip())
    if isinstance(value, list) and all(isinstance(item, str) for item in value):
        return tuple(value)
    raise TypeError("must be a list of agent names")


def _str_map(value: Any) -> dict[str, str]:
    if isinstance(value, dict) and all(isinstance(item, str) for item in value.values()):
        return dict(value)
    raise TypeError("must be a mapping of strings")


def _str_list(value: Any) -> tuple[str, ...]:
    if isinstance(value, list) and all(isinstance(item, str) for item in value):
        return tuple(value)
    raise TypeError("must be a list of strings")


def _json_schema(value: Any) -> dict[str, Any]:
    if isinstance(value, dict) and value:
        return value
    raise TypeError("must be a JSON Schema (a mapping such as {type: object, properties: ...})")


def _number(value: Any) -> float:
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    raise TypeError("must be a number of seconds")


_METADATA_FIELDS: dict[str, Callable[[Any], Any]] = {
    "public": _bool,
    "meeting": _bool,
    "model_callable": _bool,
    "requires_approval": _bool,
    "required_attendees": _names,
    "optional_attendees": _names,
    "startup_mode": _str,
    "execution_mode": _str,
    "python": _str,
    "returns_schema": _json_schema,
}

_REMOTE_FIELDS: dict[str, Callable[[Any], Any]] = {
    "type": _str,
    "transport": _str,
    "url": _str,
    "command": _str,
    "args": _str_list,
    "env": _str_map,
    "headers": _str_map,
    "timeout": _number,
}


def metadata_from_yaml(data: dict[str, Any]) -> tuple[Metadata, list[MetadataProblem]]:
    """Typed metadata from a YAML mapping, and the problems found (the bad keys are left out)."""
    if not data:
        return EMPTY_METADATA, []
    problems: list[MetadataProblem] = []
    values: dict[str, Any] = {}
    extra: dict[str, Any] = {}
    for key, value in data.items():
        if key == "remote":
            remote, remote_problems = _remote_from_yaml(value)
            problems.extend(remote_problems)
            if remote is not None:
                values["remote"] = remote
            continue
        convert = _METADATA_FIELDS.get(key)
        if convert is None:
            extra[key] = value
            continue
        try:
            values[key] = convert(value)
        except TypeError as error:
            problems.append((key, str(error)))
    return Metadata(**values, extra=extra), problems


def _remote_from_yaml(value: Any) -> tuple[RemoteSpec | None, list[MetadataProblem]]:
    if not isinstance(value, dict):
        return None, [("remote", "must be a mapping with at least 'type'")]
    problems: list[MetadataProblem] = []
    values: dict[str, Any] = {}
    extra: dict[str, Any] = {}
    for key, item in value.items():
        convert = _REMOTE_FIELDS.get(key)
        if convert is None:
            extra[key] = item
            continue
        try:
            values[key] = convert(item)
        except TypeError as error:
            problems.append((f"remote.{key}", str(error)))
    if "type" not in values:
        if not any(path == "remote.type" for path, _ in problems):
            problems.append(("remote", "needs a 'type' such as mcp"))
        return None, problems
    return RemoteSpec(**values, extra=extra), problems


def metadata_to_yaml(metadata: Metadata) -> dict[str, Any]:
    """The YAML mapping for a metadata node: known keys in a fixed order, then `extra` in order."""
    data: dict[str, Any] = {}
    if metadata.public is not None:
        data["public"] = metadata.public
    if metadata.meeting is not None:
        data["meeting"] = metadata.meeting
    if metadata.model_callable is not None:
        data["model_callable"] = metadata.model_callable
    if metadata.requires_approval is not None:
        data["requires_approval"] = metadata.requires_approval
    if metadata.required_attendees:
        data["required_attendees"] = list(metadata.required_attendees)
    if metadata.optional_attendees:
        data["optional_attendees"] = list(metadata.optional_attendees)
    for key in ("startup_mode", "execution_mode", "python"):
        value = getattr(metadata, key)
        if value is not None:
            data[key] = value
    if metadata.returns_schema is not None:
        data["returns_schema"] = dict(metadata.returns_schema)
    if metadata.remote is not None:
        data["remote"] = remote_to_yaml(metadata.remote)
    for key, value in metadata.extra.items():
        if key in data or key in _METADATA_FIELDS or key == "remote":
            continue
        data[key] = value
    return data


def remote_to_yaml(remote: RemoteSpec) -> dict[str, Any]:
    """The YAML mapping for a remote spec."""
    data: dict[str, Any] = {"type": remote.type}
    for key in ("transport", "url", "command"):
        value = getattr(remote, key)
        if value is not None:
            data[key] = value
    if remote.args:
        data["args"] = list(remote.args)
    if remote.env:
        data["env"] = dict(remote.env)
    if remote.headers:
        data["headers"] = dict(remote.headers)
    if remote.timeout is not None:
        data["timeout"] = int(remote.timeout) if remote.timeout.is_integer() else remote.timeout
    for key, value in remote.extra.items():
        if key not in data and key not in _REMOTE_FIELDS:
            data[key] = value
    return data


@dataclass(slots=True, kw_only=True)
class MetadataSource:
    """A metadata block as YAML data, with where it was written."""

    data: dict[str, Any]
    """The YAML mapping (empty when the YAML could not be read: that is already reported)."""
    lines: list[tuple[int, str]]
    """The block's source lines, to place errors on the key they concern."""
    line: int
    """1-based line where the block starts."""
    readable: bool = True
    """False when the YAML could not be read."""


def metadata_of(source: MetadataSource | None, reporter: SourceReporter) -> Metadata:
    """The typed metadata of a block; a value of the wrong type is an error at its key."""
    if source is None or not source.readable:
        return EMPTY_METADATA
    metadata, problems = metadata_from_yaml(source.data)
    for key, message in problems:
        leaf = key.split(".")[-1]
        line, column = key_position(source, leaf)
        reporter.error(BAD_METADATA, f"metadata '{key}' {message}", line, column, len(leaf))
    return metadata


def key_position(source: MetadataSource, key: str) -> tuple[int, int]:
    """Where a metadata key is written (line, column), to report a wrong value there."""
    for number, text in source.lines:
        stripped = text.lstrip()
        for prefix in (f"{key}:", f"- {key}:"):
            if stripped.startswith(prefix):
                return number, len(text) - len(stripped) + 1 + (2 if prefix.startswith("- ") else 0)
    return source.line, 1

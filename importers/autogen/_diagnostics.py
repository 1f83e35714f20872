"""The AutoGen importer's diagnostic codes (AG1xx, documented with examples in docs/autogen.md), and the
collector the readers and writers share. A code is never reused for another meaning."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

from importers import ImportDiagnostic


@dataclass(frozen=True, slots=True, kw_only=True)
class Code:
    """One kind of finding."""

    code: str
    """The stable code, `AG1xx`."""
    name: str
    """A short kebab-case name."""
    summary: str
    """What it means, in a few words."""


UNSUPPORTED_PARTICIPANT = Code(
    code="AG101",
    name="unsupported-participant",
    summary="a participant is a kind of agent the importer cannot run",
)
FUNCTION_WITHOUT_IMPORT_PATH = Code(
    code="AG102",
    name="function-without-import-path",
    summary="a selector, candidate, condition or termination function cannot be imported by path",
)
TERMINATION_NOT_EXPRESSED = Code(
    code="AG103",
    name="termination-not-expressed",
    summary="a termination condition the program does not check",
)
AGENT_FEATURE = Code(
    code="AG104",
    name="agent-feature",
    summary="part of an LLM agent is not expressed (handoffs, memory, ...)",
)
TOOL_WITHOUT_IMPORT_PATH = Code(
    code="AG105", name="tool-without-import-path", summary="a tool's function cannot be imported by path"
)
AGENT_EVENTS = Code(
    code="AG106",
    name="agent-events",
    summary="something depends on agent events (tool calls), which the transcript does not carry",
)
GROUP_CHAT_FEATURE = Code(
    code="AG107", name="group-chat-feature", summary="a group chat setting the program does not reproduce"
)
MESSAGE_TYPES = Code(
    code="AG108",
    name="message-types",
    summary="an agent may produce chat messages other than text and hand-offs, which the meeting carries as text",
)

CODES: Mapping[str, Code] = MappingProxyType(
    {
        code.code: code
        for code in (
            UNSUPPORTED_PARTICIPANT,
            FUNCTION_WITHOUT_IMPORT_PATH,
            TERMINATION_NOT_EXPRESSED,
            AGENT_FEATURE,
            TOOL_WITHOUT_IMPORT_PATH,
            AGENT_EVENTS,
            GROUP_CHAT_FEATURE,
            MESSAGE_TYPES,
        )
    }
)
"""Every code by its number."""


class Findings:
    """Diagnostics in the order found, each (code, subject, message) reported once."""

    __slots__ = ("_items", "_seen")

    def __init__(self) -> None:
        self._items: list[ImportDiagnostic] = []
        self._seen: set[tuple[str, str, str]] = set()

    def add(self, code: Code, subject: str, message: str) -> None:
        key = (code.code, subject, message)
        if key in self._seen:
            return
        self._seen.add(key)
        self._items.append(ImportDiagnostic(code=code.code, subject=subject, message=message))

    def all(self) -> tuple[ImportDiagnostic, ...]:
        return tuple(self._items)

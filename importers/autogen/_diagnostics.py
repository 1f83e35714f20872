"""The AutoGen importer's diagnostic codes (AG1xx, docs/autogen.md with examples); a code is never reused."""

from __future__ import annotations

from importers.common.diagnostics import Code, CodeTable

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
    code="AG105",
    name="tool-without-import-path",
    summary="no longer reported (tools run through the live agents); kept so that the code is never reused",
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

CODES = CodeTable(
    prefix="AG1",
    docs="docs/autogen.md",
    codes=(
        UNSUPPORTED_PARTICIPANT,
        FUNCTION_WITHOUT_IMPORT_PATH,
        TERMINATION_NOT_EXPRESSED,
        AGENT_FEATURE,
        TOOL_WITHOUT_IMPORT_PATH,
        AGENT_EVENTS,
        GROUP_CHAT_FEATURE,
        MESSAGE_TYPES,
    ),
)
"""Every code by its number."""

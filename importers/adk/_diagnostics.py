"""The ADK importer's diagnostic codes (ADK1xx, docs/adk.md with examples); a code is never reused."""

from __future__ import annotations

from importers.common.diagnostics import Code, CodeTable

UNSUPPORTED_TOOL = Code(
    code="ADK101",
    name="unsupported-tool",
    summary="a built-in or external tool (search, code execution, a toolset) PAL cannot run",
)
NO_SOURCE = Code(
    code="ADK102",
    name="no-source",
    summary="the agent tree has no import path, so ADK-run parts cannot be found again at run time",
)
MODEL_CALLBACK = Code(
    code="ADK103", name="model-callback", summary="a before / after model callback is not run"
)
TOOL_CALLBACK = Code(code="ADK104", name="tool-callback", summary="a before / after tool callback is not run")
AGENT_FEATURE = Code(
    code="ADK105",
    name="agent-feature",
    summary="part of an LLM agent (output schema, planner, sampling settings, mode) is not expressed",
)
UNSUPPORTED_AGENT = Code(
    code="ADK106", name="unsupported-agent", summary="an agent class the program cannot run (remote, live)"
)
LLM_INSIDE_ADK = Code(
    code="ADK107",
    name="llm-inside-custom-agent",
    summary="a custom agent runs LLM agents inside ADK, where they call ADK's model",
)
WORKFLOW_SHAPE = Code(
    code="ADK108",
    name="workflow-shape",
    summary="a workflow's edges form a pattern the importer cannot lay out as steps",
)
NODE_FEATURE = Code(
    code="ADK109",
    name="node-feature",
    summary="a workflow node's retry, timeout, confirmation or authentication is not applied",
)
APP_FEATURE = Code(
    code="ADK110", name="app-feature", summary="an App's plugins or run-time configuration are not applied"
)

AGENT_INSIDE_TOOL = Code(
    code="ADK111",
    name="agent-inside-tool",
    summary="a tool function runs an agent, a Runner or a model client itself, outside the PAL run's model",
)
TOOL_SERVICE = Code(
    code="ADK112",
    name="tool-service",
    summary="a tool uses ADK's artifact, memory or credential services, which the program does not keep",
)

CODES = CodeTable(
    prefix="ADK1",
    docs="docs/adk.md",
    codes=(
        UNSUPPORTED_TOOL,
        NO_SOURCE,
        MODEL_CALLBACK,
        TOOL_CALLBACK,
        AGENT_FEATURE,
        UNSUPPORTED_AGENT,
        LLM_INSIDE_ADK,
        WORKFLOW_SHAPE,
        NODE_FEATURE,
        APP_FEATURE,
        AGENT_INSIDE_TOOL,
        TOOL_SERVICE,
    ),
)
"""Every code by its number."""

__all__ = [
    "AGENT_FEATURE",
    "AGENT_INSIDE_TOOL",
    "APP_FEATURE",
    "CODES",
    "LLM_INSIDE_ADK",
    "MODEL_CALLBACK",
    "NODE_FEATURE",
    "NO_SOURCE",
    "TOOL_CALLBACK",
    "TOOL_SERVICE",
    "UNSUPPORTED_AGENT",
    "UNSUPPORTED_TOOL",
    "WORKFLOW_SHAPE",
]

"""The validator's rules: one stable code per kind of mistake, each with a fixed severity.

Codes are part of the public interface (editors, CI filters and docs/diagnostics.md refer to them):
a code is never reused for a different meaning, and a retired code stays reserved. Syntax errors
(PAL001-PAL012) belong to the parser; the validator's codes start at PAL100.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

from pal_core.errors import Severity


@dataclass(frozen=True, slots=True, kw_only=True)
class Rule:
    """One check of the validator."""

    code: str
    """The stable code, `PAL1xx`."""
    name: str
    """A short kebab-case name, for people and for `--ignore`-style filters."""
    severity: Severity
    """Always the same for a given code."""
    summary: str
    """What the rule finds, in a few words (the docs give the full story)."""


_E = Severity.ERROR
_W = Severity.WARNING

# --- steps: numbering and structure ----------------------------------------------------------------
BAD_LINE_NUMBER = Rule(
    code="PAL100", name="bad-line-number", severity=_E, summary="a step number is not two-digit dot notation"
)
DUPLICATE_LINE_NUMBER = Rule(
    code="PAL101", name="duplicate-line-number", severity=_E, summary="two steps of a playbook share a number"
)
MISPLACED_STEP = Rule(
    code="PAL102",
    name="misplaced-step",
    severity=_E,
    summary="a sub-step is not under the step its number names",
)
OUT_OF_SEQUENCE = Rule(
    code="PAL103", name="out-of-sequence", severity=_E, summary="step numbers skip, repeat or go backwards"
)
UNKNOWN_OPCODE = Rule(
    code="PAL104", name="unknown-opcode", severity=_E, summary="a step's command code is unknown"
)
EMPTY_CONDITION = Rule(code="PAL105", name="empty-condition", severity=_E, summary="a CND step has no body")
DANGLING_OTHERWISE = Rule(
    code="PAL106",
    name="dangling-otherwise",
    severity=_E,
    summary="an Otherwise / Else-if does not follow a CND step",
)
BODY_UNDER_NON_CONDITION = Rule(
    code="PAL107",
    name="body-under-non-condition",
    severity=_W,
    summary="sub-steps under a step that is not a CND",
)
UNREACHABLE_STEP = Rule(
    code="PAL108", name="unreachable-step", severity=_W, summary="a step after RET or JMP in the same block"
)

# --- control flow: JMP and YLD ---------------------------------------------------------------------
JUMP_WITHOUT_TARGET = Rule(
    code="PAL110", name="jump-without-target", severity=_E, summary="a JMP step names no step number"
)
JUMP_TARGET_MISSING = Rule(
    code="PAL111",
    name="jump-target-missing",
    severity=_E,
    summary="a JMP target is not a step of the playbook",
)
JUMP_TO_ITSELF = Rule(code="PAL112", name="jump-to-itself", severity=_E, summary="a JMP step jumps to itself")
UNKNOWN_YIELD_TARGET = Rule(
    code="PAL113", name="unknown-yield-target", severity=_E, summary="a YLD target is not a known kind"
)

# --- triggers and notes ----------------------------------------------------------------------------
UNKNOWN_TRIGGER_CODE = Rule(
    code="PAL120", name="unknown-trigger-code", severity=_E, summary="a trigger code is not BGN, CND or EVT"
)
TRIGGER_OUT_OF_SEQUENCE = Rule(
    code="PAL121",
    name="trigger-out-of-sequence",
    severity=_E,
    summary="trigger ids are not T1, T2, ... in order",
)
DUPLICATE_TRIGGER = Rule(
    code="PAL122", name="duplicate-trigger", severity=_E, summary="two triggers of a playbook share an id"
)
TRIGGER_WITHOUT_CONDITION = Rule(
    code="PAL123",
    name="trigger-without-condition",
    severity=_E,
    summary="a CND or EVT trigger has no condition text",
)
NOTE_OUT_OF_SEQUENCE = Rule(
    code="PAL124", name="note-out-of-sequence", severity=_E, summary="note ids are not N1, N2, ... in order"
)
DUPLICATE_NOTE = Rule(
    code="PAL125", name="duplicate-note", severity=_E, summary="two notes of a playbook share an id"
)

# --- calls -----------------------------------------------------------------------------------------
UNKNOWN_PLAYBOOK = Rule(
    code="PAL130",
    name="unknown-playbook",
    severity=_W,
    summary="a call names no playbook of the agent or builtin",
)
UNKNOWN_AGENT = Rule(
    code="PAL131",
    name="unknown-agent",
    severity=_E,
    summary="`Agent.Playbook` names an agent that does not exist",
)
UNKNOWN_AGENT_PLAYBOOK = Rule(
    code="PAL132",
    name="unknown-agent-playbook",
    severity=_E,
    summary="`Agent.Playbook` names a playbook the agent does not have",
)
PRIVATE_AGENT_PLAYBOOK = Rule(
    code="PAL133",
    name="private-agent-playbook",
    severity=_E,
    summary="`Agent.Playbook` names a playbook that is not public",
)
REMOTE_TOOL_NAME = Rule(
    code="PAL134",
    name="remote-tool-name",
    severity=_W,
    summary="a step writes a remote tool's own name (`get-sum`), which is not a PAL name",
)

# --- playbooks -------------------------------------------------------------------------------------
UNTYPED_PUBLIC_PARAMETER = Rule(
    code="PAL140",
    name="untyped-public-parameter",
    severity=_W,
    summary="a public playbook has a parameter without a type",
)
EMPTY_PLAYBOOK = Rule(
    code="PAL141",
    name="empty-playbook",
    severity=_E,
    summary="a markdown playbook has no steps, no prompt and no raw/react mode",
)
BAD_PLAYBOOK_NAME = Rule(
    code="PAL142", name="bad-playbook-name", severity=_E, summary="a playbook name is not an identifier"
)
DUPLICATE_PLAYBOOK = Rule(
    code="PAL143", name="duplicate-playbook", severity=_E, summary="an agent has two playbooks with one name"
)
DUPLICATE_PARAMETER = Rule(
    code="PAL144", name="duplicate-parameter", severity=_E, summary="a playbook header repeats a parameter"
)
UNKNOWN_EXECUTION_MODE = Rule(
    code="PAL145",
    name="unknown-execution-mode",
    severity=_E,
    summary="`execution_mode` is not playbook, react or raw",
)
UNKNOWN_ATTENDEE = Rule(
    code="PAL146",
    name="unknown-attendee",
    severity=_W,
    summary="a meeting attendee is not an agent of the program",
)
BAD_PYTHON_BINDING = Rule(
    code="PAL147",
    name="bad-python-binding",
    severity=_E,
    summary="metadata `python:` is not `module:qualname`",
)
STEPS_WITH_PYTHON_BINDING = Rule(
    code="PAL148",
    name="steps-with-python-binding",
    severity=_E,
    summary="a playbook has steps and a `python:` binding (the steps would never run)",
)

# --- agents and the program ------------------------------------------------------------------------
BAD_AGENT_NAME = Rule(
    code="PAL150", name="bad-agent-name", severity=_E, summary="an agent name is not an identifier"
)
DUPLICATE_AGENT = Rule(code="PAL151", name="duplicate-agent", severity=_E, summary="two agents share a name")
UNKNOWN_STARTUP_MODE = Rule(
    code="PAL152",
    name="unknown-startup-mode",
    severity=_E,
    summary="`startup_mode` is not default or standby",
)
NO_AGENTS = Rule(code="PAL153", name="no-agents", severity=_E, summary="the program defines no agent")

RULES: Mapping[str, Rule] = MappingProxyType(
    {
        rule.code: rule
        for rule in (
            BAD_LINE_NUMBER,
            DUPLICATE_LINE_NUMBER,
            MISPLACED_STEP,
            OUT_OF_SEQUENCE,
            UNKNOWN_OPCODE,
            EMPTY_CONDITION,
            DANGLING_OTHERWISE,
            BODY_UNDER_NON_CONDITION,
            UNREACHABLE_STEP,
            JUMP_WITHOUT_TARGET,
            JUMP_TARGET_MISSING,
            JUMP_TO_ITSELF,
            UNKNOWN_YIELD_TARGET,
            UNKNOWN_TRIGGER_CODE,
            TRIGGER_OUT_OF_SEQUENCE,
            DUPLICATE_TRIGGER,
            TRIGGER_WITHOUT_CONDITION,
            NOTE_OUT_OF_SEQUENCE,
            DUPLICATE_NOTE,
            UNKNOWN_PLAYBOOK,
            UNKNOWN_AGENT,
            UNKNOWN_AGENT_PLAYBOOK,
            PRIVATE_AGENT_PLAYBOOK,
            REMOTE_TOOL_NAME,
            UNTYPED_PUBLIC_PARAMETER,
            EMPTY_PLAYBOOK,
            BAD_PLAYBOOK_NAME,
            DUPLICATE_PLAYBOOK,
            DUPLICATE_PARAMETER,
            UNKNOWN_EXECUTION_MODE,
            UNKNOWN_ATTENDEE,
            BAD_PYTHON_BINDING,
            STEPS_WITH_PYTHON_BINDING,
            BAD_AGENT_NAME,
            DUPLICATE_AGENT,
            UNKNOWN_STARTUP_MODE,
            NO_AGENTS,
        )
    }
)
"""Every rule by code, in code order."""

TOO_DEEP = Rule(
    code="PAL012",
    name="too-deep",
    severity=_E,
    summary="steps nest deeper than MAX_STEP_DEPTH levels",
)
"""The parser's PAL012, reported by the validator for a program built in code (text never gets that far).
Not in RULES: its code is a syntax code, documented with the parser's."""

"""pal_core: the PAL intermediate representation and everything that reads, writes and checks it.

Standard library only. Frameworks (LangGraph, ADK, AutoGen, MCP, litellm) are never imported here.
"""

from pal_core.errors import Diagnostic, PalError, PalSyntaxError, PalWriteError, Severity
from pal_core.ir import (
    Agent,
    ArgKind,
    Argument,
    Assignment,
    Call,
    Condition,
    ConditionKind,
    Metadata,
    Note,
    Opcode,
    Parameter,
    Playbook,
    PlaybookKind,
    Program,
    RemoteSpec,
    Span,
    Step,
    Trigger,
    TriggerCode,
    Variable,
    YieldKind,
    YieldTarget,
)
from pal_core.parser import parse, parse_file
from pal_core.writer import write

__all__ = [
    "Agent",
    "ArgKind",
    "Argument",
    "Assignment",
    "Call",
    "Condition",
    "ConditionKind",
    "Diagnostic",
    "Metadata",
    "Note",
    "Opcode",
    "PalError",
    "PalSyntaxError",
    "PalWriteError",
    "Parameter",
    "Playbook",
    "PlaybookKind",
    "Program",
    "RemoteSpec",
    "Severity",
    "Span",
    "Step",
    "Trigger",
    "TriggerCode",
    "Variable",
    "YieldKind",
    "YieldTarget",
    "parse",
    "parse_file",
    "write",
]

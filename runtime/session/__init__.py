"""One way into a run: sessions. A session is one thread of a program in a store (memory by default):
a run of the whole program (`ProgramSession`) or a series of calls of its playbooks (`CallSession`),
checkpointed as it goes and resumed from its log after a crash, in any process (docs/durability.md).

`runtime.api` (run_program, run_playbook), `pal run`, the embedded playbooks of the exporters
(runtime.embedding) and the MCP server all run programs through this package.
"""

from __future__ import annotations

from .entry import CallOutcome, program_ref, resolve_playbook
from .journal import PROBES, ReplayMismatch, ThreadTakenOver
from .session import (
    CallSession,
    ProgramChanged,
    ProgramSession,
    Session,
    ThreadStateError,
    answer_thread,
    opened_store,
    recorded_result,
    thread_kind,
)

__all__ = [
    "PROBES",
    "CallOutcome",
    "CallSession",
    "ProgramChanged",
    "ProgramSession",
    "ReplayMismatch",
    "Session",
    "ThreadStateError",
    "ThreadTakenOver",
    "answer_thread",
    "opened_store",
    "program_ref",
    "recorded_result",
    "resolve_playbook",
    "thread_kind",
]

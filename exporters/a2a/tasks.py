"""A2A tasks are threads: how a task is recorded in a store, and how a thread reads as a task.

Every task is a thread of calls (runtime.session.CallSession) whose id is the task id; its metadata says it
is an A2A task (`a2a`: the agent, the skill, the context, how the first message gave the arguments), and its
log holds the call and everything the call took in, so any server sharing the store can show it (`GetTask`,
`ListTasks`), answer it when it waits for input, take it over when its server died, or cancel it.

| thread | task state |
| --- | --- |
| made, its call not begun yet | `SUBMITTED` |
| `running` (its call in progress) | `WORKING` |
| `waiting_for_user` | `INPUT_REQUIRED`; the status message is what the agent said since the last answer |
| `finished` (the call returned) | `COMPLETED`; the artifact `result` holds the value (or what it said) |
| `failed`, the call failed | `FAILED`; the status message is the failure |
| `failed`, canceled (a `result` entry marked `canceled`) | `CANCELED` |

History: the message that started the task, then what the agent said and the user answered, in order (the
thread's transcript). Message ids are `<task id>:<n>`, the same at every read.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from a2a.types import a2a_pb2 as pb
from google.protobuf import struct_pb2
from google.protobuf.json_format import ParseDict

from exporters.a2a.parts import SkillCall, call_message, text_message, value_parts
from runtime.serving.playbooks import ServedPlaybook
from runtime.session import codec
from runtime.session.view import read_state
from runtime.store import AppendConflict, Entry, NewEntry, Store, Thread, ThreadStatus

A2A_META = "a2a"
"""The thread metadata key of an A2A task."""
SERVED_AS = "served_as"
"""The thread metadata key naming what a served thread is to its protocol (`pal threads` shows it)."""
RESULT_ARTIFACT = "result"
"""The id and name of a completed task's artifact."""
CANCEL_ATTEMPTS = 20
"""Times recording a cancellation reads the thread again after another writer moved it on."""

TERMINAL = frozenset(
    {pb.TaskState.TASK_STATE_COMPLETED, pb.TaskState.TASK_STATE_FAILED, pb.TaskState.TASK_STATE_CANCELED,
     pb.TaskState.TASK_STATE_REJECTED}
)  # fmt: skip
"""States a task never leaves."""
INTERRUPTED = frozenset({pb.TaskState.TASK_STATE_INPUT_REQUIRED, pb.TaskState.TASK_STATE_AUTH_REQUIRED})
"""States where a task waits for the client."""


@dataclass(frozen=True, slots=True, kw_only=True)
class TaskRecord:
    """What a thread's metadata says about the A2A task it is."""

    agent: str
    """The served agent."""
    skill: str
    """The skill (the served name) the task calls."""
    context_id: str
    """The A2A context the task belongs to."""
    by_text: bool
    """Whether the first message was text for the entry skill (else a data part)."""
    message_id: str
    """The id the client gave the first message."""

    def metadata(self) -> dict[str, Any]:
        """The thread metadata that records the task (`served_as` is what `pal threads` shows as its kind)."""
        return {
            SERVED_AS: "a2a task",
            A2A_META: {
                "agent": self.agent,
                "skill": self.skill,
                "context_id": self.context_id,
                "by_text": self.by_text,
                "message_id": self.message_id,
            },
        }


def task_record(thread: Thread) -> TaskRecord | None:
    """The task a thread is, or None for a thread that is not an A2A task."""
    found = thread.metadata.get(A2A_META)
    if not isinstance(found, Mapping):
        return None
    return TaskRecord(
        agent=str(found.get("agent", "")),
        skill=str(found.get("skill", "")),
        context_id=str(found.get("context_id", "")),
        by_text=bool(found.get("by_text")),
        message_id=str(found.get("message_id", "")),
    )


def message_id(task_id: str, number: int) -> str:
    """The id of the n-th message of a task's history (stable across reads)."""
    return f"{task_id}:{number}"


def status_of(
    state: int, text: str | None, *, task_id: str, context_id: str, when: datetime
) -> pb.TaskStatus:
    """A task status, with the agent's message when there is text."""
    status = pb.TaskStatus(state=state)  # type: ignore[arg-type]
    status.timestamp.FromDatetime(when)
    if text:
        status.message.CopyFrom(
            text_message(
                text,
                role=pb.Role.ROLE_AGENT,
                message_id=f"{task_id}:status:{state}",
                task_id=task_id,
                context_id=context_id,
            )
        )
    return status


def result_artifact(value: Any, said: list[str]) -> pb.Artifact | None:
    """A completed task's artifact: its value, or, for a playbook that returns nothing, what it said."""
    parts = value_parts(value) if value is not None else value_parts("\n".join(said) or None)
    if not parts:
        return None
    return pb.Artifact(artifact_id=RESULT_ARTIFACT, name=RESULT_ARTIFACT, parts=parts)


def task_metadata(record: TaskRecord) -> struct_pb2.Struct:
    """The task's own metadata: the skill it calls."""
    return ParseDict({"pal": {"skill": record.skill, "agent": record.agent}}, struct_pb2.Struct())


async def read_task(
    store: Store, thread: Thread, record: TaskRecord, served: ServedPlaybook | None, *, history: bool = True
) -> pb.Task:
    """The task `thread` is, from the store (no replay): its state, status message, history, artifact."""
    state = await read_state(store, thread.id)
    thread = state.thread
    last = (await store.read_entries(thread.id, first=thread.last_entry))[0] if thread.last_entry else None
    task = pb.Task(id=thread.id, context_id=record.context_id, metadata=task_metadata(record))
    transcript = [line for line in state.transcript if isinstance(line, Mapping)]
    if history:
        first = (await store.read_entries(thread.id, first=1, last=1))[0] if thread.last_entry else None
        task.history.extend(_history(thread.id, record, served, first, transcript))
    code, text = _state(thread, last, transcript)
    task.status.CopyFrom(
        status_of(code, text, task_id=thread.id, context_id=record.context_id, when=thread.updated)
    )
    if code == pb.TaskState.TASK_STATE_COMPLETED and last is not None:
        artifact = result_artifact(last.payload.get("value"), list(last.payload.get("said") or ()))
        if artifact is not None:
            task.artifacts.append(artifact)
    return task


def _state(thread: Thread, last: Entry | None, transcript: list[Mapping[str, Any]]) -> tuple[int, str | None]:
    status = thread.status
    if last is not None and last.kind == "result" and status in (ThreadStatus.FINISHED, ThreadStatus.FAILED):
        error = last.payload.get("error")
        if error is None:
            return pb.TaskState.TASK_STATE_COMPLETED, None
        if last.payload.get("canceled"):
            return pb.TaskState.TASK_STATE_CANCELED, str(error)
        return pb.TaskState.TASK_STATE_FAILED, str(error)
    if status is ThreadStatus.WAITING_FOR_USER:
        return pb.TaskState.TASK_STATE_INPUT_REQUIRED, question(transcript)
    if status is ThreadStatus.FAILED or status is ThreadStatus.INTERRUPTED:
        return pb.TaskState.TASK_STATE_FAILED, f"the thread {status.value}"
    if thread.last_entry == 0:
        return pb.TaskState.TASK_STATE_SUBMITTED, None
    return pb.TaskState.TASK_STATE_WORKING, None


def question(transcript: list[Mapping[str, Any]]) -> str:
    """What the agent said since the user last spoke: the question a task waiting for input asks."""
    asked: list[str] = []
    for line in transcript:
        if line.get("from") == "user":
            asked = []
        else:
            asked.append(str(line.get("text", "")))
    return "\n".join(asked) or "The agent waits for your answer."


def _history(
    task_id: str,
    record: TaskRecord,
    served: ServedPlaybook | None,
    first: Entry | None,
    transcript: list[Mapping[str, Any]],
) -> list[pb.Message]:
    messages: list[pb.Message] = []
    if first is not None and served is not None and first.payload.get("input") == "call":
        arguments = codec.decode(first.payload.get("arguments")) or {}
        if served.arguments_parameter is not None and isinstance(arguments, Mapping):
            arguments = arguments.get(served.arguments_parameter, {})
        call = SkillCall(served=served, arguments=dict(arguments), by_text=record.by_text)
        messages.append(
            call_message(
                call, message_id=record.message_id or message_id(task_id, 0), task_id=task_id,
                context_id=record.context_id,
            )
        )  # fmt: skip
    for number, line in enumerate(transcript, start=1):
        role = pb.Role.ROLE_USER if line.get("from") == "user" else pb.Role.ROLE_AGENT
        messages.append(
            text_message(
                str(line.get("text", "")), role=role, message_id=message_id(task_id, number), task_id=task_id,
                context_id=record.context_id,
            )
        )  # fmt: skip
    return messages


async def record_cancel(store: Store, thread_id: str, reason: str) -> bool:
    """Record that the task is canceled: a `result` entry marked `canceled` (the thread `failed`), so any
    server reads it CANCELED, and a process still running its call finds the thread moved on at its next
    write and stops. False when the task had ended already."""
    for _ in range(CANCEL_ATTEMPTS):
        thread = await store.get_thread(thread_id)
        if thread.status in (ThreadStatus.FINISHED, ThreadStatus.FAILED):
            return False
        entry = NewEntry(
            kind="result",
            payload={"value": None, "said": [], "error": f"Canceled: {reason}", "canceled": True},
        )
        try:
            await store.append(thread_id, entry, expected_last=thread.last_entry, status=ThreadStatus.FAILED)
        except AppendConflict:
            continue  # its call wrote meanwhile: read it again
        return True
    return False


__all__ = [
    "A2A_META",
    "INTERRUPTED",
    "RESULT_ARTIFACT",
    "TERMINAL",
    "TaskRecord",
    "question",
    "read_task",
    "record_cancel",
    "result_artifact",
    "status_of",
    "task_metadata",
    "task_record",
]

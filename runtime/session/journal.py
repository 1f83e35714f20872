"""The checkpoints of a durable run: what the run commits to its thread's log, and how a resumed run is
answered from it.

The log records every input to a run that re-executing the program cannot reproduce: each model answer
(with the verdict of the verifier and, for an accepted turn, what it changed), each Python or remote call
result, each batch of messages an agent read, each wait for the user and the input that answered it, and
for a thread of calls, each call's arguments and result. Each is committed before the run acts on it.

A resumed run executes the program again from the start, deterministically: the fast path recomputes
itself, and every point where the first run took an input is answered from the log instead (no model call,
no Python call, no user prompt) until the log has nothing more for that point; from there the run is live.
Entries are matched per agent and per stream (model answers, calls, user input, waits, deliveries), in
order, so agents running concurrently replay correctly whatever their interleaving; each replayed model
answer is checked against where the run asks for it (agent, playbook, line, kind of request) and verified
again, so a program that changed is a ReplayMismatch, never a silent divergence.

The journal of a thread also keeps what reading the thread needs (the transcript, the agents' variables,
the counts) and stores it as a snapshot every K entries and whenever the run stops (a wait for the user,
the end of a call or of the run), so `pal history`, `pal threads` and state reads never replay.

One journal is the one writer of its thread in this process: appends are serialised, each names the last
entry it knows (`expected_last`), and an AppendConflict (another process wrote first) stops this run with
ThreadTakenOver.
"""

from __future__ import annotations

import asyncio
import logging
from collections import deque
from collections.abc import Awaitable, Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any

from pal_core.builtins import SPEECH_CALLS
from pal_core.contract.model import ReturnAction, VarAction
from pal_core.contract.verify import ExecutedStep, VerifiedTurn
from pal_core.ir import Playbook, PlaybookKind
from runtime.errors import PlaybookFailed, RunError
from runtime.models.base import ModelRequest, ModelResponse, RequestKind, Usage
from runtime.python_api import CallInProgress, current_call
from runtime.schema import json_value
from runtime.store import AppendConflict, Entry, NewEntry, Store, StoreError, ThreadStatus, strict_json
from runtime.store.records import EntryKind

from . import codec
from .prompt_log import PromptLog

if TYPE_CHECKING:
    from pal_core.messaging import Message
    from runtime.agent import AgentInstance

logger = logging.getLogger(__name__)

PAYLOAD_VERSION = 1
"""The version of the payloads below (kept in the thread's metadata, `pal.payloads`). A newer pal-bridge
that changes them adds an upgrade step, and a golden thread keeps this version replayable."""

REPLAY_DELIVERY_TIMEOUT = 60.0
"""Seconds a replaying agent waits for a message the log says it read (its sender is replaying too)."""

Probe = Callable[[str, Mapping[str, Any]], None]
"""Called at each checkpoint point with its name and details (see PROBES)."""

PROBES: list[Probe] = []
"""Functions called at each checkpoint point, for tests and debugging: `model.answered` (an answer is in,
not yet committed), `model.committed` (committed, not yet applied), `call.returned`, `call.committed`,
`wait.committed` (about to ask the user), `input.committed`, `delivery.committed`. The crash tests kill the
process from here; a probe must not raise."""

# Which replay stream an entry belongs to: model answers, calls, user input, waits, deliveries (per agent),
# and the calls of a thread of calls with their results (one stream for the thread).
_STREAM_OF_KIND = {
    EntryKind.TURN: "model",
    EntryKind.CALL: "call",
    EntryKind.WAIT: "wait",
    EntryKind.MESSAGE: "delivery",
    "result": "result",
}
THREAD = ""
"""The label of the thread's own stream (the calls of a thread of calls)."""


class ReplayMismatch(RunError):
    """A resumed run asked for something other than what its log recorded at that point: the program or
    the runtime changed since the thread ran, so its log cannot be replayed."""


class ThreadTakenOver(RunError):
    """Another process appended to the thread this run was writing: this run stops (its view is stale)."""


def stream_of(entry: Entry) -> tuple[str, str] | None:
    """(agent label, stream) of an entry the run replays; None for one it does not (a status change)."""
    payload = entry.payload
    if entry.kind == EntryKind.INPUT:
        if payload.get("input") == "user":
            return str(payload.get("agent", "")), "input"
        if payload.get("input") == "call":
            return THREAD, "calls"
        return None
    stream = _STREAM_OF_KIND.get(entry.kind)
    if stream is None:
        return None
    return (THREAD if stream == "result" else str(payload.get("agent", ""))), stream


def readable(value: Any) -> Any:
    """A value as JSON for people and snapshots (lossy: a tuple becomes a list, an object its text)."""
    shown = json_value(value)
    try:
        strict_json.check(shown, where="value")
    except StoreError:
        return repr(value).encode("utf-8", "replace").decode("utf-8")
    return shown


class Journal:
    """The committer and replayer of one thread: the recorder (runtime.recorder.Recorder) of the run that
    executes it."""

    def __init__(self, store: Store, thread_id: str, entries: Iterable[Entry], *, last: int) -> None:
        self.store = store
        self.thread_id = thread_id
        self.last = last
        """The number of the last entry of the thread this process knows (the next append's expected_last)."""
        self._instances: Mapping[str, AgentInstance] | None = None
        """The recorded run's agents by id, in creation order (given by `watch`): their names in the log and
        their variables in snapshots; None before a run is watched."""
        self._lock = asyncio.Lock()
        self._queues: dict[tuple[str, str], deque[Entry]] = {}
        self._counts: dict[tuple[str, str], int] = {}
        self.unreplayed = 0
        """Entries of the log the run has not reached yet."""
        self.answers = 0
        """Model answers committed in the thread (replayed or live)."""
        self.answers_in_log = 0
        """Model answers the log held when it was loaded (what a scripted model has already given)."""
        self.turns = 0
        """Accepted model turns (replayed or live)."""
        self.tokens = {"prompt": 0, "completion": 0}
        """Tokens of the model answers committed in the thread (replayed or live), as the models counted them."""
        self.prompts = PromptLog()
        """The shared prompt parts the log holds, so a turn stores only the part of its prompt that is new."""
        self.transcript: list[dict[str, str]] = []
        """What the user saw and said, in order: `{"from": ..., "text": ...}`."""
        self.status = ThreadStatus.RUNNING.value
        self.waiting: str | None = None
        """The agent label waiting for the user, if any."""
        self.result: Any = None
        """The readable result of the run or of the last call."""
        self._labels: dict[str, str] = {}
        self._replayed_answer: dict[str, Entry] = {}
        self._snapshot_due: int | None = None
        self._uncertain = False
        self._frozen: str | None = None
        self._failure: BaseException | None = None
        for entry in entries:
            self.prompts.note(entry)
            place = stream_of(entry)
            if place is None:
                continue
            self._queues.setdefault(place, deque()).append(entry)
            self.unreplayed += 1
            if entry.kind == EntryKind.TURN:
                self.answers_in_log += 1

    def watch(self, instances: Mapping[str, AgentInstance]) -> None:
        """Record the run whose agents these are (runtime.recorder.Recorder; the run keeps the mapping live)."""
        self._instances = instances

    # --- agents and streams -----------------------------------------------------------------------------

    def label(self, instance: AgentInstance) -> str:
        """The agent's name in the log: its class for the class's first instance, else `Class#id` (ids
        follow creation order, which a resumed run repeats)."""
        label = self._labels.get(instance.id)
        if label is None:
            first = self._first_of_class(instance)
            label = instance.klass if first is instance else f"{instance.klass}#{instance.id}"
            self._labels[instance.id] = label
        return label

    def _first_of_class(self, instance: AgentInstance) -> AgentInstance:
        """The first instance of `instance`'s class the run created."""
        for candidate in (self._instances or {}).values():
            if candidate.klass == instance.klass:
                return candidate
        return instance

    def _take(self, label: str, stream: str) -> Entry | None:
        """The next recorded entry of the stream (counted), or None when the run is live there."""
        key = (label, stream)
        self._counts[key] = self._counts.get(key, 0) + 1
        queue = self._queues.get(key)
        if not queue:
            return None
        self.unreplayed -= 1
        return queue.popleft()

    def replaying(self, agent_id: str) -> bool:
        """Whether the agent still has entries to replay (what it says meanwhile was shown before)."""
        if not self.unreplayed:
            return False
        label = self._labels.get(agent_id)
        if label is None:
            instance = self._instances.get(agent_id) if self._instances is not None else None
            if instance is None:
                return False
            label = self.label(instance)
        return any(queue for (owner, _), queue in self._queues.items() if owner == label)

    def recorded(self, label: str, stream: str) -> int:
        """How many entries of the stream the run has still to replay."""
        return len(self._queues.get((label, stream), ()))

    def skip(self, first: int, last: int) -> None:
        """Drop the entries numbered `first` to `last` from the replay (a call that failed: rolled back).
        Its Python and remote calls still count, so the calls after it get keys of their own."""
        for key, queue in self._queues.items():
            kept = deque(entry for entry in queue if not first <= entry.number <= last)
            skipped = len(queue) - len(kept)
            self.unreplayed -= skipped
            self._queues[key] = kept
            if key[1] == "call" and skipped:
                self._counts[key] = self._counts.get(key, 0) + skipped

    def _more_of(self, label: str) -> bool:
        """Whether the log still holds anything the agent did (in any of its streams)."""
        return any(queue for (owner, _), queue in self._queues.items() if owner == label)

    def unanswered_wait(self) -> str | None:
        """The agent whose wait for the user the log leaves unanswered (the thread waits for it), or None."""
        waits = {label: len(queue) for (label, stream), queue in self._queues.items() if stream == "wait"}
        for label, count in waits.items():
            if count > self.recorded(label, "input"):
                return label
        return None

    def has_recorded(self, instance: AgentInstance, stream: str) -> bool:
        """Whether the log still holds an entry of `stream` for this agent."""
        return bool(self._queues.get((self.label(instance), stream)))

    def holds_user_input(self, instance: AgentInstance) -> bool:
        """Whether the log still holds a user input for this agent."""
        return self.has_recorded(instance, "input")

    def pending_call(self) -> Entry | None:
        """The recorded call of a thread of calls that the run has not replayed yet, if any."""
        queue = self._queues.get((THREAD, "calls"))
        return queue[0] if queue else None

    def mismatch(self, entry: Entry, recorded: str, asked: str) -> ReplayMismatch:
        return ReplayMismatch(
            f"thread {self.thread_id!r} entry {entry.number}: the log recorded {recorded}, but the resumed "
            f"run {asked}; the program or pal-bridge changed since the thread ran, so it cannot be resumed "
            f"(fork it before entry {entry.number} with `pal fork`, or start a new thread)"
        )

    # --- writing ------------------------------------------------------------------------------------------

    def freeze(self, reason: str, error: BaseException | None = None) -> None:
        """Record nothing more but how the run ended: the run failed, and what its agents do while it
        unwinds (a meeting ended by the failing playbook, the messages that go out) is not part of the
        thread. A resumed run then continues from where the failure struck, as after a crash. An agent
        that tries to record something after that gets the run's own failure (`error`)."""
        self._frozen = reason
        self._failure = error

    async def append(
        self, kind: str, payload: dict[str, Any], *, key: str | None = None, status: str | None = None
    ) -> int:
        """Append one entry (and set the thread's status with it); its number."""
        stop = kind in (EntryKind.WAIT, EntryKind.STATUS, "result")
        if self._frozen is not None and kind != EntryKind.STATUS:
            if self._failure is not None:
                # Another agent's failure ended the run while this one was still going: it stops with that
                # failure, which is what the run reports (not a stale view of the thread).
                raise self._failure
            raise ThreadTakenOver(
                f"thread {self.thread_id!r} records nothing more: the run failed ({self._frozen})"
            )
        async with self._lock:
            if self._uncertain:
                self.last = (await self.store.get_thread(self.thread_id)).last_entry
                self._uncertain = False
            if self._snapshot_due is not None and not stop:
                await self._snapshot(self._snapshot_due)
            entry = NewEntry(kind=kind, payload=payload, key=key)
            try:
                done = await self.store.append(self.thread_id, entry, expected_last=self.last, status=status)
            except AppendConflict as conflict:
                raise ThreadTakenOver(
                    f"thread {self.thread_id!r} was continued by another process (its log moved from entry "
                    f"{conflict.expected_last} to {conflict.actual_last}); this run stops"
                ) from conflict
            except asyncio.CancelledError:
                self._uncertain = True  # a cancelled store call may still have committed
                raise
            self.last = done.last
            if status is not None:
                self.status = str(status)
            if stop:
                await self._snapshot(done.last)
            elif done.snapshot_due:
                self._snapshot_due = done.last
            return done.last

    async def _snapshot(self, at: int) -> None:
        self._snapshot_due = None
        if self._instances is None:
            return  # nothing to read the state from (a message answering a wait, from another process)
        try:
            await self.store.put_snapshot(self.thread_id, at=at, state=self.readable_state())
        except StoreError as error:  # derived data: a snapshot that cannot be stored is skipped
            logger.warning("thread %s: no snapshot at entry %d: %s", self.thread_id, at, error)

    def readable_state(self) -> dict[str, Any]:
        """What reading the thread needs: status, the agents' variables, the transcript, the counts."""
        agents: dict[str, Any] = {}
        if self._instances is not None:
            for instance in list(self._instances.values()):
                agents[self.label(instance)] = {
                    "class": instance.klass,
                    "id": instance.id,
                    "variables": readable(instance.state.variables.snapshot()),
                }
        return {
            "status": self.status,
            "waiting": self.waiting,
            "agents": agents,
            "transcript": list(self.transcript),
            "answers": self.answers,
            "turns": self.turns,
            "tokens": dict(self.tokens),
            "result": self.result,
        }

    # --- model answers ---------------------------------------------------------------------------------

    def replay_answer(self, instance: AgentInstance, request: ModelRequest) -> ModelResponse | None:
        """The recorded answer to this request, or None to ask the model (the run is live here)."""
        label = self.label(instance)
        entry = self._take(label, "model")
        if entry is None:
            return None
        payload = entry.payload
        metadata = request.metadata
        recorded = (payload.get("request"), payload.get("playbook"), payload.get("line"))
        asked = (request.kind.value, _text(metadata.get("playbook")), _text(metadata.get("line")))
        if recorded != asked:
            raise self.mismatch(entry, _where(label, *recorded), f"asks the model {_where(label, *asked)}")
        self.answers += 1
        if request.kind is RequestKind.TURN:
            self._replayed_answer[label] = entry
        tokens = payload.get("tokens") or {}
        self._count_tokens(int(tokens.get("prompt", 0)), int(tokens.get("completion", 0)))
        return ModelResponse(
            text=str(payload["answer"]),
            model=str(payload.get("model", "replay")),
            usage=Usage(
                prompt_tokens=int(tokens.get("prompt", 0)), completion_tokens=int(tokens.get("completion", 0))
            ),
        )

    async def commit_answer(
        self,
        instance: AgentInstance,
        request: ModelRequest,
        response: ModelResponse,
        *,
        turn: VerifiedTurn | None = None,
        problems: list[str] | None = None,
    ) -> None:
        """Commit a model answer before anything of it is applied: for a playbook turn, with the verifier's
        verdict and what it changes. An answer that was replayed is only checked against its record."""
        label = self.label(instance)
        if request.kind is RequestKind.TURN:
            replayed = self._replayed_answer.pop(label, None)
            if replayed is not None:
                verdict = "accepted" if turn is not None else "rejected"
                if replayed.payload.get("verdict") != verdict:
                    raise self.mismatch(
                        replayed,
                        f"an answer the verifier {replayed.payload.get('verdict')}",
                        f"found it {verdict}",
                    )
                if turn is not None:
                    self.turns += 1
                return
        metadata = request.metadata
        payload: dict[str, Any] = {
            "agent": label,
            "request": request.kind.value,
            "playbook": _text(metadata.get("playbook")),
            "line": _text(metadata.get("line")),
            "answer": response.text,
            "model": response.model,
            "tokens": {
                "prompt": response.usage.prompt_tokens,
                "completion": response.usage.completion_tokens,
            },
        }
        prompt = self.prompts.record(request.messages, key=PromptLog.key(label, payload["playbook"]))
        payload["prompt"] = prompt.items  # for readers (pal studio); nothing replays from it
        if turn is not None:
            payload["verdict"] = "accepted"
            payload["changed"] = turn_changes(turn, instance)
            if turn.repairs:
                payload["repairs"] = [repaired.format() for repaired in turn.repairs]
        elif problems is not None:
            payload["verdict"] = "rejected"
            payload["problems"] = list(problems)
        _probe("model.answered", agent=label, answer=self.answers + 1)
        number = await self.append(EntryKind.TURN, payload)
        self.prompts.written(number, prompt)
        self._count_tokens(response.usage.prompt_tokens, response.usage.completion_tokens)
        self.answers += 1
        if turn is not None:
            self.turns += 1
        _probe("model.committed", agent=label, answer=self.answers, entry=number)

    def _count_tokens(self, prompt: int, completion: int) -> None:
        self.tokens["prompt"] += prompt
        self.tokens["completion"] += completion

    # --- Python and remote calls ---------------------------------------------------------------------------

    async def call(
        self,
        instance: AgentInstance,
        playbook: Playbook,
        arguments: Mapping[str, Any],
        invoke: Callable[[], Awaitable[Any]],
    ) -> Any:
        """Make a Python or remote playbook call, or answer it from the log: its result is committed before
        the caller sees it. The call reads its idempotency key with `runtime.python_api.idempotency_key()`.

        A call that failed is made again when the log holds nothing its agent did after it (the failure
        stopped the agent, so nothing recorded depends on it): resuming a thread that failed retries the
        call that failed, with the same key, and records the retry (`retry_of`) after the failure."""
        label = self.label(instance)
        entry = self._take(label, "call")
        number = self._counts[(label, "call")]
        key = f"{self.thread_id}#{label}:{number}"
        retry_of: Entry | None = None
        attempt = 0
        if entry is not None:
            payload = entry.payload
            if payload.get("playbook") != playbook.name:
                raise self.mismatch(
                    entry,
                    f"{label}'s call of {payload.get('playbook')}",
                    f"calls {playbook.name} at that point",
                )
            entry, attempt = self._latest_attempt(label, entry)
            payload = entry.payload
            if "error" in payload and not payload.get("rerun") and not self._more_of(label):
                retry_of = entry  # the failure this run stopped at: made again, live, below
            elif not payload.get("rerun"):
                if "error" in payload:
                    raise _replayed_failure(payload, instance.klass, playbook.name)
                return codec.decode(payload.get("result"))
            else:
                # It reached back into the run: run it again; what it did inside replays from the log.
                token = current_call.set(CallInProgress(key=key))
                try:
                    return await invoke()
                finally:
                    current_call.reset(token)
        record = CallInProgress(key=key)
        token = current_call.set(record)
        error: PlaybookFailed | None = None
        try:
            result = await invoke()
        except PlaybookFailed as failure:
            error, result = failure, None
        finally:
            current_call.reset(token)
        _probe("call.returned", agent=label, call=number, playbook=playbook.name)
        payload = {
            "agent": label,
            "playbook": playbook.name,
            "via": "remote" if playbook.kind is PlaybookKind.REMOTE else "python",
            "arguments": readable(dict(arguments)),
        }
        if retry_of is not None:
            payload["retry_of"] = retry_of.number
        if error is not None:
            payload["error"] = str(error)
        else:
            try:
                payload["result"] = codec.encode(result)
            except codec.Unstorable as why:
                payload["rerun"] = True
                payload["shown"] = readable(result)
                payload["why"] = str(why)
        if record.touched:
            payload["rerun"] = True
        entry_key = key if retry_of is None else f"{key}/retry{attempt + 1}"
        written = await self.append(EntryKind.CALL, payload, key=entry_key)
        _probe("call.committed", agent=label, call=number, entry=written)
        if error is not None:
            raise error
        return result

    def _latest_attempt(self, label: str, entry: Entry) -> tuple[Entry, int]:
        """The last recorded attempt of a call (a failed call's retries follow it in the agent's calls, each
        naming the one before: `retry_of`), and how many retries there were."""
        queue = self._queues.get((label, "call"))
        attempts = 0
        while queue and queue[0].payload.get("retry_of") == entry.number:
            entry = queue.popleft()
            self.unreplayed -= 1
            attempts += 1
        return entry, attempts

    # --- the user ----------------------------------------------------------------------------------------

    async def user_input(
        self, instance: AgentInstance, read: Callable[[], Awaitable[str | None]]
    ) -> str | None:
        """The user's next message to this agent: from the log, else asked (after committing the wait, so
        another process can answer it) and committed before the run sees it. None when nobody answers."""
        label = self.label(instance)
        waited = self._take(label, "wait")
        answered = self._take(label, "input")
        if answered is not None:
            text = str(answered.payload.get("text", ""))
            self.transcript.append({"from": "user", "text": text})
            return text
        if waited is None:
            self.waiting = label
            number = await self.append(
                EntryKind.WAIT, {"agent": label}, status=ThreadStatus.WAITING_FOR_USER.value
            )
            _probe("wait.committed", agent=label, entry=number)
        else:
            self.waiting = label
            self.status = ThreadStatus.WAITING_FOR_USER.value
        text = await read()
        if text is None:
            return None
        await self.commit_input(label, text)
        return text

    async def commit_input(self, label: str, text: str) -> int:
        """Commit the user's answer to `label`'s wait; the thread runs again."""
        self.waiting = None
        number = await self.append(
            EntryKind.INPUT,
            {"input": "user", "agent": label, "text": text},
            status=ThreadStatus.RUNNING.value,
        )
        self.transcript.append({"from": "user", "text": text})
        _probe("input.committed", agent=label, entry=number)
        return number

    # --- messages between agents ------------------------------------------------------------------------------

    async def deliveries(
        self,
        instance: AgentInstance,
        take: Callable[[], Awaitable[list[Message]]],
        accepts: Callable[[Message], bool],
    ) -> list[Message]:
        """The batch of messages the agent reads next: taken live and committed before it acts on them, or,
        while replaying, exactly the recorded batch, taken from its inbox as its senders send it again."""
        label = self.label(instance)
        entry = self._take(label, "delivery")
        if entry is None:
            messages = await take()
            payload = {"agent": label, "messages": [_delivered(message) for message in messages]}
            number = await self.append(EntryKind.MESSAGE, payload)
            _probe("delivery.committed", agent=label, entry=number)
            return messages
        wanted = [_signature_of(record) for record in entry.payload["messages"]]
        messages: list[Message] = []
        try:
            async with asyncio.timeout(REPLAY_DELIVERY_TIMEOUT):
                for signature in wanted:  # in the order the agent read them
                    messages += await instance.inbox.get_batch(
                        lambda message, wanted=signature: _signature(message) == wanted and accepts(message),
                        max_messages=1,
                    )
        except TimeoutError:
            raise self.mismatch(
                entry,
                f"{label} reading {len(wanted)} message(s) ({_describe(wanted)})",
                f"did not send {'it' if len(wanted) == 1 else 'them'} within {REPLAY_DELIVERY_TIMEOUT:g} s",
            ) from None
        return messages

    # --- threads of calls ------------------------------------------------------------------------------------

    async def begin_call(self, qualified: str, arguments: Mapping[str, Any]) -> int:
        """Commit the start of a call of a thread of calls (its playbook and arguments)."""
        self._counts[(THREAD, "calls")] = self._counts.get((THREAD, "calls"), 0) + 1
        return await self.append(
            EntryKind.INPUT,
            {"input": "call", "playbook": qualified, "arguments": codec.encode(dict(arguments))},
            status=ThreadStatus.RUNNING.value,
        )

    def next_recorded_call(self) -> Entry | None:
        """Take the next recorded call of the thread to replay (None: none left)."""
        return self._take(THREAD, "calls")

    def recorded_result(self) -> Entry | None:
        """Take the recorded result of the call being replayed (None: it did not finish)."""
        return self._take(THREAD, "result")

    async def end_call(self, *, value: Any, said: list[str], error: str | None) -> int:
        """Commit how a call of a thread of calls ended."""
        self.result = readable(value)
        payload: dict[str, Any] = {"value": self.result, "said": list(said)}
        if error is not None:
            payload["error"] = error
        status = ThreadStatus.FAILED if error is not None else ThreadStatus.FINISHED
        return await self.append("result", payload, status=status.value)

    async def finish(self, status: ThreadStatus, reason: str, result: Any = None) -> int:
        """Commit how the run ended (finished, failed, interrupted)."""
        self.result = readable(result)
        self.waiting = None
        payload: dict[str, Any] = {"status": status.value, "reason": reason}
        if result is not None:
            payload["result"] = self.result
        return await self.append(EntryKind.STATUS, payload, status=status.value)


def turn_changes(turn: VerifiedTurn, instance: AgentInstance) -> dict[str, Any]:
    """What an accepted turn changes, as the log shows it: the steps it executes, the variables it sets, what
    it says to the user, the calls it makes, where it goes next."""
    steps: list[str] = []
    variables: dict[str, Any] = {}
    calls: list[str] = []
    returned: Any = None
    has_return = False
    for action in turn.actions:
        if isinstance(action, ExecutedStep):
            steps.extend(action.implied)
            steps.append(action.step.line)
            calls.extend(
                f"{call.name}({', '.join(_argument_text(argument) for argument in call.arguments)})"
                for call in action.calls
            )
        elif isinstance(action, VarAction) and action.name != "__":
            variables[action.name] = readable(action.value)
        elif isinstance(action, ReturnAction):
            has_return = True
            returned = readable(action.value)
    changed: dict[str, Any] = {"steps": steps, "next": turn.next_line}
    if variables:
        changed["vars"] = variables
    said = _said(turn)
    if said:
        changed["said"] = said
    if calls:
        changed["calls"] = calls
    if turn.yield_target is not None:
        changed["yield"] = str(turn.yield_target.value)
    if has_return:
        changed["returned"] = returned
    return changed


def _argument_text(argument: Any) -> str:
    return f"{argument.name}={argument.text}" if argument.name else str(argument.text)


def _said(turn: VerifiedTurn) -> list[str]:
    """What the turn's own Say calls with a literal message say to the user."""
    said: list[str] = []
    for action in turn.actions:
        if not isinstance(action, ExecutedStep):
            continue
        for call in action.calls:
            if call.name not in SPEECH_CALLS or not call.arguments:
                continue
            values = [argument.value for argument in call.arguments if argument.value is not None]
            texts = [value for value in values if isinstance(value, str)]
            if len(texts) >= 2 and texts[0].strip().lower() in ("user", "human", "the user"):
                said.append(texts[-1])
            elif len(call.arguments) == 1 and texts:
                said.append(texts[0])
    return said


def _replayed_failure(payload: Mapping[str, Any], agent: str, playbook: str) -> PlaybookFailed:
    """The recorded failure, raised again as it was said (its text already names the agent and playbook)."""
    failure = PlaybookFailed(str(payload["error"]))
    failure.agent, failure.playbook = agent, playbook
    return failure


def _delivered(message: Message) -> dict[str, Any]:
    return {
        "from": message.sender_id,
        "class": message.sender_klass,
        "type": message.message_type.value,
        "meeting": message.meeting_id,
        "content": message.content,
    }


def _signature(message: Message) -> tuple[Any, ...]:
    return (message.sender_id, message.message_type.value, message.meeting_id, message.content)


def _signature_of(record: Mapping[str, Any]) -> tuple[Any, ...]:
    return (record.get("from"), record.get("type"), record.get("meeting"), record.get("content"))


def _describe(signatures: list[tuple[Any, ...]]) -> str:
    shown = [f"from {sender}: {str(content)[:40]!r}" for sender, _, _, content in signatures[:3]]
    return "; ".join(shown) + ("; ..." if len(signatures) > 3 else "")


def _text(value: Any) -> str | None:
    return None if value is None or value == "" else str(value)


def _where(label: str, kind: Any, playbook: Any, line: Any) -> str:
    place = ":".join(str(part) for part in (playbook, line) if part)
    return f"a {kind} answer for {label}" + (f" at {place}" if place else "")


def _probe(point: str, **details: Any) -> None:
    for probe in PROBES:
        probe(point, details)

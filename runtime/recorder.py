"""What a run tells whoever records it: the recorder interface, and the default that records nothing.

A durable run (runtime.session) commits every input the program cannot reproduce before acting on it, and a
resumed run takes those inputs from its log instead of asking again: model answers, Python and remote call
results, the user's input, the batches of messages an agent reads. The run does not know how that is done: it
hands each such point to its `Recorder`, which either answers from the log or does the live work (the callable
it is given) and commits what came back. `runtime.session.journal.Journal` is the recorder of a durable run;
`NO_RECORDER`, a run's default, does the live work and keeps nothing, so a run has no `if recorded` branches.

The link goes one way: the run holds its recorder; the recorder is told once (`watch`) which agents the run has,
to name them in the log and read their variables for snapshots, and never reaches back into the run.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from pal_core.contract.verify import VerifiedTurn
    from pal_core.ir import Playbook
    from pal_core.messaging import Message
    from runtime.agent import AgentInstance
    from runtime.models.base import ModelRequest, ModelResponse


class Recorder(Protocol):
    """Commits a run's inputs before they are used, and answers a resumed run from what it committed."""

    @property
    def thread_id(self) -> str:
        """The thread the run is recorded in (traces name it); empty when nothing is recorded."""
        ...

    def watch(self, instances: Mapping[str, AgentInstance]) -> None:
        """The run's agents by id, kept live by the run (creation order is the order of the mapping)."""
        ...

    def replay_answer(self, agent: AgentInstance, request: ModelRequest) -> ModelResponse | None:
        """The recorded answer to `request`, or None: ask the model (the run is live here)."""
        ...

    async def commit_answer(
        self,
        agent: AgentInstance,
        request: ModelRequest,
        response: ModelResponse,
        *,
        turn: VerifiedTurn | None = None,
        problems: list[str] | None = None,
    ) -> None:
        """Commit a model answer before any of it is applied; a playbook turn's with the verifier's verdict
        (the accepted `turn`, or the broken rules as `problems`)."""
        ...

    async def call(
        self,
        agent: AgentInstance,
        playbook: Playbook,
        arguments: Mapping[str, Any],
        invoke: Callable[[], Awaitable[Any]],
    ) -> Any:
        """A Python or remote playbook call: `invoke()` it and commit its result before the caller sees it,
        or answer it from the log."""
        ...

    async def user_input(self, agent: AgentInstance, read: Callable[[], Awaitable[str | None]]) -> str | None:
        """The user's next message to `agent`: from the log, or `read()` (None: nobody answers) and committed."""
        ...

    def holds_user_input(self, agent: AgentInstance) -> bool:
        """Whether the log still holds a user input for `agent` (a question can then be answered)."""
        ...

    async def deliveries(
        self,
        agent: AgentInstance,
        take: Callable[[], Awaitable[list[Message]]],
        accepts: Callable[[Message], bool],
    ) -> list[Message]:
        """The next batch of messages `agent` reads: `take()` and committed, or the recorded batch (`accepts`
        is the reader's own filter)."""
        ...

    def freeze(self, reason: str, error: BaseException | None = None) -> None:
        """The run failed: record nothing more of what its agents do while it unwinds."""
        ...


class NoRecorder:
    """The recorder of a run nobody records: every point does its live work; nothing is kept."""

    __slots__ = ()

    @property
    def thread_id(self) -> str:
        return ""

    def watch(self, instances: Mapping[str, AgentInstance]) -> None:
        return None

    def replay_answer(self, agent: AgentInstance, request: ModelRequest) -> ModelResponse | None:
        return None

    async def commit_answer(
        self,
        agent: AgentInstance,
        request: ModelRequest,
        response: ModelResponse,
        *,
        turn: VerifiedTurn | None = None,
        problems: list[str] | None = None,
    ) -> None:
        return None

    async def call(
        self,
        agent: AgentInstance,
        playbook: Playbook,
        arguments: Mapping[str, Any],
        invoke: Callable[[], Awaitable[Any]],
    ) -> Any:
        return await invoke()

    async def user_input(self, agent: AgentInstance, read: Callable[[], Awaitable[str | None]]) -> str | None:
        return await read()

    def holds_user_input(self, agent: AgentInstance) -> bool:
        return False

    async def deliveries(
        self,
        agent: AgentInstance,
        take: Callable[[], Awaitable[list[Message]]],
        accepts: Callable[[Message], bool],
    ) -> list[Message]:
        return await take()

    def freeze(self, reason: str, error: BaseException | None = None) -> None:
        return None


NO_RECORDER: Recorder = NoRecorder()
"""The recorder of runs nobody records."""

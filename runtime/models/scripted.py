"""ScriptedModel: a deterministic model for tests and demos; answers from a list, or from a function of the
request. It keeps every request it received so a test can check the prompts.

Every request has a kind (runtime.models.base.RequestKind). A trigger check (asked after messages arrive,
between playbook turns) must be answered by an answer meant for one — `ScriptedAnswer(text, kind="triggers")`,
or `{"kind": "triggers", "text": ...}` in a JSONL file — and such an answer answers nothing else: a script that
did not expect the check stops with an error saying so, instead of silently going out of step."""

from __future__ import annotations

import inspect
import json
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from runtime.models.base import Model, ModelError, ModelRequest, ModelResponse, RequestKind, TurnShaping

AnswerFunction = Callable[[ModelRequest], "str | Awaitable[str]"]
"""A function that answers a request, plain or async."""

PROMPT_TAIL_CHARS = 400
"""How much of the prompt's end an exhaustion error shows."""


@dataclass(frozen=True, slots=True)
class ScriptedAnswer:
    """One scripted answer with the kind of request it is for (None: any request but a trigger check)."""

    text: str
    """The answer."""
    kind: RequestKind | None = None
    """The request kind it answers."""


class ScriptedModel(Model):
    """Answers in order from a list of strings, or by calling a function with each request.

    With a list, call n gets answer n; one call more than there are answers raises ModelError naming how
    many answers there were and showing the end of the prompt, so a failing test shows where it stopped.
    With `shaping`, its requests are shaped as that model's would be (the bundled model's grammar and example
    turns: `ScriptedModel(answers, shaping=local_turn_shaping())`), so a script can stand in for it.
    """

    def __init__(
        self,
        answers: Sequence[str | ScriptedAnswer] | AnswerFunction,
        *,
        name: str = "scripted",
        shaping: TurnShaping | None = None,
    ) -> None:
        if isinstance(answers, str | bytes):
            raise TypeError(
                f"ScriptedModel takes a list of answers or a function, not one {type(answers).__name__}; "
                f"write ScriptedModel([{answers!r}])"
            )
        self._function: AnswerFunction | None = None
        self._answers: tuple[ScriptedAnswer, ...] = ()
        if callable(answers):
            self._function = answers
        elif isinstance(answers, Sequence):
            scripted: list[ScriptedAnswer] = []
            for index, answer in enumerate(answers):
                if isinstance(answer, str):
                    scripted.append(ScriptedAnswer(answer))
                elif isinstance(answer, ScriptedAnswer):
                    scripted.append(
                        ScriptedAnswer(answer.text, RequestKind(answer.kind) if answer.kind else None)
                    )
                else:
                    raise TypeError(
                        f"ScriptedModel answer {index} is a {type(answer).__name__}, not a str or ScriptedAnswer"
                    )
            self._answers = tuple(scripted)
        else:
            raise TypeError(
                f"ScriptedModel takes a list of answers or a function, not a {type(answers).__name__}"
            )
        self._name = name
        self._shaping = shaping
        self._requests: list[ModelRequest] = []
        self._offset = 0

    @classmethod
    def from_jsonl(cls, path: str | Path, *, name: str | None = None) -> ScriptedModel:
        """Answers from a JSONL file with one `{"text": "..."}` object per line (blank lines skipped)."""
        file = Path(path)
        try:
            lines = file.read_text(encoding="utf-8").splitlines()
        except OSError as exc:
            raise ModelError(f"cannot read scripted answers from {file}: {exc.strerror or exc}") from exc
        answers: list[ScriptedAnswer] = []
        for number, line in enumerate(lines, start=1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except json.JSONDecodeError as exc:
                raise ModelError(f"{file}:{number}: not a JSON object: {exc.msg}") from exc
            if not isinstance(record, dict) or not isinstance(record.get("text"), str):
                raise ModelError(
                    f'{file}:{number}: expected an object with a string "text", got {line[:80]!r}'
                )
            kind = record.get("kind")
            if kind is not None and kind not in set(RequestKind):
                known = ", ".join(item.value for item in RequestKind)
                raise ModelError(f'{file}:{number}: "kind" must be one of {known}, not {kind!r}')
            answers.append(ScriptedAnswer(record["text"], RequestKind(kind) if kind else None))
        return cls(answers, name=name if name is not None else f"scripted:{file}")

    @property
    def name(self) -> str:
        """The model's name in traces and errors."""
        return self._name

    @property
    def requests(self) -> tuple[ModelRequest, ...]:
        """Every request received, in order (including one that found no answer)."""
        return tuple(self._requests)

    @property
    def calls(self) -> int:
        """How many requests were received."""
        return len(self._requests)

    @property
    def remaining(self) -> int | None:
        """Answers not yet given; None when answers come from a function."""
        if self._function is not None:
            return None
        return max(len(self._answers) - len(self._requests) - self._offset, 0)

    def turn_shaping(self) -> TurnShaping | None:
        """The shaping given at construction (None: plain prompts)."""
        return self._shaping

    def resume_thread(self, answered: int) -> None:
        """A durable run resumes a thread whose log already holds `answered` answers (replayed from the log,
        not asked again): the next request gets answer `answered + 1`, as if this model had given them. The
        runtime calls this when it resumes a thread (runtime.session); a list of answers then goes on where
        the thread left off, in any process."""
        self._offset = answered - len(self._requests)

    async def complete(self, request: ModelRequest) -> ModelResponse:
        """The next answer (list) or the function's answer to `request`."""
        self._requests.append(request)
        call = len(self._requests) + self._offset
        if self._function is None:
            if call > len(self._answers):
                raise ModelError(
                    f"{self._name} ran out of answers: it had {len(self._answers)} and this is call {call} "
                    f"({request.kind.value}); the prompt ended with:\n{_prompt_tail(request)}"
                )
            answer = self._answers[call - 1]
            meant = answer.kind
            fits = meant is request.kind or (meant is None and request.kind is not RequestKind.TRIGGERS)
            if not fits:
                wanted = (
                    "a trigger check"
                    if request.kind is RequestKind.TRIGGERS
                    else f"a {request.kind.value} request"
                )
                raise ModelError(
                    f"{self._name}: call {call} is {wanted}, but scripted answer {call} is for "
                    f"{'a trigger check' if meant is RequestKind.TRIGGERS else (meant.value if meant else 'a playbook turn')}"
                    f' (in a JSONL file, mark trigger-check answers {{"kind": "triggers", "text": ...}}); '
                    f"the prompt ended with:\n{_prompt_tail(request)}"
                )
            return ModelResponse(text=answer.text, model=self._name)
        answer = self._function(request)
        if inspect.isawaitable(answer):
            answer = await answer
        if not isinstance(answer, str):
            raise TypeError(
                f"{self._name}: the answer function {_describe(self._function)} returned a "
                f"{type(answer).__name__} for call {call}; it must return a str"
            )
        return ModelResponse(text=answer, model=self._name)

    def __repr__(self) -> str:
        source = _describe(self._function) if self._function else f"{len(self._answers)} answers"
        return f"ScriptedModel({source}, name={self._name!r}, calls={self.calls})"


def _prompt_tail(request: ModelRequest) -> str:
    if not request.messages:
        return "    (no messages)"
    last = request.messages[-1]
    text = last.content
    if len(text) > PROMPT_TAIL_CHARS:
        text = "..." + text[-PROMPT_TAIL_CHARS:]
    body = "\n".join(f"    {line}" for line in text.splitlines()) or "    (empty)"
    return f"    [{last.role}]\n{body}"


def _describe(function: object) -> str:
    return getattr(function, "__qualname__", None) or repr(function)

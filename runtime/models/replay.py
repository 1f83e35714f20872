"""ReplayModel: records a real model's answers to a JSONL cassette and replays them offline.

One record per line: `{"prompt_hash", "model", "request", "text", "usage"}`. Answers are looked up by
`ModelRequest.prompt_hash()`; a prompt asked several times gets its recorded answers in recorded order.
Each record is written and flushed as soon as its answer arrives, so a crashed run keeps what it paid for;
a half-written last line (the crash landed mid-write) is ignored on reading and cut off before appending.
"""

from __future__ import annotations

import json
from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, get_args

from runtime.models.base import (
    Model,
    ModelError,
    ModelNotAvailable,
    ModelRequest,
    ModelResponse,
    TurnShaping,
    Usage,
    with_capabilities,
)

ReplayMode = Literal["replay", "record", "auto"]
"""`replay`: answer only from the cassette. `record`: ask the inner model and append every answer.
`auto`: replay what is recorded, record the rest."""

PREVIEW_LINES = 4
"""How many lines of a prompt's last message a missing-answer error shows."""


class CassetteError(ModelError):
    """A cassette file that cannot be read: bad JSON or a record with missing or mistyped fields."""


@dataclass(frozen=True, slots=True, kw_only=True)
class CassetteRecord:
    """One recorded answer."""

    prompt_hash: str
    """`ModelRequest.prompt_hash()` of the request answered; the lookup key."""
    model: str
    """The model that answered."""
    request: Mapping[str, Any]
    """The request as JSON (messages, sampling settings, metadata), for people reading the cassette."""
    text: str
    """The answer."""
    usage: Usage
    """Token counts of the recorded call."""

    def to_json(self) -> dict[str, Any]:
        """The record as one cassette line's object."""
        return {
            "prompt_hash": self.prompt_hash,
            "model": self.model,
            "request": dict(self.request),
            "text": self.text,
            "usage": {
                "prompt_tokens": self.usage.prompt_tokens,
                "completion_tokens": self.usage.completion_tokens,
            },
        }

    @classmethod
    def from_json(cls, data: object, *, where: str) -> CassetteRecord:
        """A record from a cassette line's object; CassetteError naming `where` if it is malformed."""
        if not isinstance(data, dict):
            raise CassetteError(f"{where}: a record must be a JSON object, not {type(data).__name__}")
        for key, kind in (("prompt_hash", str), ("model", str), ("text", str), ("request", dict)):
            if not isinstance(data.get(key), kind):
                raise CassetteError(
                    f"{where}: field {key!r} must be a {kind.__name__}, got {data.get(key)!r:.60}"
                )
        usage = data.get("usage") or {}
        if not isinstance(usage, dict):
            raise CassetteError(f"{where}: field 'usage' must be an object, got {usage!r:.60}")
        counts = {}
        for key in ("prompt_tokens", "completion_tokens"):
            value = usage.get(key, 0)
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise CassetteError(f"{where}: usage.{key} must be a whole number >= 0, got {value!r}")
            counts[key] = value
        return cls(
            prompt_hash=data["prompt_hash"],
            model=data["model"],
            request=data["request"],
            text=data["text"],
            usage=Usage(**counts),
        )


def request_to_json(request: ModelRequest) -> dict[str, Any]:
    """A request as the JSON object stored in a record (metadata made JSON-safe with `str`)."""
    return {
        "messages": [{"role": message.role, "content": message.content} for message in request.messages],
        "max_tokens": request.max_tokens,
        "temperature": request.temperature,
        "stop": list(request.stop),
        "grammar": request.grammar,
        "seed": request.seed,
        "metadata": json.loads(json.dumps(dict(request.metadata), default=str, ensure_ascii=False)),
    }


@dataclass(frozen=True, slots=True, kw_only=True)
class _CassetteContents:
    records: tuple[CassetteRecord, ...]
    """The complete records, in file order."""
    intact_bytes: int
    """Length of the file up to and including the last complete line; appends start here."""
    needs_newline: bool
    """The last record is complete but has no line break after it."""


def read_cassette(path: str | Path) -> tuple[CassetteRecord, ...]:
    """Every record of a cassette, in file order. CassetteError (with file:line) on a malformed line."""
    return _read(Path(path)).records


def _read(file: Path) -> _CassetteContents:
    try:
        data = file.read_bytes()
    except FileNotFoundError:
        return _CassetteContents(records=(), intact_bytes=0, needs_newline=False)
    except OSError as exc:
        raise CassetteError(f"cannot read cassette {file}: {exc.strerror or exc}") from exc
    records: list[CassetteRecord] = []
    offset = 0
    intact = 0
    needs_newline = False
    lines = data.split(b"\n")
    for number, raw in enumerate(lines, start=1):
        is_last = number == len(lines)
        where = f"{file}:{number}"
        end = offset + len(raw) + (0 if is_last else 1)
        if raw.strip():
            try:
                parsed = json.loads(raw.decode("utf-8"))
            except (UnicodeDecodeError, json.JSONDecodeError) as exc:
                if is_last:
                    # A final line without a line break that does not parse: a write cut short by a crash.
                    break
                raise CassetteError(f"{where}: not a JSON line ({exc})") from exc
            records.append(CassetteRecord.from_json(parsed, where=where))
            needs_newline = is_last
        intact = end
        offset = end
    return _CassetteContents(records=tuple(records), intact_bytes=intact, needs_newline=needs_newline)


class ReplayModel(Model):
    """A model answering from a JSONL cassette, recording the answers of `inner` into it when asked to.

    `mode="replay"` never calls a model and raises ModelNotAvailable for a prompt with no recorded answer;
    `mode="record"` asks `inner` every time and appends each answer (delete the file to start over);
    `mode="auto"` replays recorded answers and records the missing ones.
    """

    def __init__(
        self,
        cassette: str | Path,
        *,
        inner: Model | None = None,
        mode: ReplayMode = "replay",
        name: str | None = None,
    ) -> None:
        if mode not in get_args(ReplayMode):
            raise ValueError(
                f"ReplayModel mode must be one of {', '.join(get_args(ReplayMode))}, not {mode!r}"
            )
        if mode != "replay" and inner is None:
            raise ValueError(
                f"ReplayModel mode {mode!r} records answers, so it needs inner=<the model to record>"
            )
        self.cassette = Path(cassette)
        """The cassette file."""
        self.mode: ReplayMode = mode
        """How answers are found; see the class docstring."""
        self.inner = with_capabilities(inner) if inner is not None else None
        """The model that answers what is not recorded (record and auto modes)."""
        self._name = name if name is not None else f"replay:{self.cassette}"
        if mode == "replay" and not self.cassette.exists():
            raise ModelNotAvailable(
                f"cassette {self.cassette} does not exist; record it first by running with a real model: "
                f"ReplayModel({str(self.cassette)!r}, inner=<model>, mode='auto'), or the model spec "
                f"'replay:{self.cassette}=<model string>'"
            )
        contents = _read(self.cassette)
        self._record_count = len(contents.records)
        self._intact_bytes = contents.intact_bytes
        self._needs_newline = contents.needs_newline
        self._prompt_count = len({record.prompt_hash for record in contents.records})
        self._waiting: dict[str, deque[CassetteRecord]] = {}
        self._asked: dict[str, int] = {}
        if mode != "record":
            for record in contents.records:
                self._waiting.setdefault(record.prompt_hash, deque()).append(record)
        self._prepared_for_append = False
        self.replayed = 0
        """Answers given from the cassette."""
        self.recorded = 0
        """Answers recorded by this instance."""

    @property
    def name(self) -> str:
        """The model's name in traces and errors."""
        return self._name

    @property
    def calls(self) -> int:
        """Requests answered or refused so far."""
        return sum(self._asked.values())

    async def prepare(self) -> None:
        """In `record` mode, which asks the inner model every time, prepare it now (a litellm model checks
        its provider and API key); in the other modes the cassette may answer everything."""
        if self.mode == "record" and self.inner is not None:
            await self.inner.prepare()

    def turn_shaping(self) -> TurnShaping | None:
        """The inner model's: the requests recorded are the ones it was asked (None without one)."""
        return self.inner.turn_shaping() if self.inner is not None else None

    def resume_thread(self, answered: int) -> None:
        """A durable run resumes a thread whose log holds `answered` answers: the inner model (which
        `record` asks every time) goes on where the thread left off, as a scripted one does on its own."""
        if self.inner is not None:
            self.inner.resume_thread(answered)

    async def complete(self, request: ModelRequest) -> ModelResponse:
        """The recorded answer to `request`, or the inner model's answer, recorded."""
        prompt_hash = request.prompt_hash()
        asked = self._asked.get(prompt_hash, 0) + 1
        self._asked[prompt_hash] = asked
        waiting = self._waiting.get(prompt_hash)
        if waiting:
            record = waiting.popleft()
            self.replayed += 1
            return ModelResponse(text=record.text, model=record.model, usage=record.usage)
        if self.mode == "replay" or self.inner is None:
            raise ModelNotAvailable(self._missing_message(request, prompt_hash, asked))
        response = await self.inner.complete(request)
        self._append(
            CassetteRecord(
                prompt_hash=prompt_hash,
                model=response.model,
                request=request_to_json(request),
                text=response.text,
                usage=response.usage,
            )
        )
        self.recorded += 1
        return response

    def _append(self, record: CassetteRecord) -> None:
        line = (json.dumps(record.to_json(), ensure_ascii=False) + "\n").encode("utf-8")
        try:
            if not self._prepared_for_append:
                self._prepare_for_append()
            # One write per record, flushed on close: a crash loses at most the record being written.
            with self.cassette.open("ab") as file:
                file.write(line)
        except OSError as exc:
            raise CassetteError(f"cannot write to cassette {self.cassette}: {exc.strerror or exc}") from exc

    def _prepare_for_append(self) -> None:
        self.cassette.parent.mkdir(parents=True, exist_ok=True)
        if self.cassette.exists():
            size = self.cassette.stat().st_size
            if size > self._intact_bytes:
                with self.cassette.open("r+b") as file:
                    file.truncate(self._intact_bytes)
            if self._needs_newline:
                with self.cassette.open("ab") as file:
                    file.write(b"\n")
        self._prepared_for_append = True

    def _missing_message(self, request: ModelRequest, prompt_hash: str, asked: int) -> str:
        used = asked - 1
        if used:
            why = (
                f"the cassette holds {_plural(used, 'answer')} for this prompt and all were used; "
                f"this is ask number {asked}"
            )
        else:
            why = "no recorded answer for this prompt"
        return (
            f"{why} in cassette {self.cassette} "
            f"({_plural(self._record_count, 'answer')} for {_plural(self._prompt_count, 'prompt')})\n"
            f"  prompt_hash: {prompt_hash}\n"
            f"  {_preview(request)}\n"
            f"To record it, run once with a real model: the model spec 'replay:{self.cassette}=<model string>' "
            f"(or ReplayModel(..., inner=<model>, mode='auto')) records only what is missing."
        )

    def __repr__(self) -> str:
        return f"ReplayModel({str(self.cassette)!r}, mode={self.mode!r}, inner={self.inner!r})"


def _preview(request: ModelRequest) -> str:
    if not request.messages:
        return "the prompt has no messages"
    last = request.messages[-1]
    lines = last.content.splitlines() or [""]
    shown = "\n".join(f"      {line[:160]}" for line in lines[:PREVIEW_LINES])
    more = f"\n      ... ({len(lines) - PREVIEW_LINES} more lines)" if len(lines) > PREVIEW_LINES else ""
    return f"{_plural(len(request.messages), 'message')}; the last ({last.role}) begins:\n{shown}{more}"


def _plural(count: int, noun: str) -> str:
    return f"{count} {noun}{'' if count == 1 else 's'}"

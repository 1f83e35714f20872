"""The stores' own versioned JSON format: what each stored document looks like, how older versions are
upgraded when read, and the thread document (a whole thread in one JSON file, for export, import and the
golden files that keep old formats loadable).

Every stored document carries its format version: a row of a database store has a `format` column next to
its JSON, a thread document a `"version"` key. Reading a document of an older version upgrades it step by
step (`UPGRADES`); a newer version than this pal-bridge knows is refused with a clear error, never guessed.

Format 1 documents (what `UPGRADES` steps take and return):

- thread:   {"id", "program": {"path", "sha256"}, "status", "created", "updated", "metadata",
             "forked_from": null | {"thread_id", "entry"}}
- entry:    {"number", "kind", "key", "created", "payload"}
- snapshot: {"at", "created", "state"}

Times are ISO 8601 UTC text with microseconds in thread documents and integer microseconds since the Unix
epoch (or the database's own timestamp type) in database rows; an upgrade step leaves them alone.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from . import strict_json
from .errors import FormatError, NotJSON, StoreError
from .records import Entry, ForkPoint, ProgramRef, Snapshot, Thread, ThreadStatus

FORMAT_VERSION = 1
"""The version of the documents this pal-bridge writes."""

THREAD_DOCUMENT = "pal-bridge/thread"
"""The `"format"` of a thread document."""

Upgrade = Callable[[dict[str, Any]], dict[str, Any]]

UPGRADES: Mapping[str, Mapping[int, Upgrade]] = {"thread": {}, "entry": {}, "snapshot": {}}
"""For each document kind, the step that turns a document of version N into version N + 1 (keyed by N).
Format 1 is the first: there is nothing to upgrade yet. A new format adds a step here and a golden file
under tests/fixtures/store/."""

MAX_METADATA_BYTES = 16 * 1024
"""Thread metadata is for labels, not data: at most this many bytes as JSON."""

_ID = re.compile(r"[^\s\x00-\x1f\x7f]{1,200}")
_KIND = re.compile(r"[a-z][a-z0-9_.:-]{0,63}")
_KEY = re.compile(r"[^\x00-\x1f\x7f]{1,500}")
_SHA256 = re.compile(r"[0-9a-f]{64}")
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


# --- versions --------------------------------------------------------------------------------------------


def upgrade(
    kind: str,
    version: Any,
    document: dict[str, Any],
    *,
    where: str,
    current: int = FORMAT_VERSION,
    steps: Mapping[str, Mapping[int, Upgrade]] = UPGRADES,
) -> dict[str, Any]:
    """`document` (a `kind` document of format `version`) in the current format."""
    if type(version) is not int or version < 1:
        raise FormatError(f"{where}: format version {version!r} is not a version (1, 2, ...)")
    if version > current:
        raise FormatError(
            f"{where}: written in format {version} by a newer pal-bridge; this one reads formats 1 to "
            f"{current} (upgrade pal-bridge to read it)"
        )
    while version < current:
        step = steps.get(kind, {}).get(version)
        if step is None:
            raise FormatError(f"{where}: no upgrade of a {kind} from format {version} to {version + 1}")
        document = step(document)
        version += 1
    return document


# --- fields --------------------------------------------------------------------------------------------


def check_thread_id(value: Any, *, what: str = "thread id") -> str:
    if type(value) is not str or not _ID.fullmatch(value):
        raise StoreError(
            f"{what} {value!r} must be a string of 1 to 200 characters without spaces or control characters"
        )
    return value


def check_kind(value: Any, *, where: str = "entry kind") -> str:
    if type(value) is not str or not _KIND.fullmatch(value):
        raise StoreError(
            f"{where} {value!r} must be a lowercase word of at most 64 characters (letters, digits and "
            "_ . : -, starting with a letter), such as 'turn', 'call', 'message', 'wait', 'input' or 'status'"
        )
    return value


def check_key(value: Any, *, where: str = "entry key") -> str | None:
    if value is not None and (type(value) is not str or not _KEY.fullmatch(value)):
        raise StoreError(
            f"{where} {value!r} must be None or a string of 1 to 500 characters without control characters"
        )
    return value


def check_number(value: Any, *, what: str, minimum: int = 0) -> int:
    if type(value) is not int or value < minimum:
        raise StoreError(f"{what} must be an integer of at least {minimum}, not {value!r}")
    return value


def check_status(value: Any, *, where: str = "status") -> ThreadStatus:
    try:
        return ThreadStatus(value)
    except ValueError:
        known = ", ".join(status.value for status in ThreadStatus)
        raise StoreError(f"{where} {value!r} is not a thread status ({known})") from None


def check_program(program: Any) -> ProgramRef:
    if not isinstance(program, ProgramRef):
        raise StoreError(
            f"program must be a ProgramRef (ProgramRef.of_file(path)), not {type(program).__name__}"
        )
    if type(program.path) is not str or not program.path or len(program.path) > 4096:
        raise StoreError(f"program path {program.path!r} must be a string of 1 to 4096 characters")
    if type(program.sha256) is not str or not _SHA256.fullmatch(program.sha256):
        raise StoreError(f"program sha256 {program.sha256!r} must be 64 lowercase hex digits")
    return program


def dump_metadata(metadata: Any) -> str:
    text = strict_json.dumps_object({} if metadata is None else metadata, where="metadata")
    if len(text.encode("utf-8")) > MAX_METADATA_BYTES:
        raise StoreError(
            f"metadata is {len(text.encode('utf-8'))} bytes as JSON; thread metadata holds at most "
            f"{MAX_METADATA_BYTES} (keep data in the log)"
        )
    return text


# --- times ---------------------------------------------------------------------------------------------


def micros(moment: datetime) -> int:
    """A UTC time as integer microseconds since the Unix epoch (exact, unlike a float)."""
    return (moment - _EPOCH) // timedelta(microseconds=1)


def from_micros(value: int) -> datetime:
    return _EPOCH + timedelta(microseconds=value)


def iso(moment: datetime) -> str:
    """`2026-01-31T12:00:00.000000Z`: fixed width, so the text sorts as the times do."""
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def parse_iso(value: Any, *, where: str) -> datetime:
    if type(value) is str:
        try:
            moment = datetime.fromisoformat(value)
        except ValueError:
            pass
        else:
            if moment.tzinfo is not None:
                return moment.astimezone(UTC)
    raise FormatError(f"{where}: {value!r} is not an ISO 8601 time with a time zone (2026-01-31T12:00:00Z)")


# --- the thread document -------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class ThreadDocument:
    """A whole thread as one JSON document, read and upgraded to the current format."""

    thread: Thread
    """The thread, with `last_entry` and `snapshot_at` taken from its entries and snapshots."""
    entries: tuple[Entry, ...]
    """Its whole log, numbered from 1."""
    snapshots: tuple[Snapshot, ...]
    """Its snapshots, oldest first."""


def thread_document(
    thread: Thread, entries: Sequence[Entry], snapshots: Sequence[Snapshot]
) -> dict[str, Any]:
    """A thread, its whole log and its snapshots as a format-1 thread document (plain JSON values)."""
    return {
        "format": THREAD_DOCUMENT,
        "version": FORMAT_VERSION,
        "thread": {
            "id": thread.id,
            "program": {"path": thread.program.path, "sha256": thread.program.sha256},
            "status": thread.status.value,
            "created": iso(thread.created),
            "updated": iso(thread.updated),
            "metadata": thread.metadata,
            "forked_from": None
            if thread.forked_from is None
            else {"thread_id": thread.forked_from.thread_id, "entry": thread.forked_from.entry},
        },
        "entries": [
            {
                "number": entry.number,
                "kind": entry.kind,
                "key": entry.key,
                "created": iso(entry.created),
                "payload": entry.payload,
            }
            for entry in entries
        ],
        "snapshots": [
            {"at": snapshot.at, "created": iso(snapshot.created), "state": snapshot.state}
            for snapshot in snapshots
        ],
    }


def read_thread_file(path: str | Path) -> ThreadDocument:
    """A thread document from a JSON file; errors name the file (and line:column for bad JSON)."""
    source = Path(path)
    text = source.read_text(encoding="utf-8")
    try:
        document = json.loads(text)
    except json.JSONDecodeError as error:
        raise FormatError(f"{source}:{error.lineno}:{error.colno}: not JSON: {error.msg}") from None
    try:
        return read_thread_document(document)
    except (FormatError, NotJSON, StoreError) as error:
        raise FormatError(f"{source}: {error}") from None


def read_thread_document(document: Any) -> ThreadDocument:
    """Check a thread document (any supported version) and return it in the current format."""
    root = "document"
    _expect_keys(document, {"format", "version", "thread", "entries", "snapshots"}, where=root)
    if document["format"] != THREAD_DOCUMENT:
        raise FormatError(f'{root}["format"]: {document["format"]!r} is not {THREAD_DOCUMENT!r}')
    version = document["version"]
    strict_json.check(document, where=root)
    raw_thread = upgrade("thread", version, document["thread"], where=f'{root}["thread"]')
    raw_entries = _list(document["entries"], where=f'{root}["entries"]')
    raw_snapshots = _list(document["snapshots"], where=f'{root}["snapshots"]')

    entries = []
    keys: set[str] = set()
    for index, raw in enumerate(raw_entries):
        where = f'{root}["entries"][{index}]'
        entry = _read_entry(upgrade("entry", version, raw, where=where), where=where)
        if entry.number != index + 1:
            raise FormatError(f'{where}["number"]: expected {index + 1} (entries are numbered 1, 2, 3, ...)')
        if entry.key is not None:
            if entry.key in keys:
                raise FormatError(f'{where}["key"]: {entry.key!r} is already the key of an earlier entry')
            keys.add(entry.key)
        entries.append(entry)

    snapshots = []
    for index, raw in enumerate(raw_snapshots):
        where = f'{root}["snapshots"][{index}]'
        snapshot = _read_snapshot(upgrade("snapshot", version, raw, where=where), where=where)
        previous = snapshots[-1].at if snapshots else 0
        if not previous < snapshot.at <= len(entries):
            raise FormatError(
                f'{where}["at"]: {snapshot.at} must be after the previous snapshot ({previous}) and at most '
                f"the last entry ({len(entries)})"
            )
        snapshots.append(snapshot)

    thread = _read_thread(
        raw_thread,
        where=f'{root}["thread"]',
        last_entry=len(entries),
        snapshot_at=snapshots[-1].at if snapshots else 0,
    )
    return ThreadDocument(thread=thread, entries=tuple(entries), snapshots=tuple(snapshots))


def _read_thread(raw: Any, *, where: str, last_entry: int, snapshot_at: int) -> Thread:
    _expect_keys(
        raw, {"id", "program", "status", "created", "updated", "metadata", "forked_from"}, where=where
    )
    program = raw["program"]
    _expect_keys(program, {"path", "sha256"}, where=f'{where}["program"]')
    forked = raw["forked_from"]
    fork_point = None
    if forked is not None:
        _expect_keys(forked, {"thread_id", "entry"}, where=f'{where}["forked_from"]')
        fork_point = ForkPoint(
            thread_id=_field(
                check_thread_id, forked["thread_id"], where=f'{where}["forked_from"]["thread_id"]'
            ),
            entry=_field(
                lambda value: check_number(value, what="entry"),
                forked["entry"],
                where=f'{where}["forked_from"]["entry"]',
            ),
        )
    metadata = raw["metadata"]
    _field(dump_metadata, metadata, where=f'{where}["metadata"]')
    return Thread(
        id=_field(check_thread_id, raw["id"], where=f'{where}["id"]'),
        program=_field(
            check_program,
            ProgramRef(path=program["path"], sha256=program["sha256"]),
            where=f'{where}["program"]',
        ),
        status=_field(check_status, raw["status"], where=f'{where}["status"]'),
        created=parse_iso(raw["created"], where=f'{where}["created"]'),
        updated=parse_iso(raw["updated"], where=f'{where}["updated"]'),
        metadata=metadata,
        forked_from=fork_point,
        last_entry=last_entry,
        snapshot_at=snapshot_at,
    )


def _read_entry(raw: Any, *, where: str) -> Entry:
    _expect_keys(raw, {"number", "kind", "key", "created", "payload"}, where=where)
    payload = raw["payload"]
    if type(payload) is not dict:
        raise FormatError(f'{where}["payload"]: must be a JSON object')
    return Entry(
        number=_field(
            lambda value: check_number(value, what="number", minimum=1),
            raw["number"],
            where=f'{where}["number"]',
        ),
        kind=_field(check_kind, raw["kind"], where=f'{where}["kind"]'),
        key=_field(check_key, raw["key"], where=f'{where}["key"]'),
        created=parse_iso(raw["created"], where=f'{where}["created"]'),
        payload=payload,
    )


def _read_snapshot(raw: Any, *, where: str) -> Snapshot:
    _expect_keys(raw, {"at", "created", "state"}, where=where)
    state = raw["state"]
    if type(state) is not dict:
        raise FormatError(f'{where}["state"]: must be a JSON object')
    return Snapshot(
        at=_field(lambda value: check_number(value, what="at", minimum=1), raw["at"], where=f'{where}["at"]'),
        created=parse_iso(raw["created"], where=f'{where}["created"]'),
        state=state,
    )


def _field(check: Callable[[Any], Any], value: Any, *, where: str) -> Any:
    """`check(value)`, with its error placed at `where` in the document."""
    try:
        return check(value)
    except StoreError as error:
        raise FormatError(f"{where}: {error}") from None


def _expect_keys(value: Any, keys: set[str], *, where: str) -> None:
    if type(value) is not dict:
        raise FormatError(f"{where}: expected a JSON object with the keys {', '.join(sorted(keys))}")
    missing = keys - value.keys()
    extra = value.keys() - keys
    if missing or extra:
        parts = []
        if missing:
            parts.append(f"missing {', '.join(sorted(missing))}")
        if extra:
            parts.append(f"unknown {', '.join(sorted(extra))}")
        raise FormatError(f"{where}: {'; '.join(parts)}")


def _list(value: Any, *, where: str) -> list[Any]:
    if type(value) is not list:
        raise FormatError(f"{where}: expected a JSON list")
    return value

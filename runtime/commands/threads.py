"""`pal threads`, `pal history`, `pal fork` and `pal resume`: the durable runs kept in a store.

Every `pal run` is a thread of the store (`--store`, default the SQLite file of docs/durability.md);
`pal resume T` continues thread T as `pal run <its program> --thread T` would, answering its wait for the
user with the first `--message` (committed first, so any process can answer a run another one left).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from collections.abc import Callable
from typing import Any

from runtime.commands.budgets import add_budget_arguments, budget_limits
from runtime.commands.options import count, duration, seconds, thread_id
from runtime.commands.stores import add_store_arguments, error_text, open_command_store

STATUSES = ("running", "waiting_for_user", "finished", "failed", "interrupted")


PRUNED_BY_DEFAULT = ("finished", "failed")
"""The statuses `pal threads prune` deletes when no --status is given."""


def _add_store(parser: argparse.ArgumentParser) -> None:
    add_store_arguments(parser, creates=False)


def _add_threads(parser: argparse.ArgumentParser) -> None:
    _add_store(parser)
    parser.add_argument("--status", choices=STATUSES, action="append", help="only threads with this status")
    parser.add_argument(
        "--limit", type=count, default=50, metavar="N", help="at most N threads, latest first (default 50)"
    )
    parser.add_argument("--json", action="store_true", help="one JSON object per thread")
    actions = parser.add_subparsers(dest="threads_action", metavar="ACTION")
    prune = actions.add_parser(
        "prune",
        help="delete threads by status and age",
        description="Delete the threads (with their logs and snapshots) whose status is one of --status and "
        "that nothing has written to for longer than --older-than. A thread forked from one keeps its copy.",
    )
    prune.add_argument(
        "--older-than",
        type=duration,
        required=True,
        metavar="AGE",
        help="only threads last written longer ago than this: 30d, 12h, 15m, 90s",
    )
    prune.add_argument(
        "--status",
        dest="prune_status",
        choices=STATUSES,
        action="append",
        help=f"only threads with this status (repeatable; default: {', '.join(PRUNED_BY_DEFAULT)}); "
        "`waiting_for_user` removes waits nobody answered, `running` threads a dead process left",
    )
    prune.add_argument("--dry-run", action="store_true", help="list what would be deleted; delete nothing")
    # Given before or after `prune`: the sub-command's default must not hide the one given before it.
    prune.add_argument("--store", metavar="URL", default=argparse.SUPPRESS, help="as for `pal threads`")


def _add_history(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("thread", metavar="THREAD", type=thread_id, help="the thread's id")
    _add_store(parser)
    parser.add_argument(
        "--all",
        action="store_true",
        help="every entry (calls, inputs, waits, messages, rejected answers), not only the verified turns",
    )
    parser.add_argument("--rejected", action="store_true", help="also the answers the verifier rejected")
    parser.add_argument("--answers", action="store_true", help="print each turn's answer text under it")
    parser.add_argument("--json", action="store_true", help="one JSON object per entry")


def _add_fork(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("thread", metavar="THREAD", type=thread_id, help="the thread to fork")
    parser.add_argument(
        "--at", type=count, required=True, metavar="N", help="the new thread starts with entries 1..N"
    )
    parser.add_argument(
        "--thread", dest="new_thread", metavar="ID", type=thread_id, help="the new thread's id (default: new)"
    )
    _add_store(parser)


def _add_resume(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("thread", metavar="THREAD", type=thread_id, help="the thread to continue")
    _add_store(parser)
    parser.add_argument(
        "--message",
        action="append",
        default=[],
        metavar="TEXT",
        help="user input, in order (repeatable): the first answers the thread's wait for the user",
    )
    parser.add_argument("--no-input", action="store_true", help="never read standard input (non-interactive)")
    parser.add_argument("--model", "-m", help="model string, as for `pal run` (default: $PAL_MODEL, ...)")
    parser.add_argument("--trace", metavar="FILE.jsonl", help="write every executed step as one JSON line")
    parser.add_argument(
        "--max-model-calls", type=count, default=200, metavar="N", help="model calls this run may make"
    )
    parser.add_argument(
        "--retries", type=count, default=2, metavar="N", help="re-asks after a rejected answer"
    )
    parser.add_argument(
        "--timeout", type=seconds, default=120.0, metavar="SECONDS", help="seconds one model call may take"
    )
    parser.add_argument("--seed", type=int, default=None, help="sampling seed for models that take one")
    parser.add_argument("--quiet", "-q", action="store_true", help="print only what agents say")
    add_budget_arguments(parser, scope="the resumed run")


ARGUMENTS: dict[str, Callable[[argparse.ArgumentParser], None]] = {
    "threads": _add_threads,
    "history": _add_history,
    "fork": _add_fork,
    "resume": _add_resume,
}


# --- handlers ----------------------------------------------------------------------------------------------


def _handler(work: Callable[[Any, argparse.Namespace], Any]) -> Callable[[argparse.Namespace], int]:
    def handle(args: argparse.Namespace) -> int:
        return asyncio.run(_with_store(work, args))

    return handle


async def _with_store(work: Callable[[Any, argparse.Namespace], Any], args: argparse.Namespace) -> int:
    from pal_core.errors import PalError

    try:
        store = await open_command_store(getattr(args, "store", None), writes=False)
    except (PalError, OSError, ValueError) as error:
        print(error_text(error), file=sys.stderr)
        return 2
    try:
        return int(await work(store, args))
    except PalError as error:
        print(error_text(error), file=sys.stderr)
        return 2
    finally:
        await store.close()


async def _threads(store: Any, args: argparse.Namespace) -> int:
    from runtime.session import thread_kind

    if args.threads_action == "prune":
        return await _prune(store, args)

    threads = await store.list_threads(status=args.status, limit=args.limit)
    if args.json:
        for thread in threads:
            print(json.dumps(_thread_json(thread, thread_kind(thread)), ensure_ascii=False))
        return 0
    if not threads:
        print(f"no threads in {store.url}", file=sys.stderr)
        return 0
    rows = [
        (
            thread.id,
            thread.status.value,
            thread_kind(thread),
            str(thread.last_entry),
            thread.updated.strftime("%Y-%m-%d %H:%M:%S"),
            thread.program.path.rsplit("/", 1)[-1],
        )
        for thread in threads
    ]
    header = ("THREAD", "STATUS", "KIND", "ENTRIES", "UPDATED (UTC)", "PROGRAM")
    widths = [max(len(row[index]) for row in (header, *rows)) for index in range(len(header))]
    for row in (header, *rows):
        print("  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip())
    return 0


def _thread_json(thread: Any, kind: str) -> dict[str, Any]:
    return {
        "id": thread.id,
        "status": thread.status.value,
        "kind": kind,
        "entries": thread.last_entry,
        "program": thread.program.path,
        "created": thread.created.isoformat(),
        "updated": thread.updated.isoformat(),
        "forked_from": None
        if thread.forked_from is None
        else {"thread": thread.forked_from.thread_id, "entry": thread.forked_from.entry},
    }


async def _history(store: Any, args: argparse.Namespace) -> int:
    from runtime.session.view import describe_changes, describe_entry, logged_turn
    from runtime.store.records import EntryKind

    thread = await store.get_thread(args.thread)
    entries = await store.read_entries(thread.id)
    shown = 0
    if not args.json:
        name = thread.program.path.rsplit("/", 1)[-1]
        print(f"thread {thread.id} ({name}, {thread.status.value}, {thread.last_entry} entries)")
    for entry in entries:
        turn = logged_turn(entry) if entry.kind == EntryKind.TURN else None
        if not args.all and (turn is None or (turn.verdict == "rejected" and not args.rejected)):
            continue
        shown += 1
        if args.json:
            print(
                json.dumps(
                    {
                        "number": entry.number,
                        "kind": entry.kind,
                        "created": entry.created.isoformat(),
                        "payload": entry.payload,
                    },
                    ensure_ascii=False,
                )
            )
            continue
        when = entry.created.strftime("%H:%M:%S")
        if turn is not None and turn.verdict == "accepted" and not args.all:
            where = ":".join(part for part in (turn.agent, turn.playbook, turn.line) if part)
            print(f"{entry.number:>5}  {when}  {where}  {describe_changes(turn.changed)}")
        else:
            print(f"{entry.number:>5}  {when}  {describe_entry(entry)}")
        if args.answers and turn is not None:
            for line in turn.answer.splitlines():
                print(f"{'':>16}| {line}")
    if not args.json and not shown:
        print("  no verified turns yet" if not args.all else "  no entries yet")
    return 0


async def _fork(store: Any, args: argparse.Namespace) -> int:
    thread = await store.fork_thread(args.thread, at=args.at, new_thread_id=args.new_thread)
    print(thread.id)
    print(
        f"[forked {args.thread} at entry {args.at}: continue it with `pal resume {thread.id}`]",
        file=sys.stderr,
    )
    return 0


async def _prune(store: Any, args: argparse.Namespace) -> int:
    """Delete the threads of the chosen statuses that nothing wrote to for longer than --older-than."""
    from datetime import UTC, datetime, timedelta

    statuses = args.prune_status or list(PRUNED_BY_DEFAULT)
    cutoff = datetime.now(UTC) - timedelta(seconds=args.older_than)
    doomed = await store.list_threads(status=statuses, updated_before=cutoff)
    for thread in doomed:
        if not args.dry_run:
            await store.delete_thread(thread.id)
        print(f"{thread.id}\t{thread.status.value}\t{thread.updated.strftime('%Y-%m-%d %H:%M:%S')}")
    done = "would delete" if args.dry_run else "deleted"
    print(
        f"{done} {len(doomed)} thread(s) ({', '.join(statuses)}; last written before "
        f"{cutoff.strftime('%Y-%m-%d %H:%M:%S')} UTC) in {store.url}",
        file=sys.stderr,
    )
    return 0


async def _resume(store: Any, args: argparse.Namespace) -> int:
    """Continue the thread as `pal run <its program> --thread T` does (the same code runs it)."""
    from pathlib import Path

    from runtime.commands.run import RunRequest, run
    from runtime.program_run import RunLimits
    from runtime.session import ThreadStateError, answer_thread, thread_kind
    from runtime.store import ThreadStatus

    thread = await store.get_thread(args.thread)
    if not Path(thread.program.path).is_file():
        raise ThreadStateError(
            f"thread {thread.id!r} ran {thread.program.path}, which is not there any more; run the program "
            f"with `pal run FILE --thread {thread.id}`"
        )
    messages = list(args.message)
    if messages and thread.status is ThreadStatus.WAITING_FOR_USER:
        await answer_thread(store, thread.id, messages.pop(0))  # committed first: durable from here on
    playbook, arguments = None, None
    if thread_kind(thread) == "calls":
        unfinished = await _unfinished_call(store, thread.id)
        if unfinished is None:
            last = await _last_call(store, thread.id)
            if last is not None and "error" in last.payload:
                raise ThreadStateError(
                    f"thread {thread.id!r}: its last call failed and was rolled back ({last.payload['error']}); "
                    f"make it again with `pal run {thread.program.path} --thread {thread.id} --input JSON`"
                )
            raise ThreadStateError(
                f"thread {thread.id!r}: its last call finished; make a new one with `pal run "
                f"{thread.program.path} --thread {thread.id} --input JSON`"
            )
        playbook, arguments = unfinished
    request = RunRequest(
        program=thread.program.path,
        limits=RunLimits(
            max_model_calls=args.max_model_calls,
            max_retries=args.retries,
            model_timeout=args.timeout,
            seed=args.seed,
            **budget_limits(args),
        ),
        messages=messages,
        no_input=args.no_input,
        thread=thread.id,
        store=args.store,
        model=args.model,
        playbook=playbook,
        arguments=arguments,
        trace=args.trace,
        quiet=args.quiet,
    )
    await store.close()  # the run opens the store again, as `pal run` does
    return await run(request)


async def _last_call(store: Any, thread_id: str) -> Any:
    """The `result` entry of the thread's last call, if any."""
    entries = await store.read_entries(thread_id)
    return next((entry for entry in reversed(entries) if entry.kind == "result"), None)


async def _unfinished_call(store: Any, thread_id: str) -> tuple[str, dict[str, Any]] | None:
    from runtime.session import codec
    from runtime.store.records import EntryKind

    pending = None
    for entry in await store.read_entries(thread_id):
        if entry.kind == EntryKind.INPUT and entry.payload.get("input") == "call":
            pending = entry
        elif entry.kind == "result":
            pending = None
    if pending is None:
        return None
    return str(pending.payload["playbook"]), dict(codec.decode(pending.payload["arguments"]))


HANDLERS: dict[str, Callable[[argparse.Namespace], int]] = {
    "threads": _handler(_threads),
    "history": _handler(_history),
    "fork": _handler(_fork),
    "resume": _handler(_resume),
}

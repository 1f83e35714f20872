"""One writer process of the concurrency tests: `python -m tests.runtime.store.append_worker URL WRITER OWN SHARED`.

It opens the store (creating the schema if it is the first), creates its own thread `own-WRITER` and, if no
other writer has yet, the thread `shared`; prints `ready`, waits for a line on stdin (so every writer starts
at once), then appends OWN entries to its own thread and SHARED entries to the shared one. A shared append
that loses the race (`AppendConflict`) reloads the thread and tries again. It prints one JSON line: the
numbers it won in the shared thread and how many conflicts it saw. Any other error ends it with status 1.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import sys

from runtime.store import AppendConflict, NewEntry, ProgramRef, Store, ThreadExists, open_store

PROGRAM = ProgramRef.of_source("# Concurrency\n", path="/programs/concurrency.pal")
MAX_ATTEMPTS = 100_000


async def append_shared(store: Store, writer: int, index: int) -> tuple[int, int]:
    """Append one entry to the shared thread; returns (its number, conflicts seen on the way)."""
    conflicts = 0
    for _attempt in range(MAX_ATTEMPTS):
        last = (await store.get_thread("shared")).last_entry
        entry = NewEntry(kind="call", payload={"writer": writer, "index": index}, key=f"w{writer}-{index}")
        try:
            done = await store.append("shared", entry, expected_last=last)
        except AppendConflict:
            conflicts += 1
            continue
        return done.last, conflicts
    raise RuntimeError(f"writer {writer}: no append won in {MAX_ATTEMPTS} attempts")


async def prepare(store: Store, writer: int) -> None:
    """Create the writer's own thread and, unless another writer was first, the shared one."""
    await store.create_thread(PROGRAM, thread_id=f"own-{writer}")
    with contextlib.suppress(ThreadExists):
        await store.create_thread(PROGRAM, thread_id="shared")


async def write(store: Store, writer: int, own: int, shared: int) -> dict[str, object]:
    """Interleave appends to the writer's own thread and to the shared one."""
    won, conflicts = [], 0
    for index in range(max(own, shared)):
        if index < own:
            payload = {"writer": writer, "index": index, "answer": "x" * 200}
            await store.append(f"own-{writer}", NewEntry(kind="turn", payload=payload), expected_last=index)
        if index < shared:
            number, seen = await append_shared(store, writer, index)
            won.append(number)
            conflicts += seen
    return {"writer": writer, "won": won, "conflicts": conflicts}


async def main(url: str, writer: int, own: int, shared: int) -> None:
    async with open_store(url) as store:
        await prepare(store, writer)
        print("ready", flush=True)
        await asyncio.to_thread(sys.stdin.readline)
        print(json.dumps(await write(store, writer, own, shared)), flush=True)


if __name__ == "__main__":
    arguments = sys.argv[1:]
    asyncio.run(main(arguments[0], int(arguments[1]), int(arguments[2]), int(arguments[3])))

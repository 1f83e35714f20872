"""Store-level figures of durable runs (issue 17): what a checkpoint costs, how storage grows, how long a
long thread takes to load. Every figure is measured in this run.

1. Append cost per checkpoint: N turn entries appended one by one with `expected_last`, plus a snapshot
   whenever the store says one is due (every K entries), as the session layer will do; SQLite (the default
   `synchronous=normal`, and `full`) against the memory store. Goal: <= 2 ms per entry on SQLite.
2. Storage of one thread of 250, 500 and 1,000 turns: the JSON the store holds, the SQLite file's size, and
   bytes per entry (constant = linear growth), against the bytes a checkpointer that saves the whole state
   at every step would write for the same run (what LangGraph users see grow quadratically).
3. Load time of the 1,000-entry thread: `load()` (the latest snapshot and the entries after it) against
   reading the whole log, and a cold resume read (open the store, load, close).

Payloads are realistic: the answers are real model answers from tests/fixtures/paired (the contract's
corpus), each turn records what it changed, and the run's state grows with the run (a transcript).

4. Durable runs (the session layer): the same 1,000-turn run (a model turn that says a line to the user,
   then fast-path steps, in a loop; scripted answers carrying real answers' recap lines) with no store at
   all, with the memory store and with SQLite: the checkpoint overhead per model turn (goal: <= 2 ms on
   SQLite), the storage per turn at 250, 500 and 1,000 turns, and the time to resume the finished-but-
   waiting 1,000-turn thread in a new session (load the log, replay every turn with no model call).

Run: python benchmarks/bench_durable.py [--quick] [--postgres] [--runs-only]
(--postgres adds the Postgres store on a throwaway local cluster with default durability settings.)
"""

from __future__ import annotations

import argparse
import asyncio
import gzip
import json
import sqlite3
import statistics
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from runtime.store import NewEntry, ProgramRef, Store, open_store  # after the path insert, as a script

ROOT = Path(__file__).resolve().parents[1]
ANSWERS = ROOT / "tests" / "fixtures" / "paired" / "answers.jsonl.gz"
K = 50
GOAL_MS = 2.0
SIZES = (250, 500, 1000)
PROGRAM = ProgramRef.of_source("# Support\n", path="/programs/support.pal")


def real_answers() -> list[str]:
    with gzip.open(ANSWERS, "rt", encoding="utf-8") as lines:
        return [record["text"] for line in lines if (record := json.loads(line))["kind"] == "real"]


class Run:
    """A synthetic run: turn payloads made of real answers, and the state after each turn."""

    def __init__(self, answers: list[str]) -> None:
        self.answers = answers
        self.transcript: list[dict[str, str]] = []
        self.variables: dict[str, object] = {}

    def turn(self, number: int) -> dict[str, object]:
        answer = self.answers[number % len(self.answers)]
        said = {"to": "user", "text": f"Reply {number}: " + answer.splitlines()[-1][:120]}
        changed = {
            f"v{number % 20}": {"order": 1000 + number, "status": "open", "items": [number, number + 1]}
        }
        self.transcript.append(said)
        self.variables.update(changed)
        return {
            "agent": "1000",
            "playbook": "Support",
            "at": f"{number % 40 + 1:02d}",
            "model_call": number,
            "answer": answer,
            "changed": {"vars": changed, "said": [said]},
            "tokens": {"prompt": 900 + number % 300, "completion": 60 + number % 90},
        }

    def state(self) -> dict[str, object]:
        return {
            "agents": {"1000": {"class": "Support", "vars": dict(self.variables), "stack": [{"line": "07"}]}},
            "transcript": list(self.transcript),
        }


def payloads(count: int, answers: list[str]) -> Iterator[tuple[dict[str, object], Run]]:
    run = Run(answers)
    for number in range(1, count + 1):
        yield run.turn(number), run


async def write_thread(
    store: Store, thread_id: str, count: int, answers: list[str]
) -> list[tuple[float, float]]:
    """Append `count` turns as the session layer will, storing a snapshot whenever one is due; for each
    checkpoint, the seconds of the append and of its snapshot (0 when none was due). Building the state
    is the runtime's work, so it is left out of the timings."""
    await store.create_thread(PROGRAM, thread_id=thread_id)
    times = []
    for number, (payload, run) in enumerate(payloads(count, answers), 1):
        started = time.perf_counter()
        done = await store.append(thread_id, NewEntry(kind="turn", payload=payload), expected_last=number - 1)
        appended = time.perf_counter() - started
        snapshot = 0.0
        if done.snapshot_due:
            state = run.state()
            started = time.perf_counter()
            await store.put_snapshot(thread_id, at=done.last, state=state)
            snapshot = time.perf_counter() - started
        times.append((appended, snapshot))
    return times


# --- 1. append cost --------------------------------------------------------------------------------------


async def append_costs(
    urls: dict[str, str], count: int, rounds: int, answers: list[str]
) -> dict[str, list[tuple[float, float]]]:
    """Per store, the checkpoint times of every round (rounds interleaved across stores)."""
    results: dict[str, list[tuple[float, float]]] = {name: [] for name in urls}
    for round_ in range(rounds):
        for name, url in urls.items():
            async with open_store(url, snapshot_every=K) as store:
                results[name] += await write_thread(store, f"bench-{round_}", count, answers)
    return results


def print_append_costs(results: dict[str, list[tuple[float, float]]]) -> None:
    print(
        f"1. Checkpoint cost per entry (append with expected_last; a snapshot of the state every {K} entries)"
    )
    print(f"   {'store':<30}{'per entry':>11}{'append median':>15}{'append p99':>12}{'snapshot median':>17}")
    means = {}
    for name, times in results.items():
        appends = sorted(append for append, _snapshot in times)
        snapshots = [snapshot for _append, snapshot in times if snapshot]
        means[name] = statistics.fmean(append + snapshot for append, snapshot in times)
        p99 = appends[int(len(appends) * 0.99)]
        print(
            f"   {name:<30}{_ms(means[name]):>11}{_ms(statistics.median(appends)):>15}{_ms(p99):>12}"
            f"{_ms(statistics.median(snapshots)):>17}"
        )
    print(
        "   (per entry: the mean of append + snapshot over every entry, i.e. the snapshot cost spread over K)"
    )
    for name, mean in means.items():
        if name == "memory":
            continue
        verdict = "meets" if mean * 1000 <= GOAL_MS else "MISSES"
        print(
            f"   {name}: {mean / means['memory']:.1f}x the memory store, {_ms(mean - means['memory'])} more per "
            f"entry; {verdict} the goal of {GOAL_MS:g} ms per entry"
        )


# --- 2. storage ------------------------------------------------------------------------------------------


async def storage(folder: Path, answers: list[str]) -> None:
    print(f"\n2. Storage of one thread (snapshots every {K}, the latest 2 kept), SQLite")
    header = f"   {'entries':>8}{'JSON stored':>14}{'file':>12}{'file/entry':>12}{'whole state per step':>24}{'ratio':>8}"
    print(header)
    for count in SIZES:
        path = folder / f"size-{count}.db"
        async with open_store(f"sqlite:///{path}", snapshot_every=K) as store:
            await write_thread(store, "t", count, answers)
        with sqlite3.connect(path) as connection:
            stored = connection.execute(
                "SELECT (SELECT sum(length(CAST(payload AS BLOB))) FROM pal_entries)"
                " + (SELECT sum(length(CAST(state AS BLOB))) FROM pal_snapshots)"
            ).fetchone()[0]
            connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            pages, page_size = (
                connection.execute(f"PRAGMA {name}").fetchone()[0] for name in ("page_count", "page_size")
            )
        connection.close()
        file_bytes = pages * page_size
        whole = sum(
            len(json.dumps(run.state(), separators=(",", ":")).encode())
            for _payload, run in payloads(count, answers)
        )
        print(
            f"   {count:>8}{_kb(stored):>14}{_kb(file_bytes):>12}{file_bytes / count:>10.0f} B"
            f"{_kb(whole):>24}{whole / file_bytes:>7.1f}x"
        )
    print("   (whole state per step: the bytes of the run's state after every turn, summed; not stored here)")


# --- 3. load time ----------------------------------------------------------------------------------------


async def load_times(url: str, name: str, repeats: int, answers: list[str]) -> None:
    count = SIZES[-1]
    async with open_store(url, snapshot_every=K) as store:
        await write_thread(store, "long", count, answers)
        best = await store.load("long")
        worst = await store.load("long", upto=count - 1)
        at_best = await _median_time(lambda: store.load("long"), repeats)
        at_worst = await _median_time(lambda: store.load("long", upto=count - 1), repeats)
        whole = await _median_time(lambda: store.read_entries("long"), repeats)
    print(f"   {name}")
    for label, loaded, seconds in (("at entry 1000", best, at_best), ("at entry 999", worst, at_worst)):
        assert loaded.snapshot is not None
        print(
            f"     load {label + ':':<14}{_ms(seconds):>11}  (the snapshot at {loaded.snapshot.at} "
            f"+ {len(loaded.entries)} entries)"
        )
    print(f"     {'the whole log:':<19}{_ms(whole):>11}  ({count} entries, for comparison)")
    if name.startswith("sqlite"):

        async def cold() -> None:
            async with open_store(url) as store:
                await store.load("long", upto=count - 1)

        print(
            f"     cold resume read: {_ms(await _median_time(cold, repeats)):>10}  (open the file, load at 999, close)"
        )


async def _median_time(work, repeats: int) -> float:  # type: ignore[no-untyped-def]
    times = []
    for _ in range(repeats):
        started = time.perf_counter()
        await work()
        times.append(time.perf_counter() - started)
    return statistics.median(times)


# --- 4. durable runs -------------------------------------------------------------------------------------

LOOP = """# Counter
Talks through the numbers, one model turn each.

## Main() -> None
### Triggers
T1:BGN At the beginning
### Steps
01:EXE $i:int = 0
02:QUE Say(user, Describe the number $i in a sentence)
03:EXE $i = $i + 1
04:CND If $i < {turns}
  04.01:JMP 02
05:YLD for user
06:RET
"""


def loop_program(turns: int):  # type: ignore[no-untyped-def]
    from pal_core.parser import parse

    return parse(LOOP.format(turns=turns), file="counter.pal")


def loop_model(answers: list[str]):  # type: ignore[no-untyped-def]
    """Answers every turn of the loop; each answer carries a real answer's first line as its recap."""
    from runtime.models import ScriptedModel

    recaps = [answer.splitlines()[0][:300].replace("`", "'") for answer in answers]
    count = 0

    def answer(request: object) -> str:
        nonlocal count
        count += 1
        return (
            f"recap – {recaps[count % len(recaps)]}\nplan – describe the number\n"
            f'`Step["Main:02:QUE"]` `Say("user", "Number {count} is a fine number, as numbers go.")`\nyld call'
        )

    return ScriptedModel(answer)


async def timed_run(turns: int, answers: list[str], store_url: str | None) -> tuple[float, str]:
    """Seconds of one run of the loop (to its final wait), and its thread id."""
    from runtime.program_run import ProgramRun, RunLimits
    from runtime.session import ProgramSession

    program = loop_program(turns)
    limits = RunLimits(max_model_calls=None)
    started = time.perf_counter()
    if store_url is None:  # no session, no journal: the run as it was before durability
        result = await ProgramRun(program, model=loop_model(answers), limits=limits).run()
        thread = ""
    else:
        async with await ProgramSession.open(
            program, store=store_url, model=loop_model(answers), limits=limits
        ) as session:
            result = await session.run()
            thread = session.thread_id
    seconds = time.perf_counter() - started
    assert result.status == "needs_input", result.reason
    return seconds, thread


async def durable_runs(folder: Path, quick: bool, answers: list[str]) -> None:
    from runtime.program_run import RunLimits
    from runtime.session import ProgramSession

    turns = 300 if quick else 1000
    rounds = 1 if quick else 5
    urls: dict[str, str | None] = {
        "no store (no checkpoints)": None,
        "memory store": "memory://",
        "sqlite (synchronous=normal)": f"sqlite:///{folder / 'runs-normal.db'}",
        "sqlite (synchronous=full)": f"sqlite:///{folder / 'runs-full.db'}?synchronous=full",
    }
    times: dict[str, list[float]] = {name: [] for name in urls}
    threads: dict[str, str] = {}
    for _ in range(rounds):  # interleaved, so the machine's load falls on every variant alike
        for name, url in urls.items():
            seconds, thread = await timed_run(turns, answers, url)
            times[name].append(seconds)
            threads[name] = thread
    per_turn = {name: statistics.median(values) / turns for name, values in times.items()}
    print(f"\n4. Durable runs: a {turns}-turn run (median of {rounds}), per model turn")
    print(f"   {'store':<30}{'run':>11}{'per turn':>12}{'over memory':>14}")
    for name, seconds in per_turn.items():
        over = "" if name.startswith("no store") else f"{_ms(seconds - per_turn['memory store']):>14}"
        print(f"   {name:<30}{_ms(seconds * turns):>11}{_ms(seconds):>12}{over}")
    overhead = per_turn["sqlite (synchronous=normal)"] - per_turn["memory store"]
    verdict = "meets" if overhead * 1000 <= GOAL_MS else "MISSES"
    print(
        f"   checkpointing on SQLite costs {_ms(overhead)} per model turn over the memory store; {verdict} the "
        f"goal of {GOAL_MS:g} ms (the journal itself, memory store against no store: "
        f"{_ms(per_turn['memory store'] - per_turn['no store (no checkpoints)'])} per turn)"
    )

    print("\n   storage of the run's thread, SQLite (synchronous=normal), entries = turns + the final wait")
    print(f"   {'turns':>8}{'entries':>9}{'file':>12}{'per turn':>11}")
    for size in (turns // 4, turns // 2, turns):
        path = folder / f"growth-{size}.db"
        _, thread = await timed_run(size, answers, f"sqlite:///{path}")
        with sqlite3.connect(path) as connection:
            connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            entries = connection.execute("SELECT count(*) FROM pal_entries").fetchone()[0]
            pages, page_size = (
                connection.execute(f"PRAGMA {name}").fetchone()[0] for name in ("page_count", "page_size")
            )
        connection.close()
        print(f"   {size:>8}{entries:>9}{_kb(pages * page_size):>12}{pages * page_size / size:>9.0f} B")

    url = urls["sqlite (synchronous=normal)"]
    resumes = []
    for _ in range(rounds):
        _, thread = await timed_run(turns, answers, url)
        started = time.perf_counter()
        async with await ProgramSession.open(
            loop_program(turns),
            store=url,
            thread=thread,
            model=loop_model(answers),
            limits=RunLimits(max_model_calls=None),
        ) as session:
            result = await session.run(["done"])
        resumes.append(time.perf_counter() - started)
        assert result.status == "idle" and result.model_calls == 0, result.reason
    resume = statistics.median(resumes)
    print(
        f"\n   resuming the {turns}-turn thread in a new session (open the store, read the log, replay every "
        f"turn with no model call, answer the wait, finish): {_ms(resume)} (median of {rounds}), "
        f"{_ms(resume / turns)} per turn; the run itself took {_ms(per_turn['sqlite (synchronous=normal)'] * turns)}"
    )


def _ms(seconds: float) -> str:
    return f"{seconds * 1000:.3f} ms"


def _kb(size: float) -> str:
    return f"{size / 1024:,.0f} KiB"


async def main(quick: bool, postgres: bool, runs_only: bool = False) -> None:
    answers = real_answers()
    if runs_only:
        with tempfile.TemporaryDirectory(prefix="pal-bench-") as temporary:
            await durable_runs(Path(temporary), quick, answers)
        return
    count, rounds, repeats = (300, 1, 5) if quick else (1000, 3, 20)
    cluster = None
    with tempfile.TemporaryDirectory(prefix="pal-bench-") as temporary:
        folder = Path(temporary)
        urls = {
            "memory": "memory://",
            "sqlite (synchronous=normal)": f"sqlite:///{folder / 'normal.db'}",
            "sqlite (synchronous=full)": f"sqlite:///{folder / 'full.db'}?synchronous=full",
        }
        if postgres:
            from tests.runtime.store.postgres_cluster import PostgresCluster, find_binaries

            binaries = find_binaries()
            if binaries is None:
                print("--postgres: no PostgreSQL binaries found; leaving Postgres out")
            else:
                cluster = PostgresCluster(binaries, settings=())
                cluster.start()
                urls["postgres (local, durable)"] = cluster.url()
        try:
            print(
                f"{len(answers)} real model answers as turn texts; {count} turns per round, {rounds} round(s)\n"
            )
            print_append_costs(await append_costs(urls, count, rounds, answers))
            await storage(folder, answers)
            print(f"\n3. Load time of a {SIZES[-1]}-entry thread (median of {repeats})")
            for name, url in urls.items():
                fresh = url.replace(".db", "-load.db") if url.startswith("sqlite") else url
                await load_times(fresh, name, repeats, answers)
            await durable_runs(folder, quick, answers)
        finally:
            if cluster is not None:
                cluster.stop()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer entries and repeats (a smoke run)")
    parser.add_argument(
        "--postgres", action="store_true", help="also measure Postgres on a throwaway cluster"
    )
    parser.add_argument(
        "--runs-only", action="store_true", help="only section 4 (durable runs through the session layer)"
    )
    options = parser.parse_args()
    asyncio.run(main(options.quick, options.postgres, options.runs_only))

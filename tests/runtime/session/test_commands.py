"""`pal run --thread`, `pal threads`, `pal history`, `pal fork`, `pal resume` (each a separate process, as
users run them), and the errors they give for threads that cannot do what is asked."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.runtime.session.processes import SHOP, SHOP_ANSWERS, environment, pal

pytestmark = pytest.mark.slow


def test_threads_history_fork_and_resume(tmp_path: Path) -> None:
    store = f"sqlite:///{tmp_path / 'runs.db'}"
    env = environment(tmp_path, PAL_TEST_MODEL_LOG=str(tmp_path / "model.jsonl"))
    model = ["--model", f"scripted:{SHOP_ANSWERS}", "--store", store]

    started = pal(
        tmp_path,
        "run",
        str(SHOP),
        "--thread",
        "o1",
        "--no-input",
        "--message",
        "tea please",
        "--create-store",
        *model,
        env=env,
    )
    assert started.code == 3, started.err
    assert "[thread o1 waits for the user: pal resume o1 --message ...]" in started.err

    listed = pal(tmp_path, "threads", "--store", store, env=env)
    assert listed.code == 0
    assert listed.out.splitlines()[0].split() == [
        "THREAD",
        "STATUS",
        "KIND",
        "ENTRIES",
        "UPDATED",
        "(UTC)",
        "PROGRAM",
    ]
    assert listed.out.splitlines()[1].split()[:4] == ["o1", "waiting_for_user", "program", "8"]
    as_json = json.loads(pal(tmp_path, "threads", "--store", store, "--json", env=env).out)
    assert (as_json["id"], as_json["status"], as_json["program"]) == ("o1", "waiting_for_user", str(SHOP))

    history = pal(tmp_path, "history", "o1", "--store", store, env=env)
    assert history.code == 0
    turns = history.out.splitlines()[1:]
    assert [line.split()[0] for line in turns] == ["1", "4", "7"]
    assert 'Shop:Main:03  steps 03, 04; $item = "tea"; calls Price(item=$item); yld call' in turns[1]
    everything = pal(tmp_path, "history", "o1", "--store", store, "--all", env=env).out
    assert 'Shop called Price(item="tea") -> 3' in everything
    assert "answer rejected: V03" in everything and "the user to Shop: 'tea please'" in everything
    entries = [
        json.loads(line)
        for line in pal(
            tmp_path, "history", "o1", "--store", store, "--all", "--json", env=env
        ).out.splitlines()
    ]
    assert [entry["kind"] for entry in entries] == [
        "turn",
        "wait",
        "input",
        "turn",
        "call",
        "turn",
        "turn",
        "wait",
    ]

    forked = pal(tmp_path, "fork", "o1", "--at", "7", "--thread", "o2", "--store", store, env=env)
    assert (forked.code, forked.out.strip()) == (0, "o2")

    # The original goes on; then the fork, from entry 7, to the same end. What the user saw before is not
    # shown again, but what came after the last entry of the log is: the fork ends at the turn that asks
    # to confirm, so its question is asked again.
    # The fork reads the reply as the answer to its question, shown as a typed one would be.
    expected = {
        "o1": ["Shop: Thank you!"],
        "o2": ["Shop: Tea is 3. Confirm?", "[you -> Shop] yes", "Shop: Thank you!"],
    }
    for thread, shown in expected.items():
        resume = ["resume", thread, "--store", store, "--message", "yes", "--no-input", *model[:2]]
        done = pal(tmp_path, *resume, env=env)
        assert done.code == 0, done.err
        assert [line for line in done.out.splitlines() if line] == shown
    # A finished thread is not run again.
    again = pal(tmp_path, "resume", "o1", "--store", store, "--no-input", *model[:2], env=env)
    assert again.code == 0 and again.out.strip() == ""


def test_what_cannot_be_done_with_a_thread_is_refused_with_the_reason(tmp_path: Path) -> None:
    store = f"sqlite:///{tmp_path / 'runs.db'}"
    env = environment(tmp_path)
    program = tmp_path / "double.pal"
    program.write_text(
        "# Math\n## Double($x:int) -> int\nmetadata:\n  public: true\n---\n### Steps\n01:RET $x * 2\n"
    )
    typo = pal(tmp_path, "run", str(program), "--input", '{"x": 4}', "--store", store + "x", env=env)
    assert typo.code == 2 and "does not exist" in typo.err and "add --create-store" in typo.err
    call = pal(
        tmp_path, "run", str(program), "--input", '{"x": 4}', "--thread", "c1", "--store", store, "--create-store",
        env=env,
    )  # fmt: skip
    assert (call.code, call.out.strip()) == (0, "8")
    call = pal(
        tmp_path, "run", str(program), "--input", '{"x": 5}', "--thread", "c1", "--store", store, env=env
    )
    assert (call.code, call.out.strip()) == (0, "10")

    cases = [
        (["resume", "nowhere", "--store", store], "no thread 'nowhere' in the store"),
        (["resume", "c1", "--store", store], "its last call finished; make a new one with `pal run"),
        (
            ["fork", "c1", "--at", "99", "--store", store],
            "thread 'c1' has 4 entries; at=99 is past its last entry",
        ),
        (["history", "nowhere", "--store", store], "no thread 'nowhere' in the store"),
        (
            ["run", str(SHOP), "--thread", "c1", "--store", store, "--no-input"],
            "thread 'c1' is a thread of playbook calls, not a run of a whole program",
        ),
        (["threads", "--store", "mysql://x"], "unknown store 'mysql'"),
        (["threads", "--store", store + "x"], "does not exist"),
        (["run", str(program), "--thread", "has space"], "argument --thread: 'has space' must be a string"),
        (["history", "a\tb", "--store", store], r"argument THREAD: 'a\tb' must be a string"),
        (["mcp", "serve", str(program), "--thread", "t"], "--thread needs --store"),
    ]
    for args, message in cases:
        refused = pal(tmp_path, *args, env=env)
        assert refused.code == 2, (args, refused.err)
        assert message in refused.err, (args, refused.err)

    program.write_text(program.read_text() + "\n## Half($x:int) -> int\n### Steps\n01:RET $x // 2\n")
    changed = pal(
        tmp_path, "run", str(program), "--input", '{"x": 5}', "--thread", "c1", "--store", store, env=env
    )
    assert changed.code == 2 and "is not that program" in changed.err

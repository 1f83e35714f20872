"""The studio's pages and actions, in memory against the real app (its gate included): the threads list
with its filters and paging, a thread's page (timeline, flowchart, summary), a turn's prompt, the download,
and the actions answer, resume and fork, which go through runtime.session as `pal resume` and `pal fork` do."""

from __future__ import annotations

import json
import re
from pathlib import Path

import anyio
import pytest

from runtime.models import ScriptedModel
from runtime.session import ProgramSession
from runtime.session.view import read_history
from runtime.store import ProgramRef, ThreadStatus, open_store
from runtime.studio import Studio
from tests.runtime.studio.threads import AUTH, DESK, TOKEN, client, desk_model, desk_thread

pytestmark = pytest.mark.anyio


async def test_the_threads_page_lists_filters_and_pages_threads(tmp_path: Path) -> None:
    async with open_store(f"sqlite:///{tmp_path / 'runs.db'}") as store:
        await desk_thread(store, "d1")
        other = ProgramRef.of_source("# Other\n", path=str(tmp_path / "other.pal"))
        for number in range(60):
            await store.create_thread(other, thread_id=f"o{number:02}", status=ThreadStatus.FINISHED)
        studio = Studio(store, token=TOKEN)
        async with client(studio, **AUTH) as http:
            first = await http.get("/")
            assert first.status_code == 200
            rows = re.findall(r'<tr data-thread="([^"]+)"', first.text)
            assert len(rows) == 50 and rows[0] == "o59"  # most recently updated first, 50 a page
            assert "older →" in first.text and "newer" not in first.text
            second = await http.get("/", params={"offset": 50})
            assert re.findall(r'<tr data-thread="([^"]+)"', second.text) == [
                *(f"o{number:02}" for number in range(9, -1, -1)),
                "d1",
            ]
            waiting = await http.get("/", params={"status": "waiting_for_user"})
            row = re.search(r'<tr data-thread="d1".*?</tr>', waiting.text, re.DOTALL)
            assert row is not None and re.findall(r'<tr data-thread="([^"]+)"', waiting.text) == ["d1"]
            cells = re.findall(r"<td[^>]*>(.*?)</td>", row.group(0), re.DOTALL)
            assert "desk.pal" in cells[1] and "waiting for user" in cells[2] and "Desk asks" in cells[2]
            assert cells[3] == "program" and "desk-answers.jsonl" in cells[6]
            assert (cells[7], cells[9]) == ("4", "8")  # model calls (one rejected), entries
            by_program = await http.get("/", params={"program": "DESK"})  # any case, part of the path
            assert re.findall(r'<tr data-thread="([^"]+)"', by_program.text) == ["d1"]
            none = await http.get("/", params={"program": "desk", "status": "failed"})
            assert "no threads match" in none.text
            table = await http.get("/", params={"fragment": "table", "status": "finished"})
            assert table.text.startswith('<div id="threads">') and "<html" not in table.text


async def test_a_thread_page_shows_its_timeline_flowchart_and_totals() -> None:
    async with open_store("memory://") as store:
        await desk_thread(store, "d1")
        studio = Studio(store, token=TOKEN)
        async with client(studio, **AUTH) as http:
            page = (await http.get("/thread", params={"id": "d1"})).text
    assert 'data-page="thread"' in page and 'data-last="8"' in page and 'data-open="0"' in page
    entries = re.findall(r'<article class="item (\w+) ?([\w-]*)" id="e(\d+)"', page)
    assert [(kind, number) for kind, _, number in entries] == [
        ("turn", "1"),
        ("wait", "2"),
        ("input", "3"),
        ("turn", "4"),
        ("call", "5"),
        ("turn", "6"),
        ("turn", "7"),
        ("wait", "8"),
    ]
    # The rejected answer and its accepted retry share a group, side by side.
    group = re.search(
        r'<li class="group retry" data-first="6" data-last="7">(.*?)(?=<li class="group|</ol>)',
        page,
        re.DOTALL,
    )
    assert group is not None
    assert 'class="badge rejected"' in group.group(1) and 'class="badge accepted"' in group.group(1)
    assert "<code class=code>V03</code> answer line 5: step 07 cannot follow step 05.01" in group.group(1)
    assert "<code class=code>R01</code> answer line 4:" in group.group(1)  # the retry's repair
    # A turn's variables as a diff, what it said, its calls and where it goes; the call with its result.
    turn = re.search(r'id="e4".*?</article>', page, re.DOTALL).group(0)
    assert '<tr class="new"><th>$order</th><td class="before">—</td>' in turn and "&quot;1234&quot;" in turn
    assert "<code>Lookup(order=$order)</code>" in turn and "yld <code>call</code>" in turn
    call = re.search(r'id="e5".*?</article>', page, re.DOTALL).group(0)
    assert "Lookup(order=&quot;1234&quot;)" in call and "&quot;shipped&quot;" in call
    assert "<q>order 1234</q>" in page  # the user's answer
    assert '<details class="prompt" data-entry="7">' in page
    # The flowchart of Desk.Main: every step a node; the steps the turns ran marked, with counts.
    nodes = {line: css for css, line in re.findall(r'<g class="node ([\w ]+)" data-line="([\w.]+)"', page)}
    assert set(nodes) == {
        "start",
        "01",
        "02",
        "03",
        "04",
        "05",
        "05.01",
        "06",
        "07",
        "08",
        "08.01",
        "08.02",
        "09",
        "END",
    }
    assert "taken" in nodes["05.01"] and "taken" not in nodes["08"] and "current" in nodes["08"]
    # Totals.
    stats = dict(re.findall(r"<dt>([^<]+)</dt><dd>([^<]*)", page))
    assert (stats["entries"], stats["model calls"], stats["accepted turns"]) == ("8", "4", "3")
    assert (stats["rejected answers"], stats["repaired turns"], stats["Python and remote calls"]) == (
        "1",
        "1",
        "1",
    )
    assert stats["user answers"] == "1"
    assert '<form id="answer"' in page and "Desk</span> said: <q>Anything else?</q>" in page


async def test_a_turns_prompt_is_read_back_whole() -> None:
    async with open_store("memory://") as store:
        model = desk_model()
        await desk_thread(store, "d1")
        async with await ProgramSession.open(DESK, store=store, thread="d2", model=model) as session:
            await session.run(messages=["order 1234"])
        studio = Studio(store, token=TOKEN)
        async with client(studio, **AUTH) as http:
            answer = (await http.get("/api/prompt", params={"id": "d2", "entry": 7})).json()
            missing = await http.get("/api/prompt", params={"id": "d2", "entry": 5})
    # The retry's prompt: the system message, the turn's prompt, the rejected answer, the reasons.
    asked = model.requests[3].messages
    assert [message["role"] for message in answer["messages"]] == [message.role for message in asked]
    assert [message["text"] for message in answer["messages"]] == [message.content for message in asked]
    assert answer["messages"][1]["shared"] == asked[1].stable_chars > 0
    assert missing.status_code == 404 and "no turn entry 5" in missing.json()["error"]


async def test_the_download_is_the_thread_document() -> None:
    async with open_store("memory://") as store:
        await desk_thread(store, "d1")
        studio = Studio(store, token=TOKEN)
        async with client(studio, **AUTH) as http:
            response = await http.get("/thread/export", params={"id": "d1"})
        assert response.headers["content-disposition"] == 'attachment; filename="thread-d1.json"'
        assert json.loads(response.text) == await store.export_thread("d1")


async def test_answering_commits_the_answer_then_resumes_the_run() -> None:
    async with open_store("memory://") as store:
        await desk_thread(store, "d1")
        studio = Studio(store, token=TOKEN, model=desk_model())
        async with client(studio, **AUTH) as http:
            response = await http.post("/api/answer", params={"id": "d1"}, json={"text": "no, that is all"})
            assert response.status_code == 200, response.text
            assert response.json() == {"thread": "d1", "entry": 9}
            with anyio.fail_after(60):
                await studio.runs.settled("d1")
            again = await http.post("/api/answer", params={"id": "d1"}, json={"text": "hello?"})
        thread = await store.get_thread("d1")
        assert thread.status is ThreadStatus.FINISHED, studio.runs.notices
        entries = await store.read_entries("d1", first=9)
        assert entries[0].payload == {"input": "user", "agent": "Desk", "text": "no, that is all"}
        assert [entry.kind for entry in entries] == ["input", "turn", "status"]
        assert again.status_code == 409 and "has finished" in again.json()["error"]
        await studio.close()


async def test_forking_makes_a_thread_that_resumes_from_the_page() -> None:
    async with open_store("memory://") as store:
        await desk_thread(store, "d1")
        studio = Studio(store, token=TOKEN, model=ScriptedModel([]))
        async with client(studio, **AUTH) as http:
            forked = await http.post("/api/fork", params={"id": "d1"}, json={"at": 5, "thread": "d1-retry"})
            assert forked.json() == {"thread": "d1-retry", "url": "/thread?id=d1-retry"}
            page = (await http.get("/thread", params={"id": "d1-retry"})).text
            assert 'forked from <a href="/thread?id=d1">d1</a> at entry 5' in page
            assert '<button type="button" id="resume"' in page
            past = await http.post("/api/fork", params={"id": "d1"}, json={"at": 99})
            assert past.status_code == 400 and "at=99 is past its last entry" in past.json()["error"]
            # The fork resumes with the desk's remaining answers (the model given to the studio).
            studio.runs.model = ScriptedModel.from_jsonl(
                Path(__file__).parents[2] / "fixtures" / "studio" / "desk-answers.jsonl"
            )
            resumed = await http.post("/api/resume", params={"id": "d1-retry"}, json={})
            assert resumed.status_code == 200, resumed.text
            with anyio.fail_after(60):
                await studio.runs.settled("d1-retry")
        assert (await store.get_thread("d1")).last_entry == 8  # the original is not touched
        history = await read_history(store, "d1-retry", rejected=True)
        assert [turn.number for turn in history] == [1, 4, 6, 7]
        assert (await store.get_thread("d1-retry")).status is ThreadStatus.WAITING_FOR_USER
        await studio.close()


async def test_actions_say_what_is_wrong() -> None:
    async with open_store("memory://") as store:
        await desk_thread(store, "d1")
        studio = Studio(store, token=TOKEN)
        async with client(studio, **AUTH) as http:
            resume = await http.post("/api/resume", params={"id": "d1"}, json={})
            assert resume.status_code == 409 and "answer it to resume it" in resume.json()["error"]
            empty = await http.post("/api/answer", params={"id": "d1"}, json={"text": "  "})
            assert empty.status_code == 400 and empty.json()["error"] == "the answer is empty"
            wrong = await http.post("/api/answer", params={"id": "d1"}, json={"message": "yes"})
            assert wrong.status_code == 400 and '{"text"' in wrong.json()["error"]
            bad_json = await http.post(
                "/api/fork",
                params={"id": "d1"},
                content=b"{at: 3",
                headers={"content-type": "application/json"},
            )
            assert bad_json.status_code == 400 and "not JSON" in bad_json.json()["error"]
            nobody = await http.get("/thread", params={"id": "nobody"})
            assert nobody.status_code == 404 and "nobody" in nobody.text
            no_id = await http.get("/thread")
            assert no_id.status_code == 400 and "names no thread" in no_id.text
            spaced = await http.get("/api/prompt", params={"id": "a b", "entry": 1})
            assert spaced.status_code == 400 and "without spaces" in spaced.json()["error"]


async def test_a_thread_whose_program_changed_says_so(tmp_path: Path) -> None:
    program = tmp_path / "desk.pal"
    program.write_bytes(DESK.read_bytes())
    async with open_store("memory://") as store:
        async with await ProgramSession.open(
            program, store=store, thread="d1", model=desk_model()
        ) as session:
            await session.run(messages=["order 1234"])
        program.write_text(
            DESK.read_text(encoding="utf-8").replace("Ask whether", "Ask if"), encoding="utf-8"
        )
        studio = Studio(store, token=TOKEN, model=desk_model())
        async with client(studio, **AUTH) as http:
            page = (await http.get("/thread", params={"id": "d1"})).text
            assert "desk.pal changed since the thread ran: the flowchart is of the file as it is now" in page
            answered = await http.post("/api/answer", params={"id": "d1"}, json={"text": "no"})
            assert answered.status_code == 409 and "is not that program" in answered.json()["error"]
            program.unlink()
            gone = (await http.get("/thread", params={"id": "d1"})).text
            assert "is not there any more" in gone and "<svg" not in gone
        assert (await store.get_thread("d1")).last_entry == 8  # nothing was written


async def test_a_thread_of_calls_shows_each_call_and_how_it_ended() -> None:
    from runtime.errors import PlaybookFailed
    from runtime.session import CallSession
    from tests.runtime.session.programs import COUNTER

    async with open_store("memory://") as store:
        with anyio.fail_after(30):
            async with await CallSession.open(COUNTER, store=store, thread="c") as session:
                await session.call("Reset")
                await session.call("Add", {"n": 5})
                await session.call("Note", {"label": "hi"})
                with pytest.raises(PlaybookFailed):
                    await session.call("Boom")
        studio = Studio(store, token=TOKEN)
        async with client(studio, **AUTH) as http:
            page = (await http.get("/thread", params={"id": "c"})).text
            listed = (await http.get("/")).text
    assert "calls thread" in page and "counter.pal is not there any more" in page
    assert "call <code>Counter.Add(n=5)</code>" in page and "the call returned <code>5</code>" in page
    assert "the call failed (rolled back): PlaybookFailed:" in page and "the fuse was lit" in page
    assert "Record(label=&quot;hi&quot;)" in page and "&quot;HI&quot;" in page  # the Python call inside Note
    row = re.search(r'<tr data-thread="c".*?</tr>', listed, re.DOTALL)
    assert row is not None and "<td>calls</td>" in row.group(0) and "failed" in row.group(0)

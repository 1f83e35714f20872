"""The studio's web app (Starlette): the pages, their fragments, the live updates and the actions, over one
store. `Studio(store, ...).asgi` is the app behind its gate (runtime.studio.security).

    GET  /                                 the threads (status, program, offset; fragment=table)
    GET  /thread?id=T[&playbook=A.P]       a thread: summary, flowchart, timeline
    GET  /thread/chart?id=T&playbook=A.P   the flowchart panel alone
    GET  /thread/export?id=T               the thread document (JSON), as a download
    GET  /api/prompt?id=T&entry=N          the prompt of a turn entry (JSON)
    GET  /api/events?id=T&after=N&open=M   a thread's live updates (server-sent events)
    GET  /api/list-events?since=ISO        a change in the threads list (server-sent events)
    POST /api/answer?id=T  {"text": ...}   answer a wait for the user, then resume
    POST /api/resume?id=T                  resume
    POST /api/fork?id=T    {"at": N}       fork at entry N; answers the new thread and its page
    GET  /static/studio.js, studio.css
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from typing import Any

from pal_core.errors import PalError
from runtime.models.base import Model
from runtime.session.prompt_log import PromptMissing, read_prompt
from runtime.session.view import read_state
from runtime.store import Store, ThreadNotFound, ThreadStatus
from runtime.store.format import check_thread_id

from . import live
from .actions import ActionRefused, BadRequest, Runs
from .pages import (
    STATIC_FILES,
    ProgramView,
    chart_html,
    chosen_playbook,
    layout,
    program_view,
    static_text,
    summary_html,
    thread_body,
    thread_url,
    threads_body,
    threads_table,
)
from .reading import Timeline, list_page, totals
from .security import StudioGate

PAGE_SIZE = 50
"""Threads per page of the list."""
MAX_TIMELINE = 2000
"""Entries a thread page shows at most (the latest ones); the download has them all."""
MAX_BODY = 64 * 1024
"""Bytes an action's JSON body may have (an answer is a message, not a file)."""


class Studio:
    """The studio over one store: its pages, live updates and actions."""

    def __init__(
        self, store: Store, *, token: str, host: str = "127.0.0.1", model: Model | None = None
    ) -> None:
        self.store = store
        self.token = token
        self.runs = Runs(store, model)
        """The runs the studio's actions started."""
        self.stopping = asyncio.Event()
        """Set when the server stops: live updates end at once."""
        self.poll = live.PollSettings()
        """How live updates poll the store."""
        self._programs: dict[tuple[str, str], ProgramView] = {}
        self.asgi = StudioGate(self._routes(), token=token, host=host)
        """The ASGI app to serve."""

    async def close(self) -> None:
        """Stop the live updates and the studio's runs."""
        self.stopping.set()
        await self.runs.close()

    def _routes(self) -> Any:
        from starlette.applications import Starlette
        from starlette.routing import Route

        def get(path: str, handler: Callable[..., Any]) -> Route:
            return Route(path, handler, methods=["GET", "HEAD"])

        return Starlette(
            routes=[
                get("/", self.threads_page),
                get("/thread", self.thread_page),
                get("/thread/chart", self.chart),
                get("/thread/export", self.export),
                get("/api/prompt", self.prompt),
                get("/api/events", self.thread_events),
                get("/api/list-events", self.list_events),
                Route("/api/answer", self.answer, methods=["POST"]),
                Route("/api/resume", self.resume, methods=["POST"]),
                Route("/api/fork", self.fork, methods=["POST"]),
                get("/static/{name}", self.static),
            ],
            exception_handlers={PalError: _refused},
        )

    def _page(self, title: str, body: str, **data: str) -> Any:
        from starlette.responses import HTMLResponse

        html = layout(title, body, token=self.token, store_url=self.store.url, data=data)
        return HTMLResponse(html, headers={"cache-control": "no-store"})

    # --- the threads -----------------------------------------------------------------------------------------

    async def threads_page(self, request: Any) -> Any:
        from starlette.responses import HTMLResponse

        statuses = [status for status in request.query_params.getlist("status") if status in _STATUSES]
        program = request.query_params.get("program", "")
        offset = _number(request.query_params.get("offset"), 0)
        page = await list_page(self.store, statuses=statuses, program=program, offset=offset, limit=PAGE_SIZE)
        if request.query_params.get("fragment") == "table":
            table = threads_table(page, statuses=statuses, program=program, limit=PAGE_SIZE)
            return HTMLResponse(table, headers={"cache-control": "no-store"})
        body = threads_body(page, statuses=statuses, program=program, limit=PAGE_SIZE)
        newest = page.rows[0].thread.updated.isoformat() if page.rows else ""
        return self._page("Threads", body, page="threads", since=newest)

    # --- one thread --------------------------------------------------------------------------------------------

    async def thread_page(self, request: Any) -> Any:
        thread_id = _thread_id(request)
        state = await read_state(self.store, thread_id)
        thread = state.thread
        first = max(1, thread.last_entry - MAX_TIMELINE + 1)
        timeline = Timeline()
        if first > 1:  # the variables and steps before the entries shown
            timeline.groups(await self.store.read_entries(thread.id, last=first - 1))
        entries = await self.store.read_entries(thread.id, first=first, last=thread.last_entry)
        groups = timeline.groups(entries)
        everything = (
            entries if first == 1 else await self.store.read_entries(thread.id, last=thread.last_entry)
        )
        view = program_view(thread, self._programs)
        chosen = (
            chosen_playbook(view.program, request.query_params.get("playbook"), timeline)
            if view.program
            else None
        )
        finished = thread.status is ThreadStatus.FINISHED
        chart = chart_html(thread, view, chosen, timeline, finished=finished)
        summary = summary_html(
            state,
            totals(state, everything),
            running_here=self.runs.running(thread.id),
            notice=self.runs.notices.get(thread.id),
        )
        body = thread_body(summary, chart, groups, earlier=first - 1)
        open_from = groups[-1].first if groups and groups[-1].open else 0
        return self._page(
            f"Thread {thread.id}",
            body,
            page="thread",
            thread=thread.id,
            last=str(thread.last_entry),
            open=str(open_from),
            playbook=chosen or "",
            status=thread.status.value,
        )

    async def chart(self, request: Any) -> Any:
        from starlette.responses import HTMLResponse

        thread_id = _thread_id(request)
        thread = await self.store.get_thread(thread_id)
        timeline = Timeline()
        timeline.groups(await self.store.read_entries(thread.id, last=thread.last_entry))
        view = program_view(thread, self._programs)
        chosen = (
            chosen_playbook(view.program, request.query_params.get("playbook"), timeline)
            if view.program
            else None
        )
        finished = thread.status is ThreadStatus.FINISHED
        return HTMLResponse(chart_html(thread, view, chosen, timeline, finished=finished))

    async def export(self, request: Any) -> Any:
        from starlette.responses import Response

        document = await self.store.export_thread(_thread_id(request))
        name = "".join(char if char.isalnum() or char in "-_." else "_" for char in document["thread"]["id"])
        return Response(
            json.dumps(document, ensure_ascii=False, indent=1),
            media_type="application/json",
            headers={"content-disposition": f'attachment; filename="thread-{name}.json"'},
        )

    async def prompt(self, request: Any) -> Any:
        from starlette.responses import JSONResponse

        thread_id = _thread_id(request)
        number = _number(request.query_params.get("entry"), 0)
        found = await self.store.read_entries(thread_id, first=max(number, 1), last=max(number, 1))
        if not found or found[0].number != number or found[0].kind != "turn":
            return JSONResponse(
                {"error": f"thread {thread_id!r} has no turn entry {number}"}, status_code=404
            )

        async def read_entry(at: int) -> Any:
            entries = await self.store.read_entries(thread_id, first=max(at, 1), last=max(at, 1))
            return entries[0] if entries else None

        try:
            messages = await read_prompt(found[0], read_entry)
        except PromptMissing as error:
            return JSONResponse({"error": str(error)}, status_code=409)
        if messages is None:
            return JSONResponse({"entry": number, "messages": None})
        shown = [
            {"role": message.role, "text": message.text, "shared": message.shared} for message in messages
        ]
        return JSONResponse({"entry": number, "messages": shown})

    # --- live updates ----------------------------------------------------------------------------------------

    async def thread_events(self, request: Any) -> Any:
        thread_id = _thread_id(request)
        await self.store.get_thread(thread_id)  # a 404 now rather than an empty stream
        after = _number(request.query_params.get("after"), 0)
        open_from = _number(request.query_params.get("open"), 0)
        updates = live.thread_updates(self, thread_id, after=after, open_from=open_from, request=request)
        return live.event_stream(updates)

    async def list_events(self, request: Any) -> Any:
        since = request.query_params.get("since", "")
        return live.event_stream(live.list_updates(self, since=since, request=request))

    def summary(self, state: Any, entries: list[Any]) -> str:
        """The thread's summary as its page shows it now (for live updates)."""
        thread = state.thread
        return summary_html(
            state,
            totals(state, entries),
            running_here=self.runs.running(thread.id),
            notice=self.runs.notices.get(thread.id),
        )

    # --- actions ---------------------------------------------------------------------------------------------

    async def answer(self, request: Any) -> Any:
        from starlette.responses import JSONResponse

        body = await _json_body(request)
        text = body.get("text")
        if not isinstance(text, str):
            raise BadRequest('the body must be {"text": "<the answer>"}')
        started = await self.runs.answer(_thread_id(request), text)
        return JSONResponse({"thread": started.thread, "entry": started.answered})

    async def resume(self, request: Any) -> Any:
        from starlette.responses import JSONResponse

        started = await self.runs.resume(_thread_id(request))
        return JSONResponse({"thread": started.thread})

    async def fork(self, request: Any) -> Any:
        from starlette.responses import JSONResponse

        body = await _json_body(request)
        at = body.get("at")
        if not isinstance(at, int) or isinstance(at, bool) or at < 0:
            raise BadRequest('the body must be {"at": <an entry number>}')
        new_id = body.get("thread")
        if new_id is not None and not isinstance(new_id, str):
            raise BadRequest("the new thread's id must be a string")
        forked = await self.runs.fork(_thread_id(request), at, new_id)
        return JSONResponse({"thread": forked.id, "url": thread_url(forked.id).replace("&amp;", "&")})

    async def static(self, request: Any) -> Any:
        from starlette.responses import Response

        name = request.path_params["name"]
        if name not in STATIC_FILES:
            return Response("not found", status_code=404, media_type="text/plain")
        kind = "text/css" if name.endswith(".css") else "text/javascript"
        return Response(
            static_text(name),
            media_type=f"{kind}; charset=utf-8",
            headers={"cache-control": "private, max-age=31536000, immutable"},
        )


_STATUSES = frozenset(status.value for status in ThreadStatus)


def _thread_id(request: Any) -> str:
    value = request.query_params.get("id")
    if value is None:
        raise BadRequest("the request names no thread (?id=...)")
    return check_thread_id(value)


def _number(text: str | None, default: int) -> int:
    if text is None or text == "":
        return default
    try:
        value = int(text)
    except ValueError:
        raise BadRequest(f"{text!r} is not a whole number") from None
    if value < 0:
        raise BadRequest(f"{value} is negative")
    return value


async def _json_body(request: Any) -> dict[str, Any]:
    raw = await request.body()
    if len(raw) > MAX_BODY:
        raise BadRequest(f"the request body is over {MAX_BODY} bytes")
    try:
        body = json.loads(raw or b"{}")
    except (ValueError, UnicodeDecodeError) as error:
        raise BadRequest(f"the request body is not JSON: {error}") from None
    if not isinstance(body, dict):
        raise BadRequest("the request body must be a JSON object")
    return body


def _status_of(error: Exception) -> int:
    """The HTTP status of a refused request: what is missing, what conflicts now, what is malformed."""
    from runtime.session import ProgramChanged, ThreadStateError
    from runtime.store import StoreConflict, StoreUnavailable, ThreadExists

    if isinstance(error, ThreadNotFound):
        return 404
    if isinstance(error, StoreUnavailable):
        return 503
    if isinstance(error, ActionRefused | ThreadStateError | ProgramChanged | ThreadExists | StoreConflict):
        return 409
    return 400  # BadRequest, and a store refusing an argument (a malformed id, an entry past the last)


async def _refused(request: Any, error: Exception) -> Any:
    from html import escape

    from starlette.responses import HTMLResponse, JSONResponse

    status = _status_of(error)
    message = str(error)
    if request.url.path.startswith("/api/") or request.method == "POST":
        return JSONResponse({"error": message}, status_code=status)
    return HTMLResponse(
        '<!doctype html><html lang=en><meta charset=utf-8><title>pal studio</title><p><a href="/">threads</a></p>'
        f"<h1>{status}</h1><p>{escape(message)}</p></html>",
        status_code=status,
    )

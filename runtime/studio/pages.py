"""The studio's HTML pages: the threads list and a thread (its summary, its program's flowchart, its
timeline). Rendered by the server, so a page is complete without JavaScript; the page's script
(static/studio.js) adds live updates and the actions."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from html import escape
from importlib import resources
from pathlib import Path
from urllib.parse import urlencode

from pal_core.ir import PlaybookKind, Program
from runtime.session.view import ThreadState
from runtime.store import ProgramRef, Thread, ThreadStatus

from .flowchart import flowchart_svg
from .reading import STATUS_WORDS, Group, ThreadPage, ThreadRow, Timeline, Totals, model_of
from .timeline_html import groups_html

STATIC_FILES = ("studio.css", "studio.js")
"""The page's only script and style, served by the studio itself (no CDN: the page works offline)."""


def static_text(name: str) -> str:
    return resources.files("runtime.studio").joinpath("static", name).read_text(encoding="utf-8")


def _static_versions() -> dict[str, str]:
    return {name: hashlib.sha256(static_text(name).encode()).hexdigest()[:12] for name in STATIC_FILES}


_VERSIONS: dict[str, str] = {}


def static_url(name: str) -> str:
    """The file's URL with its content hash, so a browser never keeps an old copy."""
    if not _VERSIONS:
        _VERSIONS.update(_static_versions())
    return f"/static/{name}?v={_VERSIONS[name]}"


def _time(when: datetime) -> str:
    return f'<time datetime="{when.isoformat()}">{when.strftime("%Y-%m-%d %H:%M:%S")}</time>'


def layout(title: str, body: str, *, token: str, store_url: str, data: dict[str, str]) -> str:
    attributes = "".join(f' data-{name}="{escape(value)}"' for name, value in data.items())
    return (
        '<!doctype html><html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{escape(title)} · pal studio</title>"
        '<link rel="icon" href="data:,">'
        f'<meta name="pal-token" content="{escape(token)}">'
        f'<link rel="stylesheet" href="{static_url("studio.css")}">'
        f'<script src="{static_url("studio.js")}" defer></script></head>'
        f"<body{attributes}>"
        '<header class="bar"><a class="brand" href="/">pal studio</a>'
        f'<span class="store" title="the store this studio reads">{escape(store_url)}</span>'
        '<span id="live" class="live" hidden>live</span></header>'
        f"<main>{body}</main></body></html>"
    )


def status_badge(status: ThreadStatus) -> str:
    return f'<span class="badge {status.value}">{escape(STATUS_WORDS[status])}</span>'


# --- the threads list ----------------------------------------------------------------------------------------


def threads_body(page: ThreadPage, *, statuses: Sequence[str], program: str, limit: int) -> str:
    checks = "".join(
        f'<label><input type="checkbox" name="status" value="{status.value}"'
        f"{' checked' if status.value in statuses else ''}> {escape(STATUS_WORDS[status])}</label>"
        for status in ThreadStatus
    )
    form = (
        '<form class="filters" method="get" action="/">'
        f"<fieldset><legend>status</legend>{checks}</fieldset>"
        f'<label>program <input type="search" name="program" value="{escape(program)}" '
        'placeholder="part of the file path"></label>'
        '<button type="submit">filter</button></form>'
    )
    return f"<h1>Threads</h1>{form}" + threads_table(page, statuses=statuses, program=program, limit=limit)


def threads_table(page: ThreadPage, *, statuses: Sequence[str], program: str, limit: int) -> str:
    """The table and its paging links (also what the list's live update replaces)."""
    if not page.rows:
        empty = "no threads match" if statuses or program else "no threads in this store yet"
        table = f'<p class="empty">{empty}</p>'
    else:
        table = (
            '<table class="threads"><thead><tr><th>thread</th><th>program</th><th>status</th><th>kind</th>'
            "<th>started (UTC)</th><th>updated (UTC)</th><th>model</th><th>model calls</th><th>tokens</th>"
            "<th>entries</th></tr></thead><tbody>"
            + "".join(_row(row) for row in page.rows)
            + "</tbody></table>"
        )
    links = []

    def page_link(offset: int, text: str) -> str:
        query = [("status", status) for status in statuses] + ([("program", program)] if program else [])
        query.append(("offset", str(max(offset, 0))))
        return f'<a href="/?{escape(urlencode(query))}">{text}</a>'

    if page.offset > 0:
        links.append(page_link(page.offset - limit, "← newer"))
    if page.more:
        links.append(page_link(page.offset + limit, "older →"))
    shown = f"{page.offset + 1}–{page.offset + len(page.rows)}" if page.rows else "0"
    note = (
        '<p class="note">the program filter looked at the most recent threads only</p>'
        if page.scanned_out
        else ""
    )
    return (
        f'<div id="threads">{table}<nav class="paging"><span>threads {shown}</span> {" ".join(links)}</nav>'
        f"{note}</div>"
    )


def _row(row: ThreadRow) -> str:
    thread = row.thread
    tokens = f"{row.tokens.get('prompt', 0):,} + {row.tokens.get('completion', 0):,}" if row.tokens else "—"
    waiting = f' <span class="note">{escape(row.waiting)} asks</span>' if row.waiting else ""
    return (
        f'<tr data-thread="{escape(thread.id)}" class="{thread.status.value}">'
        f'<td><a href="{thread_url(thread.id)}">{escape(thread.id)}</a></td>'
        f'<td title="{escape(thread.program.path)}">{escape(_program_name(thread))}</td>'
        f"<td>{status_badge(thread.status)}{waiting}</td><td>{escape(row.kind)}</td>"
        f"<td>{_time(thread.created)}</td><td>{_time(thread.updated)}</td>"
        f"<td>{escape(row.model or '—')}</td><td class=number>{row.answers}</td>"
        f"<td class=number>{tokens}</td><td class=number>{thread.last_entry}</td></tr>"
    )


def thread_url(thread_id: str, **query: str) -> str:
    return "/thread?" + escape(urlencode({"id": thread_id, **query}))


def _program_name(thread: Thread) -> str:
    return thread.program.path.replace("\\", "/").rsplit("/", 1)[-1]


# --- one thread ------------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class ProgramView:
    """The program a thread ran, as far as the studio can read it now."""

    program: Program | None
    """The program loaded from the thread's file (None when it cannot be)."""
    problem: str | None
    """Why the flowchart may not be the thread's program: the file is gone, changed or does not load."""


def program_view(thread: Thread, cache: dict[tuple[str, str], ProgramView]) -> ProgramView:
    """Load the thread's program file (cached by its content hash) and say whether it is the one it ran."""
    from pal_core.errors import PalError
    from runtime.loader import load

    path = Path(thread.program.path)
    if not path.is_file():
        return ProgramView(program=None, problem=f"{thread.program.path} is not there any more")
    try:
        current = ProgramRef.of_file(path)
    except OSError as error:
        return ProgramView(program=None, problem=f"{path}: {error.strerror}")
    key = (current.path, current.sha256)
    if key not in cache:
        try:
            cache[key] = ProgramView(program=load(path), problem=None)
        except (PalError, OSError, ValueError) as error:
            cache[key] = ProgramView(program=None, problem=f"{path} does not load: {error}")
    view = cache[key]
    if view.program is not None and current.sha256 != thread.program.sha256:
        return ProgramView(
            program=view.program,
            problem=f"{path.name} changed since the thread ran: the flowchart is of the file as it is now",
        )
    return view


def playbook_choices(program: Program) -> list[str]:
    """`Agent.Playbook` of every playbook that has steps to draw, in program order."""
    return [
        f"{agent.name}.{playbook.name}"
        for agent in program.agents
        for playbook in agent.playbooks
        if playbook.kind is PlaybookKind.MARKDOWN and playbook.steps
    ]


def chosen_playbook(program: Program, wanted: str | None, timeline: Timeline) -> str | None:
    choices = playbook_choices(program)
    if wanted in choices:
        return wanted
    if timeline.last_place is not None:
        last = ".".join(timeline.last_place)
        if last in choices:
            return last
    return choices[0] if choices else None


def chart_html(
    thread: Thread, view: ProgramView, chosen: str | None, timeline: Timeline, *, finished: bool
) -> str:
    """The flowchart panel's content: the playbook picker, what is wrong with the program file, the SVG."""
    notes = f'<p class="warning">{escape(view.problem)}</p>' if view.problem else ""
    program = view.program
    if program is None or chosen is None:
        return notes + ('<p class="empty">no playbook with steps to draw</p>' if program is not None else "")
    options = "".join(
        f'<option value="{escape(name)}"{" selected" if name == chosen else ""}>{escape(name)}</option>'
        for name in playbook_choices(program)
    )
    agent_name, _, playbook_name = chosen.partition(".")
    agent = program.agent(agent_name)
    playbook = agent.playbook(playbook_name) if agent is not None else None
    if playbook is None:  # not one of playbook_choices (cannot happen: `chosen` is one)
        return notes
    place = (agent_name, playbook_name)
    current = None if finished else timeline.current.get(place)
    svg = flowchart_svg(playbook, taken=timeline.steps.get(place, {}), current=current)
    legend = (
        '<p class="legend"><span class="key taken">ran in a model turn (×count)</span> '
        '<span class="key current">where the thread goes on</span> '
        "steps the runtime ran itself (the fast path) are not in the log</p>"
    )
    return (
        f'<form class="chart-pick" method="get" action="/thread"><input type="hidden" name="id" '
        f'value="{escape(thread.id)}"><label>playbook <select name="playbook">{options}</select></label>'
        f"<noscript><button>show</button></noscript></form>{notes}{legend}"
        f'<div class="chart-scroll">{svg}</div>'
    )


def summary_html(state: ThreadState, totals: Totals, *, running_here: bool, notice: str | None) -> str:
    """The thread's heading, counts and actions (replaced as a whole by live updates)."""
    thread = state.thread
    status = thread.status
    forked = ""
    if thread.forked_from is not None:
        origin = thread.forked_from
        forked = (
            f'<p class="forked">forked from <a href="{thread_url(origin.thread_id)}">{escape(origin.thread_id)}</a> '
            f"at entry {origin.entry}</p>"
        )
    tokens = totals.tokens
    facts = [
        ("entries", f"{totals.entries}"),
        ("model calls", f"{totals.answers}"),
        ("accepted turns", f"{totals.turns}"),
        ("rejected answers", f"{totals.rejected}"),
        ("repaired turns", f"{totals.repaired}"),
        (
            "tokens (prompt + answer)",
            f"{tokens.get('prompt', 0):,} + {tokens.get('completion', 0):,}" if tokens else "—",
        ),
        ("Python and remote calls", f"{totals.calls}"),
        ("messages between agents", f"{totals.messages}"),
        ("user answers", f"{totals.inputs}"),
        ("started (UTC)", _time(totals.started)),
        ("updated (UTC)", _time(totals.updated)),
        ("elapsed", _elapsed(totals.started, totals.updated)),
    ]
    stats = "".join(f"<div><dt>{escape(name)}</dt><dd>{value}</dd></div>" for name, value in facts)
    actions = [
        f'<a class="button" href="/thread/export?{escape(_query(thread.id))}" download>download JSON</a>'
    ]
    if running_here:
        actions.append('<span class="note">the studio is running this thread</span>')
    elif status is not ThreadStatus.FINISHED and status is not ThreadStatus.WAITING_FOR_USER:
        actions.append(
            '<button type="button" id="resume" title="continue the thread from its last committed entry, '
            'as pal resume does">resume</button>'
        )
    answer = ""
    if status is ThreadStatus.WAITING_FOR_USER and not running_here:
        asked = next(
            (item["text"] for item in reversed(state.transcript) if item.get("from") != "user"), None
        )
        question = (
            f'<p class="question"><span class="from">{escape(state.waiting or "the program")}</span> said: '
            f"<q>{escape(str(asked))}</q></p>"
            if asked
            else ""
        )
        answer = (
            f'<form id="answer" class="answer">{question}<label>answer as the user '
            '<textarea name="text" rows="2" required></textarea></label>'
            '<button type="submit">send and resume</button></form>'
        )
    shown_notice = f'<p class="notice">{escape(notice)}</p>' if notice else ""
    model = model_of(thread)
    return (
        f'<h1><span class="thread-id">{escape(thread.id)}</span> {status_badge(status)}</h1>'
        f'<p class="program" title="{escape(thread.program.path)}">{escape(thread.program.path)} · '
        f"{escape(state.kind)} thread" + (f" · model <code>{escape(model)}</code>" if model else "") + "</p>"
        f'{forked}<dl class="stats">{stats}</dl>{shown_notice}{answer}<div class="actions">{"".join(actions)}</div>'
    )


def _query(thread_id: str) -> str:
    return urlencode({"id": thread_id})


def _elapsed(started: datetime, updated: datetime) -> str:
    seconds = max((updated - started).total_seconds(), 0.0)
    if seconds < 60:
        return f"{seconds:.1f} s"
    minutes, seconds = divmod(int(seconds), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes} min" if hours else f"{minutes} min {seconds} s"


def thread_body(summary: str, chart: str, groups: list[Group], *, earlier: int) -> str:
    """The thread page: summary, flowchart, timeline (`earlier`: entries before the first group shown)."""
    return (
        f'<section id="summary" class="panel">{summary}</section>'
        '<div class="columns">'
        f'<section id="chart" class="panel"><h2>Flowchart</h2><div id="chart-body">{chart}</div></section>'
        '<section id="timeline" class="panel"><h2>Timeline</h2>'
        + (f'<p class="note">{earlier} earlier entries not shown</p>' if earlier else "")
        + f'<ol id="groups">{groups_html(groups)}</ol></section></div>'
    )

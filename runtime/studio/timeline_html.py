"""A thread's timeline as HTML: one `<li class="group">` per group of entries (runtime.studio.reading), each
entry an `<article>` saying what it recorded. The page renders the whole timeline this way, and live updates
send the groups that changed, rendered by the same functions."""

from __future__ import annotations

import json
from collections.abc import Iterable
from datetime import datetime
from html import escape
from typing import Any

from runtime.session import codec
from runtime.session.journal import readable
from runtime.store.records import EntryKind

from .reading import Coded, Group, Item

VALUE_CHARS = 300
"""Characters of a value shown in the timeline (a longer one is cut, with an ellipsis)."""


def value_text(value: Any, limit: int = VALUE_CHARS) -> str:
    """A value as JSON text, cut to `limit` characters."""
    try:
        text = json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError):
        text = repr(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def clock(when: datetime) -> str:
    return f'<time datetime="{when.isoformat()}">{when.strftime("%H:%M:%S")}</time>'


def groups_html(groups: Iterable[Group], *, forkable: bool = True) -> str:
    return "".join(group_html(group, forkable=forkable) for group in groups)


def group_html(group: Group, *, forkable: bool = True) -> str:
    retry = len(group.items) > 1
    css = "group retry" if retry else "group"
    heading = (
        f'<p class="retry-note">rejected {len(group.items) - 1 if not group.open else len(group.items)} '
        f"time{'s' if len(group.items) > 2 else ''}, then {'retried' if not group.open else 'asked again'}</p>"
        if retry
        else ""
    )
    items = "".join(item_html(item, forkable=forkable) for item in group.items)
    return (
        f'<li class="{css}" data-first="{group.first}" data-last="{group.last}">{heading}'
        f'<div class="attempts">{items}</div></li>'
    )


def item_html(item: Item, *, forkable: bool = True) -> str:
    entry = item.entry
    body, badge, css = _body(item)
    where = _where(item)
    fork = (
        f'<button type="button" class="fork" data-at="{entry.number}" '
        f'title="a new thread with entries 1 to {entry.number}; this one is not touched">fork here</button>'
        if forkable
        else ""
    )
    return (
        f'<article class="item {escape(entry.kind)} {css}" id="e{entry.number}" data-entry="{entry.number}">'
        f'<header><a class="num" href="#e{entry.number}">#{entry.number}</a> {clock(entry.created)} '
        f'<span class="kind">{escape(entry.kind)}</span>'
        + (f' <span class="agent">{escape(item.agent)}</span>' if item.agent else "")
        + (f' <span class="where">{escape(where)}</span>' if where else "")
        + (f" {badge}" if badge else "")
        + f"{fork}</header>{body}</article>"
    )


def _where(item: Item) -> str:
    payload = item.payload
    if item.entry.kind != EntryKind.TURN:
        return ""
    return ":".join(str(part) for part in (payload.get("playbook"), payload.get("line")) if part)


def _body(item: Item) -> tuple[str, str, str]:
    """(body html, badge html, extra css class) of an item."""
    kind = item.entry.kind
    payload = item.payload
    if kind == EntryKind.TURN:
        return _turn(item)
    if kind == EntryKind.CALL:
        return _call(payload), "", ""
    if kind == EntryKind.MESSAGE:
        messages = payload.get("messages") or []
        rows = "".join(
            f'<li><span class="from">{escape(str(message.get("class") or message.get("from")))}</span>'
            + (
                f' <span class="meeting">in meeting {escape(str(message["meeting"]))}</span>'
                if message.get("meeting")
                else ""
            )
            + f": <q>{escape(value_text(message.get('content'), 600).strip(chr(34)))}</q></li>"
            for message in messages
        )
        return (
            f'<p>read {len(messages)} message{"s" if len(messages) != 1 else ""}</p><ul class="messages">{rows}</ul>',
            "",
            "",
        )
    if kind == EntryKind.WAIT:
        return '<p class="wait">waits for the user</p>', '<span class="badge waiting">wait</span>', ""
    if kind == EntryKind.INPUT:
        if payload.get("input") == "call":
            arguments = payload.get("arguments")
            return (
                f"<p>call <code>{escape(str(payload.get('playbook')))}({escape(_arguments(arguments))})</code></p>",
                "",
                "call-start",
            )
        text = str(payload.get("text", ""))
        return f'<p class="user-said"><span class="from">user</span>: <q>{escape(text)}</q></p>', "", "user"
    if kind == "result":
        if payload.get("error"):
            return (
                f'<p class="error">the call failed (rolled back): {escape(str(payload["error"]))}</p>',
                '<span class="badge failed">failed</span>',
                "",
            )
        said = "".join(f"<li><q>{escape(str(text))}</q></li>" for text in payload.get("said") or ())
        return (
            f"<p>the call returned <code>{escape(value_text(payload.get('value')))}</code></p>"
            + (f'<ul class="said">{said}</ul>' if said else ""),
            "",
            "",
        )
    if kind == EntryKind.STATUS:
        status = str(payload.get("status", ""))
        return (
            f'<p class="status-reason">{escape(str(payload.get("reason", "")))}</p>',
            f'<span class="badge {escape(status)}">{escape(status)}</span>',
            "",
        )
    return f"<pre>{escape(value_text(payload, 2000))}</pre>", "", ""


def _turn(item: Item) -> tuple[str, str, str]:
    payload = item.payload
    verdict = payload.get("verdict")
    tokens = payload.get("tokens") or {}
    meta = (
        f'<p class="meta">model <code>{escape(str(payload.get("model", "")))}</code> · '
        f"{int(tokens.get('prompt', 0))} prompt + {int(tokens.get('completion', 0))} answer tokens"
        + (
            f" · request <code>{escape(str(payload.get('request')))}</code>"
            if payload.get("request") not in (None, "turn")
            else ""
        )
        + "</p>"
    )
    parts: list[str] = [meta]
    if verdict == "accepted":
        changed = payload.get("changed") or {}
        steps = changed.get("steps") or []
        if steps:
            parts.append(
                '<p class="steps">steps '
                + " ".join(f"<code>{escape(str(line))}</code>" for line in steps)
                + "</p>"
            )
        if item.changes:
            rows = "".join(
                f'<tr class="{"new" if change.new else "changed"}"><th>${escape(change.name)}</th>'
                f'<td class="before">{"—" if change.new else escape(value_text(change.before))}</td><td>→</td>'
                f'<td class="after">{escape(value_text(change.after))}</td></tr>'
                for change in item.changes
            )
            parts.append(f'<table class="vars"><caption>variables after the turn</caption>{rows}</table>')
        said = changed.get("said") or []
        if said:
            parts.append(
                '<ul class="said">'
                + "".join(f"<li><q>{escape(str(text))}</q></li>" for text in said)
                + "</ul>"
            )
        calls = [
            call for call in changed.get("calls") or () if not str(call).startswith(("Say(", "SendMessage("))
        ]
        if calls:
            parts.append(
                '<p class="calls">calls '
                + ", ".join(f"<code>{escape(str(call))}</code>" for call in calls)
                + "</p>"
            )
        flow = []
        if changed.get("yield"):
            flow.append(f"yld <code>{escape(str(changed['yield']))}</code>")
        if changed.get("next"):
            flow.append(f"next line <code>{escape(str(changed['next']))}</code>")
        if "returned" in changed:
            flow.append(f"returned <code>{escape(value_text(changed['returned']))}</code>")
        if flow:
            parts.append('<p class="flow">' + " · ".join(flow) + "</p>")
        if item.repairs:
            parts.append(_coded("repairs", "repaired", item.repairs))
        badge = '<span class="badge accepted">accepted</span>' + (
            f' <span class="badge repaired">{len(item.repairs)} repair{"s" if len(item.repairs) != 1 else ""}</span>'
            if item.repairs
            else ""
        )
        css = "accepted"
    elif verdict == "rejected":
        parts.append(_coded("problems", "rejected because", item.problems))
        badge, css = '<span class="badge rejected">rejected</span>', "rejected"
    else:
        badge, css = "", "other"
    parts.append(
        f'<details class="answer" open><summary>the model\'s answer</summary><pre>{escape(str(payload.get("answer", "")))}</pre></details>'
    )
    if "prompt" in payload:
        parts.append(
            f'<details class="prompt" data-entry="{item.number}"><summary>the prompt</summary>'
            '<div class="prompt-body">loading…</div></details>'
        )
    else:
        parts.append(
            '<p class="no-prompt">prompt not recorded (a thread written before pal-bridge kept prompts)</p>'
        )
    return "".join(parts), badge, css


def _coded(css: str, title: str, lines: list[Coded]) -> str:
    rows = "".join(
        f"<li>{f'<code class=code>{escape(line.code)}</code> ' if line.code else ''}{escape(line.text)}</li>"
        for line in lines
    )
    return f'<div class="{css}"><p>{escape(title)}</p><ul>{rows}</ul></div>'


def _call(payload: dict[str, Any]) -> str:
    via = str(payload.get("via", "python"))
    head = (
        f"<code>{escape(str(payload.get('playbook')))}({escape(_arguments(payload.get('arguments')))})</code>"
    )
    if payload.get("error") is not None:
        outcome = f'<span class="error">failed: {escape(str(payload["error"]))}</span>'
    elif "result" in payload:
        outcome = f"→ <code>{escape(value_text(_plain(payload['result'])))}</code>"
    else:
        outcome = f"→ <code>{escape(value_text(payload.get('shown')))}</code> (no stored form: made again on resume)"
    rerun = (
        ' <span class="note">made again on resume (it reached back into the run)</span>'
        if payload.get("rerun") and "result" in payload
        else ""
    )
    return f'<p class="call-line"><span class="via">{escape(via)}</span> {head} {outcome}{rerun}</p>'


def _plain(value: Any) -> Any:
    """A stored call result, its tagged forms (`{"$tuple": [...]}`) read as plain JSON for showing."""
    try:
        return readable(codec.decode(value))
    except (TypeError, ValueError):  # a malformed tag: shown as stored
        return value


def _arguments(arguments: Any) -> str:
    if not isinstance(arguments, dict):
        return ""
    return ", ".join(f"{name}={value_text(value, 60)}" for name, value in arguments.items())

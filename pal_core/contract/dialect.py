"""The older answer dialect of the original Playbooks runtime: a markdown list, often in a ```md fence.

    - Call stack not empty, no vars set, Continue program near "Begin:01"
    - `Step["Begin:01:QUE"]`: Say(Welcome the user)
    - Enqueue `Say("Welcome! How can I help?")`
    - `Var["$pin"] = "2332"`
    - The user provided a pin which triggers `Trigger["ValidatePin:01:CND"]`
    - `Step["Begin:02:YLD"]`: ForUserInput("Waiting for the user")
    - Yield control back to process queue
    - No more steps in Begin, so return
    - Call stack is now empty, so yield control back to system

Real models wrote it for that runtime's earlier prompt; each item says what a line of the seeds' contract
says (a step, a call it enqueues, a variable, a trigger, a return, the yield). `to_line_contract` rewrites it
into those lines, one line for one line (so positions in errors stay true), and the answer is then read,
repaired and verified like any other. Text in no such form stays prose.
"""

from __future__ import annotations

import re

_FENCE = re.compile(r"[ \t]*```[A-Za-z]*[ \t]*\Z")
_ITEM = re.compile(r"[ \t]*[-*][ \t]+(?P<text>.*?)[ \t]*\Z")
_ENQUEUE = re.compile(r"enqueue[ \t]+(?P<call>`[^`]+`)", re.IGNORECASE)
_STEP = re.compile(r"(?P<ref>`Step\[[^\]]*\]`)[ \t]*:?[ \t]*(?P<note>.*)\Z")
_VAR = re.compile(
    r"`Var\[[ \t]*[\"']?(?P<name>\$?[A-Za-z_]\w*)[\"']?[ \t]*\][ \t]*=[ \t]*(?P<value>.*?)`(?P<rest>.*)\Z"
)
_TRIGGER = re.compile(r"(?P<ref>`Trigger\[[^\]]*\]`)")
_YIELD_QUEUE = re.compile(
    r"yield[ \t]+control[ \t]+back[ \t]+to[ \t]+(?:the[ \t]+)?process(?:ing)?[ \t]+queue", re.I
)
_YIELD_SYSTEM = re.compile(r"yield[ \t]+control[ \t]+back[ \t]+to[ \t]+(?:the[ \t]+)?system", re.I)
_RETURN = re.compile(r"no[ \t]+more[ \t]+steps[ \t]+in[ \t]+\w+,?[ \t]+so[ \t]+return\b", re.I)
_CALL_STACK = re.compile(r"`CallStack\[[^\]]*\]`\Z")


def is_list_dialect(text: str) -> bool:
    """Whether an answer is written in the list dialect: every line with text is a list item (the fence
    lines aside), and one of them yields the way that dialect does."""
    if "ontrol back" not in text:  # every answer passes here: the common case costs one search
        return False
    lines = [line for line in text.split("\n") if line.strip() and not _FENCE.match(line)]
    if not lines or not all(_ITEM.match(line) for line in lines):
        return False
    return any(_YIELD_QUEUE.search(line) or _YIELD_SYSTEM.search(line) for line in lines)


def to_line_contract(text: str) -> str:
    """The answer's list items as lines of the seeds' contract, line for line."""
    return "\n".join(_line(line) for line in text.split("\n"))


def _line(line: str) -> str:
    if _FENCE.match(line):
        return ""
    item = _ITEM.match(line)
    if item is None:
        return line
    text = item.group("text")
    if _CALL_STACK.match(text):
        return ""  # the runtime keeps the call stack; restating it does nothing
    enqueue = _ENQUEUE.match(text)
    if enqueue is not None:
        return enqueue.group("call")
    step = _STEP.match(text)
    if step is not None:
        # The step's text restated after the colon is a note, not a call (it has no backticks).
        return f"{step.group('ref')} {step.group('note')}".rstrip()
    var = _VAR.match(text)
    if var is not None:
        name = var.group("name")
        name = name if name.startswith("$") else f"${name}"
        return f"`Var[{name}, {var.group('value')}]`{var.group('rest')}"
    if _YIELD_QUEUE.search(text):
        return "yld call"
    if _YIELD_SYSTEM.search(text):
        return "yld return"
    if _RETURN.search(text):
        return "`Return[]`"
    trigger = _TRIGGER.search(text)
    if trigger is not None:
        return f"trig? {trigger.group('ref')}"
    return text

"""Model answer -> Answer: the line contract of seeds 003/004, read the way real models write it.

    recap – one-sentence summary          (en dash, em dash, hyphen or colon)
    plan  – one-sentence immediate goal
    `Var[$name, value]`                    (a literal, or bare text such as a 1-5 line summary)
    `SaveArtifact($name, "summary", "content")`
    trig? no | `Trigger["PB:T1:BGN"]`      (also `trig on $x? no`)
    `Step["PB:Ln:Code"]` note `Say("user", "...")` `$x:float = Y(num=$temp)`
    $ok:bool = `Check()`                   (the assignment outside the backticks)
    `Return[value]` `Return[]`
    what? how an unexpected situation is handled
    yld user | call | return | exit | for meeting 100 | ...

Each line is read by its first word; any other line is scanned for constructs (`Step[`, `Var[`,
`Return[`, `Trigger[`, `SaveArtifact(`, and backticked calls) and what remains is prose: the
step's `note` on a step's lines, commentary elsewhere. Brackets and double-quoted strings may span
lines; a closing backtick may be missing at the end of a line. `yld? ...` is commentary.

Inline calls belong to the latest `Step[...]` until a `trig?`, `yld`, `what?`, `recap` or `plan`
line ends that step. A call with no step (before the first Step, or after such a line) becomes a
StrayCallAction, so the verifier can reject it by name instead of the parser dropping it.

Anything that starts and never closes, a bad reference, a Var name that is not `$identifier`, an
inline call that is not a call, or an answer with no action raises ContractSyntaxError.
"""

from __future__ import annotations

import keyword
import re
from dataclasses import dataclass, field, replace

from pal_core.contract.answer_values import ASSIGNMENT_TARGET, InlineError, parse_call, parse_value
from pal_core.contract.dialect import is_list_dialect, to_line_contract
from pal_core.contract.errors import (
    BAD_ARTIFACT,
    BAD_CALL,
    BAD_REFERENCE,
    BAD_TRIGGER_CHECK,
    BAD_VARIABLE,
    NO_ACTION,
    TRAILING_TEXT,
    UNTERMINATED,
    ContractSyntaxError,
    answer_error,
)
from pal_core.contract.model import (
    Action,
    Answer,
    ArtifactAction,
    ReturnAction,
    StepAction,
    StepRef,
    TriggerAction,
    VarAction,
    WhatAction,
    YieldAction,
)
from pal_core.contract.scan import (
    is_balanced,
    line_end,
    match_bracket,
    match_bracket_ignoring_quotes,
    skip_blanks,
)
from pal_core.ir import ArgKind, Argument, Call, Span, Variable
from pal_core.step_text import parse_yield_target


@dataclass(frozen=True, slots=True, kw_only=True)
class StrayCallAction:
    """An inline call that no step owns: written before the first `Step[...]`, or after the
    `trig?`/`yld`/`what?` line that ended the step. Kept so the verifier can reject it by name."""

    call: Call
    """The call as written."""
    span: Span | None = field(default=None, compare=False)
    """Where in the answer."""


AnswerAction = Action | StrayCallAction
"""Every action `parse_answer` produces: the model's actions plus StrayCallAction."""

# `~` stands for any blank but a newline: models also write no-break spaces.
_LINE_HEAD = re.compile(
    r"~*(?:[-*+]~+)?(?:"
    r"(?P<section>recap|plan)~*[-–—:]+~*"
    r"|(?P<trig>trig(?:~+on~[^?\n]*)?~*\?)~*"
    r"|(?P<yld_question>yld~*\?)"
    r"|(?P<yld>yld)(?![\w?])~*"
    r"|(?P<what>what~*\?)~*"
    r")".replace("~", r"[^\S\n]"),
    re.IGNORECASE,
)
# No look-behind in front: a pattern that starts with plain characters is searched much faster.
# `_scan` skips a keyword glued to a word (`myStep[`), as a look-behind would.
_ANCHOR = re.compile(r"`|(?:Step|Var|Return|Trigger)\[|SaveArtifact[ \t]*\(")
_SPAN_HEAD = re.compile(
    r"(?P<keyword>Step|Var|Return|Trigger)[ \t]*\["
    r"|(?P<artifact>SaveArtifact)[ \t]*\("
    rf"|(?:{ASSIGNMENT_TARGET.pattern})?(?P<callee>[A-Za-z_]\w*(?:[ \t]*\.[ \t]*[A-Za-z_]\w*)*)[ \t]*\("
)
_GLUED = re.compile(r"[\w$.]")
_VARIABLE_CALL = re.compile(r"\$[A-Za-z_]\w*[ \t]*\(")
_ASSIGNMENT_AT_END = re.compile(rf"(?:{ASSIGNMENT_TARGET.pattern})\Z")
_REFERENCE = re.compile(
    r"[ \t]*(?P<quote>[\"']?)[ \t]*(?P<playbook>[A-Za-z_][\w.]*)[ \t]*:[ \t]*(?P<line>[0-9T][\w.]*"
    r"(?:[ \t]*:[ \t]*\d+(?:\.\d+)*)*)(?:[ \t]*:[ \t]*(?P<code>[A-Za-z]+))?[ \t]*(?P=quote)[ \t]*"
)
_SIMPLE_REFERENCE = re.compile(
    r'(?P<tick>`)?(?P<kind>Step|Trigger)\["(?P<playbook>[A-Za-z_][\w.]*):(?P<line>\d+(?:\.\d+)*|T\d+)'
    r':(?P<code>[A-Za-z]+)"\](?(tick)`)'
)
_STEP_LINE = re.compile(r"\d+(?:\.\d+)*")
_TRIGGER_ID = re.compile(r"T\d+")
_NUMBERED_TRIGGER = re.compile(r"\d{1,3}")
_DOTTED_CODE = re.compile(r"(?P<line>[0-9T][\w.]*?)\.(?P<code>[A-Z]{3})")
# `$name`, `$name:type` (models add the declared type), or a bare `name` (the `$` forgotten).
_VAR_NAME = re.compile(
    r"[ \t\n]*\$?(?P<name>[A-Za-z_]\w*)(?:[ \t]*:[ \t]*(?P<type>[A-Za-z_][\w.]*(?:\[[^\]\n]*\])?))?[ \t\n]*"
)
_YIELD_TEXT = re.compile(r"[ \t]*`?[ \t]*yld\b(?![ \t]*\?)(?P<rest>[^\n]*)", re.IGNORECASE)
_YIELD_TAIL = re.compile(r"[,;(`]|\s[-–—]\s")
_NO_TRIGGER = re.compile(r"(?:no|none|nothing)\b", re.IGNORECASE)
_CLAIMS_TRIGGER = re.compile(r"(?:yes|true|fired|triggered)\b", re.IGNORECASE)
_FENCE_OPEN = re.compile(r"[ \t]*```[\w+.-]*[ \t]*\Z")
_PUNCTUATION_ONLY = re.compile(r"[\s\-*+,;:.`|]*\Z")
_PYTHON_KEYWORDS = frozenset(keyword.kwlist)
_KEYWORD_LABELS = {"Step": "Step[", "Var": "Var[", "Return": "Return[", "Trigger": "Trigger["}


def parse_answer(text: str) -> Answer:
    """Read a model answer. Raises ContractSyntaxError (with line, column and the marked line)."""
    source = text.replace("\r\n", "\n").replace("\r", "\n") if "\r" in text else text
    if is_list_dialect(source):
        source = to_line_contract(source)
    try:
        return _AnswerReader(source).read(raw=text)
    except ContractSyntaxError as error:
        restarted = _restart_after(source, error)
        if restarted is None:
            raise
        # The model broke off inside a construct and wrote the whole answer again (seen in real output,
        # answer 24 of the corpus): the restart is the answer; the broken attempt is kept as commentary.
        answer = _AnswerReader(source[restarted:]).read(raw=text)
        return replace(answer, commentary=(source[:restarted].rstrip(), *answer.commentary))


_RESTART = re.compile(r"recap[ \t]*[-–—:]")


_BARE_CALL = re.compile(r"[ \t]*(?:[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*)[ \t]*\(.*\)[ \t]*\Z", re.DOTALL)


def _bare_call(piece: str) -> Call | None:
    """`X(num=$n)` written without backticks after a fired trigger, else None."""
    if not _BARE_CALL.match(piece):
        return None
    try:
        return parse_call(piece.strip())
    except InlineError:
        return None


def _reference_line(written: str, trigger: bool) -> str | None:
    """The line of a reference as the program numbers it: `05:01` is `05.01` (a colon for the dot), and
    a trigger may be numbered `01` for `T1`; None when it is neither a line nor a trigger id."""
    line = re.sub(r"[ \t]*:[ \t]*", ".", written)
    if _TRIGGER_ID.fullmatch(line):
        return line  # a Step naming a trigger (`Step["TooBig:T1"]`): the repairs decide what it means
    if trigger:
        return f"T{int(line)}" if _NUMBERED_TRIGGER.fullmatch(line) else None
    return line if _STEP_LINE.fullmatch(line) else None


def _restart_after(source: str, error: ContractSyntaxError) -> int | None:
    """Where a restarted answer begins, when `error` is a construct left open by a cut-off answer."""
    if error.code != UNTERMINATED:
        return None
    lines = source.split("\n")
    offset = sum(len(line) + 1 for line in lines[: error.line - 1]) + error.column - 1
    match = _RESTART.search(source, offset + 1)
    if match is None or match.start() == 0:
        return None
    return match.start()


@dataclass(slots=True)
class _Construct:
    """A construct found on an action line."""

    kind: str
    """`Step`, `Var`, `Return`, `Trigger`, `SaveArtifact`, or `call`."""
    start: int
    """Where it starts (the assignment target of a call included), after any backtick."""
    open: int
    """Its opening bracket."""
    close: int
    """Its closing bracket."""
    ref: StepRef | None = None
    """For a Step or Trigger read by the fast path: its reference, already checked."""


@dataclass(slots=True)
class _Text:
    """Prose between constructs, backticked prose included."""

    start: int
    """Where it starts in the answer."""
    end: int
    """Where it ends."""


@dataclass(slots=True)
class _StepDraft:
    """A StepAction still collecting the calls and notes written after it."""

    ref: StepRef
    """The step's reference."""
    span: Span
    """Where the reference is."""
    calls: list[Call] = field(default_factory=list)
    """Inline calls so far."""
    notes: list[str] = field(default_factory=list)
    """Prose pieces so far, joined with spaces into the note."""

    def finish(self) -> StepAction:
        return StepAction(ref=self.ref, calls=tuple(self.calls), note=" ".join(self.notes), span=self.span)


class _AnswerReader:
    """One pass over an answer, line by line; constructs may carry it over several lines."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.actions: list[AnswerAction | _StepDraft] = []
        self.commentary: list[str] = []
        self.recap: str | None = None
        self.plan: str | None = None
        self.step: _StepDraft | None = None
        """The step that owns inline calls and notes written now."""
        self.has_action = False
        self.line_start = 0
        """Where the line being read starts."""
        self.line_number = 1
        """The number of the line being read, 1-based."""
        self.inline_span_at: int | None = None
        """Where a call shares the backtick span of the Step before it: read it as its own span."""

    def read(self, raw: str) -> Answer:
        text = self.text
        skipped = self._fence_lines()
        position = 0
        while position <= len(text):
            end = line_end(text, position)
            if position not in skipped:
                self.line_start = position
                end = self._read_line(position, end)
            self.line_number += 1 + text.count("\n", position, end)
            position = end + 1
        if not self.has_action:
            first = len(text) - len(text.lstrip())
            raise answer_error(
                text,
                first,
                NO_ACTION,
                "the answer has no action: expected `Step[...]`, `Var[...]`, `Return[...]`, "
                "`SaveArtifact(...)`, `trig?` or `yld`",
            )
        actions = tuple(item.finish() if isinstance(item, _StepDraft) else item for item in self.actions)
        return Answer(
            recap=self.recap,
            plan=self.plan,
            actions=actions,  # type: ignore[arg-type]  # StrayCallAction extends the model's Action
            commentary=tuple(self.commentary),
            raw=raw,
        )

    def _fence_lines(self) -> set[int]:
        """Start offsets of the ``` lines when the whole answer is wrapped in one fence."""
        text = self.text
        if not text.lstrip().startswith("```"):
            return set()
        lines = [(match.start(), match.group()) for match in re.finditer(r"[^\n]*", text)]
        filled = [(start, line) for start, line in lines if line.strip()]
        if len(filled) >= 2 and _FENCE_OPEN.match(filled[0][1]) and filled[-1][1].strip() == "```":
            return {filled[0][0], filled[-1][0]}
        return set()

    # Lines ------------------------------------------------------------------------------------

    def _read_line(self, start: int, end: int) -> int:
        """Read the line `text[start:end]`; returns where reading stopped (a later line's end when a
        construct spans lines)."""
        text = self.text
        line = text[start:end]
        if not line.strip():
            return end
        head = _LINE_HEAD.match(text, start, end)
        if head is None:
            return self._read_action_line(start, end)
        kind = head.lastgroup
        rest = text[head.end() : end].strip()
        if kind == "section":
            self.step = None
            word = head.group("section").lower()
            if word == "recap" and self.recap is None:
                self.recap = rest
            elif word == "plan" and self.plan is None:
                self.plan = rest
            else:
                self.commentary.append(line.strip())
        elif kind == "trig":
            return self._read_trigger_check(start, head.end(), end)
        elif kind == "yld":
            self._add_yield(rest, self._span(head.start(kind), end))
        elif kind == "what":
            self.step = None
            self._add(WhatAction(text=rest, span=self._span(head.start(kind), end)), counts=False)
        else:  # `yld? no, ...`: the model thinking aloud about yielding
            self.commentary.append(line.strip())
        return end

    def _read_trigger_check(self, start: int, rest_start: int, end: int) -> int:
        text = self.text
        self.step = None
        plain = text.find("`", rest_start, end) < 0 and text.find("[", rest_start, end) < 0
        if plain and _NO_TRIGGER.match(text, skip_blanks(text, rest_start, end), end):
            # `trig? no`: by far the most common line.
            self._add(TriggerAction(span=self._span(skip_blanks(text, start, end), end)))
            return end
        items, end = self._scan(rest_start, end)
        fired: list[StepRef] = []
        calls: list[Call] = []
        words: list[str] = []
        for item in items:
            if isinstance(item, _Text):
                piece = text[item.start : item.end]
                call = _bare_call(piece) if fired else None
                if call is not None:
                    calls.append(call)
                else:
                    words.append(piece)
            elif item.kind == "Trigger":
                fired.append(self._reference(item, trigger=True))
            elif item.kind == "call" and fired:
                # `trig? Trigger["X:T1:CND"] `X(n=$n)``: the call the fired trigger makes.
                calls.append(self._call(item, None))
            else:
                raise answer_error(
                    text,
                    item.start,
                    BAD_TRIGGER_CHECK,
                    'only `Trigger["PB:T1:CODE"]` and the calls the triggers make may follow `trig?`',
                )
        said = " ".join(words).strip(" \t`")
        if not fired and _CLAIMS_TRIGGER.match(said):
            raise answer_error(
                text,
                skip_blanks(text, rest_start, end),
                BAD_TRIGGER_CHECK,
                'after `trig?` write `no` or the triggers that fired, as `Trigger["Main:T1:CND"]`',
            )
        if not fired and said and not _NO_TRIGGER.match(said):
            # `trig? already triggered CheckOrder`: prose that fires nothing; kept for the trace.
            self.commentary.append(text[start:end].strip())
            return end
        if fired and said:
            self.commentary.append(text[start:end].strip())  # keeps "already triggered" and the like
        self._add(
            TriggerAction(
                fired=tuple(fired), calls=tuple(calls), span=self._span(skip_blanks(text, start, end), end)
            )
        )
        return end

    def _read_action_line(self, start: int, end: int) -> int:
        text = self.text
        items, end = self._scan(start, end)
        if not any(isinstance(item, _Construct) for item in items):
            self.commentary.append(text[start:end].strip())
            return end
        pending: list[_Text] = []
        for item in items:
            if isinstance(item, _Text):
                said = _YIELD_TEXT.match(text, item.start, item.end)
                if said is None:
                    pending.append(item)
                    continue
                self._flush(pending)
                self._add_yield(said.group("rest"), self._span(item.start, item.end))
                continue
            if item.kind == "Step":
                self._start_step(item)
                self._flush(pending)
            elif item.kind == "call":
                target = self._outside_target(pending)
                self._flush(pending)
                self._add_call(item, target)
            else:
                self._flush(pending)
                self._add_construct(item)
        self._flush(pending)
        return end

    def _flush(self, pending: list[_Text]) -> None:
        """Prose of an action line: the current step's note, else commentary."""
        for item in pending:
            said = self.text[item.start : item.end].strip()
            if _PUNCTUATION_ONLY.match(said):
                continue
            if self.step is not None:
                self.step.notes.append(said)
            else:
                self.commentary.append(said)
        pending.clear()

    def _outside_target(self, pending: list[_Text]) -> Variable | None:
        """`$x:type = ` written just before a backticked call, outside the backticks."""
        if not pending:
            return None
        last = pending[-1]
        found = _ASSIGNMENT_AT_END.search(self.text, last.start, last.end)
        if found is None:
            return None
        pending[-1] = _Text(start=last.start, end=found.start())
        return Variable(name=found.group("name"), type=found.group("type"))

    # Actions ----------------------------------------------------------------------------------

    def _add(self, action: AnswerAction, counts: bool = True) -> None:
        self.actions.append(action)
        self.has_action = self.has_action or counts

    def _add_yield(self, said: str, span: Span) -> None:
        self.step = None
        said = said.strip(" \t`:-–—")
        tail = _YIELD_TAIL.search(said)  # `yld for meeting 100, waiting for replies`
        words = (said[: tail.start()] if tail else said).strip(" \t.`")
        self._add(YieldAction(target=parse_yield_target(words), span=span))

    def _start_step(self, item: _Construct) -> None:
        draft = _StepDraft(ref=self._reference(item, trigger=False), span=self._construct_span(item))
        self.step = draft
        self.actions.append(draft)
        self.has_action = True

    def _add_call(self, item: _Construct, target: Variable | None) -> None:
        call = self._call(item, target)
        if self.step is not None:
            self.step.calls.append(call)
        else:
            self._add(StrayCallAction(call=call, span=self._construct_span(item)), counts=False)

    def _add_construct(self, item: _Construct) -> None:
        text = self.text
        span = self._construct_span(item)
        body = text[item.open + 1 : item.close]
        if item.kind == "Var":
            self._add(self._var(item, body, span))
        elif item.kind == "Return":
            raw = body.strip()
            if raw:
                self._add(ReturnAction(value=parse_value(raw)[0], raw=raw, span=span))
            else:
                self._add(ReturnAction(span=span))
        elif item.kind == "Trigger":
            self._add(TriggerAction(fired=(self._reference(item, trigger=True),), span=span))
        else:
            self._add(self._artifact(item, span))

    def _var(self, item: _Construct, body: str, span: Span) -> VarAction:
        text = self.text
        comma = body.find(",")
        name_part = body if comma < 0 else body[:comma]
        name = _VAR_NAME.fullmatch(name_part)
        if name is None:
            at = item.open + 1 + len(name_part) - len(name_part.lstrip())
            shown = name_part.strip()[:40]
            raise answer_error(
                text, at, BAD_VARIABLE, f"a Var name must be `$identifier`, not `{shown}`", len(shown)
            )
        raw = body[comma + 1 :].strip() if comma >= 0 else ""
        if not raw:
            raise answer_error(
                text,
                item.start,
                BAD_VARIABLE,
                "a Var needs a value: `Var[$name, value]`",
                item.close + 1 - item.start,
            )
        value, literal = parse_value(raw)
        return VarAction(
            name=name.group("name"), type=name.group("type"), value=value, raw=raw, literal=literal, span=span
        )

    def _artifact(self, item: _Construct, span: Span) -> ArtifactAction:
        call = self._call(item, None)
        slots: dict[str, Argument] = {}
        order = ("name", "summary", "content")
        for index, argument in enumerate(call.arguments):
            key = argument.name if argument.name is not None else (order[index] if index < 3 else "")
            slots[key] = argument
        name = slots.get("name")
        summary = slots.get("summary")
        content = slots.get("content")
        usage = 'SaveArtifact takes ($name, "summary", "content")'
        complete = len(call.arguments) == 3 and set(slots) == set(order)
        if not complete or name is None or summary is None or content is None:
            raise answer_error(self.text, item.start, BAD_ARTIFACT, usage, item.open - item.start)
        if name.kind is ArgKind.VARIABLE or (name.kind is ArgKind.LITERAL and isinstance(name.value, str)):
            artifact_name = str(name.value).removeprefix("$")
        else:
            raise answer_error(self.text, item.start, BAD_ARTIFACT, f"{usage}: the name must be `$name`")
        for label, argument in (("summary", summary), ("content", content)):
            if argument.kind is not ArgKind.LITERAL or not isinstance(argument.value, str):
                raise answer_error(
                    self.text, item.start, BAD_ARTIFACT, f"{usage}: the {label} must be a string"
                )
        return ArtifactAction(name=artifact_name, summary=summary.value, content=content.value, span=span)

    def _call(self, item: _Construct, target: Variable | None) -> Call:
        try:
            return parse_call(self.text[item.start : item.close + 1], target)
        except InlineError as error:
            raise answer_error(self.text, item.start + error.offset, error.code, error.message) from None

    def _reference(self, item: _Construct, trigger: bool) -> StepRef:
        if item.ref is not None:
            return item.ref
        text = self.text
        body = text[item.open + 1 : item.close]
        found = _REFERENCE.fullmatch(body)
        written, code = (found.group("line"), found.group("code")) if found is not None else ("", None)
        dotted = _DOTTED_CODE.fullmatch(written) if code is None else None
        if dotted is not None:  # `Main:03.CND`: a dot for the colon before the code
            written, code = dotted.group("line"), dotted.group("code")
        line = _reference_line(written, trigger) if found is not None else None
        if line is None:
            example = '"Main:T1:CND"' if trigger else '"Main:03.01:QUE"'
            form = "Playbook:Tn:Code" if trigger else "Playbook:Line:Code"
            raise answer_error(
                text,
                item.open + 1,
                BAD_REFERENCE,
                f"{item.kind}[...] needs a reference `{form}`, such as {example}",
                item.close - item.open - 1 if "\n" not in body else 0,
            )
        return StepRef(playbook=found.group("playbook"), line=line, code=code or "")

    def _span(self, start: int, end: int) -> Span:
        """Where `text[start:end]` is; `start` is on the line being read or a later one."""
        text = self.text
        line_start = text.rfind("\n", self.line_start, start) + 1 or self.line_start
        line = self.line_number + text.count("\n", self.line_start, start)
        return Span(line=line, column=start - line_start + 1, length=max(end - start, 0))

    def _construct_span(self, item: _Construct) -> Span:
        end = item.close + 1
        return self._span(item.start, end if self.text.find("\n", item.start, end) < 0 else item.start)

    # Scanning ---------------------------------------------------------------------------------

    def _scan(self, start: int, end: int) -> tuple[list[_Construct | _Text], int]:
        """Split `text[start:end]` into constructs and prose; returns them and the end of the last line
        read (constructs may span lines)."""
        text = self.text
        items: list[_Construct | _Text] = []
        cursor = search_from = start
        while True:
            if self.inline_span_at is not None and self.inline_span_at == cursor:
                self.inline_span_at = None
                item, cursor = self._backtick(cursor - 1, end)
                items.append(item)
                search_from = cursor
                continue
            found = _ANCHOR.search(text, search_from, end)
            if found is None:
                if cursor < end:
                    items.append(_Text(start=cursor, end=end))
                return items, end
            if found.start() > 0 and found.group() != "`" and _GLUED.match(text, found.start() - 1):
                search_from = found.start() + 1
                continue
            if found.start() > cursor and not text[cursor : found.start()].isspace():
                items.append(_Text(start=cursor, end=found.start()))
            simple = _SIMPLE_REFERENCE.match(text, found.start(), end)
            if simple is not None and (simple.group("kind") == "Step") != (simple.group("line")[0] == "T"):
                # `Step["PB:Ln:Code"]`, backticked or not: most constructs, read in one regex call.
                kind = simple.group("kind")
                ref = StepRef(
                    playbook=simple.group("playbook"), line=simple.group("line"), code=simple.group("code")
                )
                items.append(
                    _Construct(
                        kind=kind,
                        start=simple.start("kind"),
                        open=simple.end("kind"),
                        close=simple.end("code") + 1,
                        ref=ref,
                    )
                )
                cursor = search_from = simple.end()
                continue
            if found.group() == "`":
                item, cursor = self._backtick(found.start(), end)
            else:
                kind = found.group().rstrip("[( \t")
                item, cursor = self._construct(kind, found.start(), found.end() - 1, None)
            items.append(item)
            search_from = cursor
            if cursor > end:
                end = line_end(text, cursor)

    def _backtick(self, tick: int, end: int) -> tuple[_Construct | _Text, int]:
        """The backtick span at `tick`: a construct, or backticked prose up to the next backtick."""
        text = self.text
        head_at = skip_blanks(text, tick + 1, end)
        head = _SPAN_HEAD.match(text, head_at, end)
        if head is not None and head.group("callee") not in _PYTHON_KEYWORDS:
            if head.group("keyword"):
                kind = head.group("keyword")
            elif head.group("artifact"):
                kind = "SaveArtifact"
            else:
                kind = "call"
            return self._construct(kind, head_at, head.end() - 1, tick)
        if _VARIABLE_CALL.match(text, head_at, end):
            raise answer_error(
                text,
                head_at,
                BAD_CALL,
                "the callee of an inline call must be a name such as `Say`, not a `$variable`",
            )
        if ASSIGNMENT_TARGET.match(text, head_at, end):
            raise answer_error(
                text,
                head_at,
                BAD_CALL,
                "an inline assignment must assign a call's result, as in `$x = Func($y)`; "
                "set a value with `Var[$x, value]`",
            )
        close = text.find("`", tick + 1, end)
        if close < 0:
            return _Text(start=tick, end=tick + 1), tick + 1
        return _Text(start=tick, end=close + 1), close + 1

    def _construct(self, kind: str, start: int, open_index: int, tick: int | None) -> tuple[_Construct, int]:
        """Find where the construct whose bracket is at `open_index` ends; returns it and the index
        after it (after its closing backtick when backticked)."""
        text = self.text
        match = match_bracket(text, open_index)
        if match.close is not None:
            item = _Construct(kind=kind, start=start, open=open_index, close=match.close)
            if not self._doubtful(item, match.string_spans_lines, tick) or self._reads_well(item):
                return item, self._after(item, tick)
        return self._construct_on_its_line(kind, start, open_index, tick, match.unterminated_string)

    def _doubtful(self, item: _Construct, string_spans_lines: bool, tick: int | None) -> bool:
        """Whether a construct that spans lines may have swallowed the lines below: it holds a
        string with real newlines, or its own line has a backtick that could have closed it."""
        text = self.text
        if string_spans_lines:
            return True
        head_line_end = line_end(text, item.start)
        return (
            item.close > head_line_end and tick is not None and text.find("`", item.open, head_line_end) >= 0
        )

    def _after(self, item: _Construct, tick: int | None) -> int:
        """The index after the construct and its closing backtick (which may be missing at the end of
        a line: models drop it after long calls)."""
        text = self.text
        after = item.close + 1
        if tick is None:
            return after
        after = skip_blanks(text, after, len(text))
        if after < len(text) and text[after] == "`":
            return after + 1
        if after < len(text) and text[after] != "\n":
            closing = text.find("`", after, line_end(text, after))
            if item.kind == "Step" and closing >= 0 and _SPAN_HEAD.match(text, after, closing):
                # `Step["Main:01:QUE"] Say("user", "Hi")` in one backtick span: the call is read as if it
                # had backticks of its own.
                self.inline_span_at = after
                return after
            if closing >= 0:
                raise answer_error(
                    text,
                    after,
                    TRAILING_TEXT,
                    f"unexpected text after `{self._label(item)}...{text[item.close]}` in the backticks",
                )
            raise answer_error(text, tick, UNTERMINATED, "this backtick span never closes", 1)
        return after

    def _construct_on_its_line(
        self, kind: str, start: int, open_index: int, tick: int | None, bad_string: int | None
    ) -> tuple[_Construct, int]:
        """Fallbacks when the brackets do not match across the answer, both within the construct's line:
        quotes read as plain text (`Var[$__, the 5" screen]`), or a `Var[`/`Return[`/`Step[`/`Trigger[`
        whose own `]` is missing before the closing backtick (`Var[$x, [1, 2]`) while all inside closes."""
        text = self.text
        head_line_end = line_end(text, start)
        closing_tick = text.find("`", open_index + 1, head_line_end) if tick is not None else -1
        stop = closing_tick if closing_tick >= 0 else head_line_end
        close = match_bracket_ignoring_quotes(text, open_index, stop)
        if close is not None and (tick is None or not text[close + 1 : stop].strip()):
            item = _Construct(kind=kind, start=start, open=open_index, close=close)
            return item, (closing_tick + 1 if closing_tick >= 0 else close + 1)
        if closing_tick >= 0 and kind in _KEYWORD_LABELS and is_balanced(text, open_index + 1, closing_tick):
            return _Construct(kind=kind, start=start, open=open_index, close=closing_tick), closing_tick + 1
        label = self._label(_Construct(kind=kind, start=start, open=open_index, close=open_index))
        if bad_string is not None and bad_string < head_line_end:
            raise answer_error(text, bad_string, UNTERMINATED, f"a string in `{label}` never closes", 1)
        raise answer_error(text, start, UNTERMINATED, f"`{label}` never closes", open_index + 1 - start)

    def _label(self, item: _Construct) -> str:
        if item.kind in _KEYWORD_LABELS:
            return _KEYWORD_LABELS[item.kind]
        head = self.text[item.start : item.open + 1]
        return " ".join(head.split())

    def _reads_well(self, item: _Construct) -> bool:
        """Whether a construct holding a multi-line string reads as what it claims to be."""
        body = self.text[item.open + 1 : item.close]
        if item.kind in ("Var", "Return"):
            value = body.split(",", 1)[1] if item.kind == "Var" and "," in body else body
            return parse_value(value)[1]
        if item.kind in ("Step", "Trigger"):
            return _REFERENCE.fullmatch(body) is not None
        try:
            parse_call(self.text[item.start : item.close + 1])
        except InlineError:
            return False
        return True


__all__ = ["AnswerAction", "ContractSyntaxError", "StrayCallAction", "parse_answer"]

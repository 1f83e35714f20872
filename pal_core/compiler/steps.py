"""Markdown step items -> numbered PAL steps: opcodes, inserted yields, jumps and the closing RET."""

from __future__ import annotations

import builtins
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field

from pal_core.codes import BAD_JUMP, BAD_STEP, STEP_BY_WORDS
from pal_core.compiler import phrases
from pal_core.compiler.calls import CallIndex
from pal_core.compiler.markdown import SourceItem
from pal_core.compiler.names import words_of
from pal_core.errors import SourceReporter
from pal_core.ir import ConditionKind, Opcode, Span, Step
from pal_core.step_text import (
    TYPED_VARIABLE_RE,
    declared_variables,
    is_python_expression,
    literal_value,
    parse_condition,
    parse_statement,
)

_PYTHON_BUILTINS = frozenset(name for name in dir(builtins) if not name.startswith("_"))
_LOOPS = (ConditionKind.WHILE, ConditionKind.FOR)
_CHAIN_CONTINUATIONS = (ConditionKind.ELSE_IF, ConditionKind.OTHERWISE)
_CHECK_AGAIN = " to check again"


@dataclass(frozen=True, slots=True, kw_only=True)
class StepContext:
    """What the step compiler knows about the playbook being compiled and the program around it."""

    playbook: str
    """The playbook's own name (never taken for a call to itself when named in a sentence)."""
    meeting: bool
    """Whether the playbook is a meeting: questions then wait for the meeting, not the user."""
    calls: CallIndex
    """The playbooks and agents the steps may name."""


@dataclass(slots=True, kw_only=True)
class _Draft:
    """A step before numbering: jumps name their target draft, not yet a line number."""

    opcode: str
    text: str = ""
    span: Span | None = None
    children: list[_Draft] = field(default_factory=list)
    kind: ConditionKind | None = None
    """For CND: the condition kind."""
    head: _Draft | None = None
    """For CND: the `if` that starts its if/else chain (itself for an `if` or a loop)."""
    target: _Draft | None = None
    """For JMP: the target, once known."""
    suffix: str = ""
    """For JMP: words after the target line number."""
    line: str = ""


@dataclass(slots=True, kw_only=True)
class _PendingJump:
    """A jump whose target is found after the whole playbook is read (it may point forward)."""

    draft: _Draft
    phrase: phrases.JumpPhrase
    item: SourceItem


def compile_steps(
    items: list[SourceItem], context: StepContext, reporter: SourceReporter
) -> tuple[Step, ...]:
    """The numbered PAL steps of a playbook's `### Steps` items."""
    return _StepCompiler(context, reporter).run(items)


class _StepCompiler:
    def __init__(self, context: StepContext, reporter: SourceReporter) -> None:
        self.context = context
        self.reporter = reporter
        # Items are mutable dataclasses (unhashable), so the first draft of each is keyed by id(); the
        # items made for inline actions are kept in `made` so that no id is reused while compiling.
        self.primary: dict[int, _Draft] = {}
        self.made: list[SourceItem] = []
        self.paths: dict[tuple[int, ...], SourceItem] = {}
        self.order: list[SourceItem] = []
        self.pending: list[_PendingJump] = []
        self.top: list[_Draft] = []
        # The lists being compiled, outermost first, with the position reached in each.
        self.reading: list[tuple[list[SourceItem], int]] = []

    def run(self, items: list[SourceItem]) -> tuple[Step, ...]:
        self.index_items(items, ())
        self.top = self.compile_items(items, ())
        if not self.top:
            return ()
        if not _transfers_control(self.top[-1], returns_only=True):
            self.top.append(_Draft(opcode=Opcode.RET))
        _number(self.top, "")
        for pending in self.pending:
            self.resolve(pending)
        return tuple(_freeze(draft) for draft in self.top)

    def index_items(self, items: list[SourceItem], prefix: tuple[int, ...]) -> None:
        for position, item in enumerate(items, 1):
            path = (*prefix, position)
            self.paths[path] = item
            self.order.append(item)
            self.index_items(item.children, path)

    # --- items -------------------------------------------------------------------------------------

    def compile_items(self, items: list[SourceItem], enclosing: tuple[_Draft, ...]) -> list[_Draft]:
        drafts: list[_Draft] = []
        for position, item in enumerate(items):
            self.reading.append((items, position))
            drafts.extend(self.compile_item(item, enclosing, drafts))
            self.reading.pop()
        return drafts

    def compile_item(
        self, item: SourceItem, enclosing: tuple[_Draft, ...], siblings: list[_Draft]
    ) -> list[_Draft]:
        text = item.text.strip()
        span = Span(line=item.line, column=item.column, length=len(text))
        parts = phrases.split_condition(text)
        if parts is not None:
            return [self.compile_condition(item, parts, span, enclosing, siblings)]
        tail = phrases.trailing_jump(text)
        if tail is not None:
            text = tail[0]
        jump = phrases.whole_jump(text) if tail is None else None
        if jump is not None:
            draft = _Draft(opcode=Opcode.JMP, span=span)
            self.primary[id(item)] = draft
            self.place_jump(draft, jump, item, enclosing)
            if item.children:
                self.reporter.error(
                    BAD_STEP, "a jump cannot have nested steps; put them before it", item.line, item.column
                )
            return [draft]
        exit_after = phrases.trailing_exit(text) if tail is None else None
        if exit_after is not None:
            text = exit_after
        drafts = self.classify(text, span)
        main = drafts[0]
        self.primary[id(item)] = main
        main.children = self.compile_items(item.children, enclosing)
        if exit_after is not None:
            drafts.append(_Draft(opcode=Opcode.YLD, text="exit", span=span))
        elif tail is not None:
            follow = _Draft(opcode=Opcode.JMP, span=span)
            self.place_jump(follow, tail[1], item, enclosing)
            drafts.append(follow)
        elif main.opcode == Opcode.QUE and phrases.mentions_try_again(text) and enclosing:
            # `Ask them to try again` inside a condition: after the answer, check the condition again.
            drafts.append(
                _Draft(opcode=Opcode.JMP, span=span, target=_chain_head(enclosing[-1]), suffix=_CHECK_AGAIN)
            )
        return drafts

    def compile_condition(
        self,
        item: SourceItem,
        parts: phrases.ConditionParts,
        span: Span,
        enclosing: tuple[_Draft, ...],
        siblings: list[_Draft],
    ) -> _Draft:
        kind = parse_condition(parts.condition).kind
        draft = _Draft(opcode=Opcode.CND, text=parts.condition, span=span, kind=kind)
        previous = siblings[-1] if siblings else None
        if kind in _CHAIN_CONTINUATIONS and previous is not None and previous.opcode == Opcode.CND:
            draft.head = _chain_head(previous)
        else:
            draft.head = draft
        self.primary[id(item)] = draft
        body = item.children
        if parts.action is not None:
            action = SourceItem(text=parts.action, line=item.line, column=item.column + parts.action_offset)
            self.made.append(action)
            if parts.action.rstrip().endswith(":"):
                # `For each dish, specify:` - the nested items belong to the action.
                action.children = item.children
                body = [action]
            else:
                body = [action, *item.children]
        draft.children = self.compile_items(body, (*enclosing, draft))
        if kind in _LOOPS and not (draft.children and _transfers_control(draft.children[-1])):
            draft.children.append(_Draft(opcode=Opcode.JMP, span=span, target=draft))
        return draft

    # --- one statement -----------------------------------------------------------------------------

    def classify(self, text: str, span: Span) -> list[_Draft]:
        """The step for one statement, followed by the yield it needs."""
        if phrases.is_exit(text):
            return [_Draft(opcode=Opcode.YLD, text="exit", span=span)]
        if phrases.is_wait_for_user(text):
            return [_Draft(opcode=Opcode.YLD, text="user", span=span)]
        value = phrases.return_value(text)
        if value is not None:
            return [_Draft(opcode=Opcode.RET, text=value, span=span)]
        call, assignment = parse_statement(text)
        if call is not None:
            if call.name in _PYTHON_BUILTINS:
                return [_Draft(opcode=Opcode.EXE, text=text, span=span)]
            drafts = [_Draft(opcode=Opcode.QUE, text=text, span=span)]
            if call.name == "Say" and phrases.asks_for_reply(text):
                drafts.append(_Draft(opcode=Opcode.YLD, text=self.reply_target(text), span=span))
            elif call.result is not None or self.returns_value(call.name):
                drafts.append(_Draft(opcode=Opcode.YLD, text="call", span=span))
            return drafts
        if assignment is not None:
            return [_Draft(opcode=Opcode.EXE, text=text, span=span)]
        setting = phrases.set_statement(text)
        if setting is not None:
            target, value = setting
            if literal_value(value)[1] or ("$" in value and is_python_expression(value)):
                text = f"{target} = {value}"
            return [_Draft(opcode=Opcode.EXE, text=text, span=span)]
        verb = phrases.leading_verb(text)
        if verb in phrases.THINK_VERBS:
            return [_Draft(opcode=Opcode.TNK, text=text, span=span)]
        step_words = words_of(text)
        callee = self.context.calls.named_playbook(text, step_words, self.context.playbook)
        if callee is not None:
            drafts = [_Draft(opcode=Opcode.QUE, text=text, span=span)]
            if callee.returns_value is not False:
                drafts.append(_Draft(opcode=Opcode.YLD, text="call", span=span))
            return drafts
        if verb in phrases.COMMUNICATION_VERBS or phrases.is_question(text):
            drafts = [_Draft(opcode=Opcode.QUE, text=text, span=span)]
            if phrases.asks_for_reply(text):
                drafts.append(_Draft(opcode=Opcode.YLD, text=self.reply_target(text), span=span))
            return drafts
        if verb in phrases.CALL_VERBS:
            drafts = [_Draft(opcode=Opcode.QUE, text=text, span=span)]
            if self.context.calls.names_other_agent(text, step_words):
                drafts.append(_Draft(opcode=Opcode.YLD, text="call", span=span))
            return drafts
        return [_Draft(opcode=Opcode.EXE, text=text, span=span)]

    def reply_target(self, text: str) -> str:
        """Who answers a question: the meeting in a meeting playbook (unless the user is named), else
        the user."""
        if self.context.meeting and "user" not in words_of(text):
            return "meeting"
        return "user"

    def returns_value(self, name: str) -> bool:
        """Whether a call to `name` needs `YLD call`: a playbook of the program not known to return None."""
        callee = self.context.calls.callee(name)
        return callee is not None and callee.returns_value is not False

    # --- jumps -------------------------------------------------------------------------------------

    def place_jump(
        self, draft: _Draft, phrase: phrases.JumpPhrase, item: SourceItem, enclosing: tuple[_Draft, ...]
    ) -> None:
        if phrase.kind == "enclosing":
            if not enclosing:
                self.reporter.error(
                    BAD_JUMP,
                    f"{item.text.strip()!r} has nothing to go back to: it is not inside a condition or loop; "
                    "name the step, as in 'Go back to step 2'",
                    item.line,
                    item.column,
                    len(item.text.strip()),
                )
                return
            draft.target = _chain_head(enclosing[-1])
            draft.suffix = _CHECK_AGAIN
            return
        if phrase.kind == "previous":
            previous = self.previous_item()
            if previous is None:
                self.reporter.error(
                    BAD_JUMP,
                    "there is no previous step to go back to",
                    item.line,
                    item.column,
                    len(item.text),
                )
                return
            draft.target = self.primary.get(id(previous))
            return
        self.pending.append(_PendingJump(draft=draft, phrase=phrase, item=item))

    def previous_item(self) -> SourceItem | None:
        """The item before the one being compiled: its previous sibling, or its parent's, and so on out."""
        for items, position in reversed(self.reading):
            if position > 0:
                return items[position - 1]
        return None

    def resolve(self, pending: _PendingJump) -> None:
        phrase = pending.phrase
        item = pending.item
        target: SourceItem | None = None
        if phrase.kind == "first":
            pending.draft.target = self.top[0]
            return
        if phrase.kind == "path":
            target = self.paths.get(phrase.path)
            if target is None:
                written = ".".join(str(part) for part in phrase.path)
                self.reporter.error(
                    BAD_JUMP,
                    f"there is no step {written} to go back to "
                    "(steps are counted from 1 at each level of the list)",
                    item.line,
                    item.column,
                    len(item.text.strip()),
                )
                return
        else:
            target = self.find_by_text(phrase.text, item)
            if target is None:
                target = self.find_by_words(phrase.text, item)
            if target is None:
                return
            bound = phrases.reference_bound(phrase.text)
            if bound and not pending.draft.suffix:
                pending.draft.suffix = f" {bound}"
        pending.draft.target = self.primary.get(id(target))

    def find_by_text(self, wanted: str, jump_item: SourceItem) -> SourceItem | None:
        """The step whose text starts with `wanted` (case and punctuation aside): the nearest one before
        the jump, else the first one after it."""
        key = _comparable(wanted)
        if not key:
            return None
        before: SourceItem | None = None
        after: SourceItem | None = None
        seen_jump = False
        for candidate in self.order:
            if candidate is jump_item:
                seen_jump = True
                continue
            if not _comparable(candidate.text).startswith(key):
                continue
            if not seen_jump:
                before = candidate
            elif after is None:
                after = candidate
        return before or after

    def find_by_words(self, wanted: str, jump_item: SourceItem) -> SourceItem | None:
        """The step whose words best match `wanted` (`thinking to find issues, up to 2 times` names the
        step `Think if there is any missing information...`), reported as a warning; None, with an error
        listing the candidate steps, when no step matches well enough."""
        candidates = [(path, item) for path, item in self.paths.items() if item is not jump_item]
        position = {id(item): index for index, item in enumerate(self.order)}
        jump_at = position.get(id(jump_item), len(self.order))  # an inline jump: after its line
        scored = [(phrases.reference_score(wanted, item.text), path, item) for path, item in candidates]
        good = [entry for entry in scored if entry[0] >= phrases.REFERENCE_THRESHOLD]
        if good:
            best = max(entry[0] for entry in good)
            tied = [entry for entry in good if entry[0] == best]
            # The nearest step before the jump (a jump goes back), else the first one after it.
            before = [entry for entry in tied if position[id(entry[2])] < jump_at]
            _, path, target = before[-1] if before else tied[0]
            self.reporter.warn(
                STEP_BY_WORDS,
                f"no step starts with {wanted!r}; read as a jump to step {_markdown_number(path)} "
                f"({_excerpt(target.text)!r}), the step whose words match best; name the step by its "
                "number to be sure",
                jump_item.line,
                jump_item.column,
                len(jump_item.text.strip()),
            )
            return target
        ranked = sorted(scored, key=lambda entry: (-entry[0], position[id(entry[2])]))[:5]
        listed = "; ".join(f"{_markdown_number(path)} {_excerpt(item.text)!r}" for _, path, item in ranked)
        self.reporter.error(
            BAD_JUMP,
            f"no step starts with {wanted!r} or matches its words"
            + (f"; the steps it could mean: {listed}" if listed else "")
            + "; name the step by its number, as in 'Go back to step 2'",
            jump_item.line,
            jump_item.column,
            len(jump_item.text.strip()),
        )
        return None


def _markdown_number(path: tuple[int, ...]) -> str:
    """A step's number as its author counts it: 1-based per level of the markdown list."""
    return ".".join(str(part) for part in path)


def _excerpt(text: str, limit: int = 60) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3].rstrip() + "..."


def _comparable(text: str) -> str:
    return " ".join(re.findall(r"[\w$]+", text.lower()))


def _chain_head(draft: _Draft) -> _Draft:
    return draft.head if draft.head is not None else draft


def _transfers_control(draft: _Draft, *, returns_only: bool = False) -> bool:
    """Whether control never falls through this step: RET, `YLD exit`, or (unless returns_only) JMP."""
    if draft.opcode == Opcode.RET or (draft.opcode == Opcode.YLD and draft.text == "exit"):
        return True
    return not returns_only and draft.opcode == Opcode.JMP


def _number(drafts: list[_Draft], prefix: str) -> None:
    for position, draft in enumerate(drafts, 1):
        draft.line = f"{prefix}.{position:02d}" if prefix else f"{position:02d}"
        _number(draft.children, draft.line)


def _freeze(draft: _Draft) -> Step:
    text = draft.text
    if draft.opcode == Opcode.JMP and draft.target is not None:
        text = f"{draft.target.line}{draft.suffix}"
    return Step(
        line=draft.line,
        opcode=str(draft.opcode),  # the IR holds the code as text, as the parser reads it
        text=text,
        children=tuple(_freeze(child) for child in draft.children),
        span=draft.span,
    )


# --- return types ----------------------------------------------------------------------------------


def returned_types(items: list[SourceItem], declared: Mapping[str, str | None]) -> list[str | None]:
    """The type of each value a playbook's steps return (None where it cannot be told), in order."""
    found: list[str | None] = []
    for item in items:
        text = item.text.strip()
        parts = phrases.split_condition(text)
        if parts is not None:
            if parts.action is not None:
                found.extend(
                    returned_types([SourceItem(text=parts.action, line=item.line, column=1)], declared)
                )
        else:
            tail = phrases.trailing_jump(text)
            value = phrases.return_value(tail[0] if tail is not None else text)
            if value:
                found.append(_value_type(value, declared))
        found.extend(returned_types(item.children, declared))
    return found


def declared_types(items: list[SourceItem]) -> dict[str, str]:
    """`$name:type` declarations written anywhere in the items."""
    return {name: declared for name, declared in declared_variables(_texts(items)).items() if declared}


def _texts(items: list[SourceItem]) -> Iterator[str]:
    for item in items:
        yield item.text
        yield from _texts(item.children)


def _value_type(value: str, declared: Mapping[str, str | None]) -> str | None:
    variable = TYPED_VARIABLE_RE.fullmatch(value.rstrip("."))
    if variable is not None:
        return variable.group(2) or declared.get(variable.group(1))
    literal, is_literal = literal_value(value)
    if is_literal:
        return "None" if literal is None else type(literal).__name__
    if "$" in value and is_python_expression(value):
        return None
    return "str"  # a description in words of what is returned: the model answers in text

"""The source tree -> the PAL IR: names, parameters, return types, triggers, notes, descriptions, steps."""

from __future__ import annotations

from dataclasses import dataclass

from pal_core.codes import BAD_HEADER, BAD_PYTHON, DUPLICATE, TRIGGER_STRING
from pal_core.compiler.calls import AgentCallees, Callee, CallIndex
from pal_core.compiler.markdown import SourceAgent, SourceDocument, SourceItem, SourcePlaybook
from pal_core.compiler.names import (
    PlaybookHeader,
    UnnamableTitle,
    agent_description,
    camel_case,
    identifier_words,
    playbook_description,
    read_playbook_header,
    words_of,
)
from pal_core.compiler.steps import (
    StepContext,
    compile_steps,
    declared_types,
    returned_types,
)
from pal_core.errors import SourceReporter
from pal_core.ir import (
    Agent,
    Metadata,
    Note,
    Playbook,
    PlaybookKind,
    Program,
    Span,
    Trigger,
)
from pal_core.metadata import metadata_of
from pal_core.python_blocks import python_playbooks
from pal_core.triggers import canonical_python, trigger_code


@dataclass(slots=True, kw_only=True)
class _PlaybookPlan:
    """A markdown playbook whose header has been read, waiting for its steps to be compiled."""

    source: SourcePlaybook
    header: PlaybookHeader
    metadata: Metadata
    returns: str


@dataclass(slots=True, kw_only=True)
class _AgentPlan:
    """An agent whose names are known, before its markdown playbooks are compiled."""

    source: SourceAgent
    name: str | None
    """None when the header gives no usable name: the agent is then only checked for errors."""
    metadata: Metadata
    python_blocks: tuple[str, ...]
    python_playbooks: tuple[Playbook, ...]
    playbooks: list[_PlaybookPlan]
    unusable: list[SourcePlaybook]
    """Playbooks whose header is unusable or repeated: only checked for errors."""


def build_program(document: SourceDocument, reporter: SourceReporter, file: str | None) -> Program:
    """The Program for a markdown source tree; problems go to `reporter` (the result is then partial)."""
    plans: list[_AgentPlan] = []
    seen_agents: dict[str, int] = {}
    for source in document.agents:
        plan = _plan_agent(source, reporter)
        if plan.name is not None and plan.name in seen_agents:
            reporter.error(
                DUPLICATE,
                f"agent {plan.name} is already defined (line {seen_agents[plan.name]})",
                source.line,
                3,
                len(source.title),
            )
            plan.name = None
        elif plan.name is not None:
            seen_agents[plan.name] = source.line
        plans.append(plan)
    directory = {
        plan.name: AgentCallees(name=plan.name, words=_title_words(plan), playbooks=_callees(plan))
        for plan in plans
        if plan.name is not None
    }
    agents = tuple(
        _build_agent(plan, plan.name, directory, reporter) for plan in plans if plan.name is not None
    )
    for plan in plans:
        # Sections that cannot become part of the program are still read, so all their problems show.
        unchecked = (
            plan.unusable if plan.name is not None else [*plan.unusable, *(p.source for p in plan.playbooks)]
        )
        for source in unchecked:
            compile_steps(source.sections.get("steps", []), _STAND_IN, reporter)
    return Program(
        agents=agents,
        frontmatter=document.frontmatter,
        trailing_comments=tuple(document.trailing_comments),
        source=file,
    )


# --- planning (names first: a step may call a playbook defined further down) -------------------------


def _plan_agent(source: SourceAgent, reporter: SourceReporter) -> _AgentPlan:
    name: str | None = None
    if not source.line:
        pass  # the stand-in for playbooks written before any agent header; that is already reported
    elif not source.title.strip():
        reporter.error(BAD_HEADER, "agent header without a name; write '# Agent name'", source.line, 1, 1)
    else:
        try:
            name = camel_case(source.title)
        except UnnamableTitle as error:
            reporter.error(BAD_HEADER, f"cannot name the agent: {error}", source.line, 3, len(source.title))
    metadata = metadata_of(source.metadata, reporter)
    codes: list[str] = []
    python: list[Playbook] = []
    for index, block in enumerate(source.python_blocks):
        canonical = canonical_python(block.text)
        code = canonical.code
        for rewrite in canonical.rewrites:
            if rewrite.lone_string:
                reporter.warn(
                    TRIGGER_STRING,
                    f"triggers={rewrite.text!r} is one string; read as the list {rewrite.written}",
                    block.line + rewrite.line,
                    rewrite.column,
                    len(rewrite.text) + 2,
                )
        codes.append(code)
        found, problems = python_playbooks(code, index, canonical.module)
        for problem in problems:
            reporter.error(BAD_PYTHON, problem.message, block.line + problem.line, problem.column)
        python.extend(found)
    names: dict[str, int] = {}
    for playbook in python:
        names.setdefault(playbook.name, source.line)
    plans: list[_PlaybookPlan] = []
    unusable: list[SourcePlaybook] = []
    for playbook_source in source.playbooks:
        header = read_playbook_header(
            playbook_source.title, playbook_source.line, playbook_source.column, reporter
        )
        playbook_metadata = metadata_of(playbook_source.metadata, reporter)
        if header is None:
            unusable.append(playbook_source)
            continue
        if header.name in names:
            reporter.error(
                DUPLICATE,
                f"playbook {header.name} is already defined in this agent (line {names[header.name]})",
                playbook_source.line,
                playbook_source.column,
                len(playbook_source.title),
            )
            unusable.append(playbook_source)
            continue
        names[header.name] = playbook_source.line
        plans.append(
            _PlaybookPlan(
                source=playbook_source,
                header=header,
                metadata=playbook_metadata,
                returns=header.returns or _infer_returns(playbook_source, header),
            )
        )
    return _AgentPlan(
        source=source,
        name=name,
        metadata=metadata,
        python_blocks=tuple(codes),
        python_playbooks=tuple(python),
        playbooks=plans,
        unusable=unusable,
    )


def _infer_returns(source: SourcePlaybook, header: PlaybookHeader) -> str:
    """`None` when no step returns a value; the one type all returned values have; `Any` otherwise."""
    items = source.sections.get("steps", [])
    declared: dict[str, str | None] = {parameter.name: parameter.type for parameter in header.parameters}
    for variable, type_ in declared_types(items).items():
        if declared.get(variable) is None:
            declared[variable] = type_
    types = returned_types(items, declared)
    if not types:
        return "None"
    distinct = set(types)
    if len(distinct) == 1 and None not in distinct:
        return types[0] or "Any"
    return "Any"


_STAND_IN = StepContext(
    playbook="", meeting=False, calls=CallIndex(AgentCallees(name="", words=(), playbooks={}), {})
)
"""The context for checking the steps of a section that cannot be compiled (its header is unusable)."""


def _title_words(plan: _AgentPlan) -> tuple[str, ...]:
    """The agent title as words, for spotting the agent named in a sentence."""
    title = plan.source.title.strip()
    return identifier_words(title) if title.isidentifier() else words_of(title)


def _callees(plan: _AgentPlan) -> dict[str, Callee]:
    callees: dict[str, Callee] = {}
    for playbook in plan.python_playbooks:
        returns = None if playbook.returns is None else playbook.returns != "None"
        callees[playbook.name] = Callee(
            name=playbook.name, words=identifier_words(playbook.name), returns_value=returns
        )
    for markdown in plan.playbooks:
        callees[markdown.header.name] = Callee(
            name=markdown.header.name, words=markdown.header.words, returns_value=markdown.returns != "None"
        )
    return callees


# --- building -------------------------------------------------------------------------------------


def _build_agent(
    plan: _AgentPlan, name: str, directory: dict[str, AgentCallees], reporter: SourceReporter
) -> Agent:
    calls = CallIndex(directory[name], {other: agent for other, agent in directory.items() if other != name})
    markdown = tuple(_build_playbook(playbook, calls, reporter) for playbook in plan.playbooks)
    playbooks = (*plan.python_playbooks, *markdown)
    description = _join_description(plan.source.description)
    if not description:
        description = agent_description(plan.source.title, [playbook.name for playbook in playbooks])
    return Agent(
        name=name,
        description=description,
        metadata=plan.metadata,
        python_blocks=plan.python_blocks,
        playbooks=playbooks,
        public_json=plan.source.public_json,
        comments=plan.source.comments,
        span=Span(line=plan.source.line, column=3, length=len(plan.source.title)),
    )


def _build_playbook(
    plan: _PlaybookPlan,
    calls: CallIndex,
    reporter: SourceReporter,
) -> Playbook:
    source = plan.source
    context = StepContext(
        playbook=plan.header.name,
        meeting=bool(plan.metadata.meeting),
        calls=calls,
    )
    steps = compile_steps(source.sections.get("steps", []), context, reporter)
    description = _join_description(source.description) or playbook_description(plan.header)
    return Playbook(
        name=plan.header.name,
        kind=PlaybookKind.PYTHON if plan.metadata.python else PlaybookKind.MARKDOWN,
        parameters=plan.header.parameters,
        returns=plan.returns,
        description=description,
        metadata=plan.metadata,
        triggers=tuple(
            _trigger(item, position)
            for position, item in enumerate(_flatten(source.sections.get("triggers", [])), 1)
        ),
        steps=steps,
        notes=tuple(
            Note(
                id=f"N{position}",
                text=item.text.strip(),
                span=Span(line=item.line, column=item.column, length=len(item.text.strip())),
            )
            for position, item in enumerate(_flatten(source.sections.get("notes", [])), 1)
        ),
        comments=source.comments,
        span=Span(line=source.line, column=source.column, length=len(source.title)),
    )


def _trigger(item: SourceItem, position: int) -> Trigger:
    code, text = trigger_code(item.text)
    return Trigger(
        id=f"T{position}",
        code=code,
        text=text,
        span=Span(line=item.line, column=item.column, length=len(item.text.strip())),
    )


def _flatten(items: list[SourceItem]) -> list[SourceItem]:
    """Items in reading order, nested ones after their parent (each trigger or note stands alone)."""
    flat: list[SourceItem] = []
    for item in items:
        flat.append(item)
        flat.extend(_flatten(item.children))
    return flat


def _join_description(lines: list[str]) -> str:
    start, end = 0, len(lines)
    while start < end and not lines[start].strip():
        start += 1
    while end > start and not lines[end - 1].strip():
        end -= 1
    return "\n".join(lines[start:end])

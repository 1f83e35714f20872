"""Termination conditions as steps the chair runs after each message.

Each leaf condition has a variable `$stopN` that stays None until the condition fires and then holds its
stop message, worded as the framework words it; `and` fires once all its children have fired (each
keeps its message, as AutoGen's AndTerminationCondition does), `or` as soon as any has. The leaves look
at `$delta` (the messages of the last step: the task at the start, then each reply) and its last entry
`$last`; the chair stops when the root's variable is set.
"""

from __future__ import annotations

from importers.autogen._model import Termination
from importers.common.steps import StepList, literal


class TerminationSteps:
    """Numbers the nodes of a termination tree and writes their start and check steps."""

    __slots__ = ("_ids", "_next", "helper")

    def __init__(self, helper: object) -> None:
        self._ids: dict[int, int] = {}
        self._next = 1
        self.helper = helper
        """A callable giving the PAL name of a support helper (adding its playbook)."""

    def _id(self, node: Termination) -> int:
        key = id(node)
        if key not in self._ids:
            self._ids[key] = self._next
            self._next += 1
        return self._ids[key]

    def start(self, node: Termination, steps: StepList) -> None:
        """`$stopN = None` for every node, and the counters of MaxMessageTermination."""
        number = self._id(node)
        steps.add("EXE", f"$stop{number} = None")
        if node.kind == "max_messages":
            steps.add("EXE", f"$count{number}:int = 0")
        for child in node.children:
            self.start(child, steps)

    def check(self, node: Termination, steps: StepList) -> str:
        """Steps that update `node` from `$delta` / `$last`; returns its variable."""
        number = self._id(node)
        variable = f"$stop{number}"
        if node.kind in ("and", "or"):
            children = [self.check(child, steps) for child in node.children]
            if not children:
                return variable
            joined = f"$joined{number}"
            steps.add("EXE", f'{joined}:str = ""')
            for child in children:
                body = StepList()
                body.add("EXE", f'{joined} = {joined} + ", " + {child}')
                steps.branch(f"If {child} != None", body)
            done = " and ".join(f"{child} != None" for child in children)
            if node.kind == "or":
                done = f'{joined} != ""'
            body = StepList()
            body.add("EXE", f"{variable} = {joined}[2:]")
            steps.branch(f"If {variable} == None and {done}", body)
            return variable
        options = node.options
        if node.kind == "never":
            return variable
        if node.kind == "max_messages":
            count = f"$count{number}"
            limit = int(options["max_messages"])
            body = StepList()
            body.add("EXE", f"{count} = {count} + len($delta)")
            inner = StepList()
            text = f"Maximum number of messages {limit} reached, current message count: "
            inner.add("EXE", f"{variable} = {literal(text)} + str({count})")
            body.branch(f"If {count} >= {limit}", inner)
            steps.branch(f"If {variable} == None", body)
            return variable
        if node.kind == "function":
            flag = f"$fired{number}"
            body = StepList()
            body.add(
                "EXE",
                f"{flag}:bool = {self.helper('termination_function')}(func={literal(options['func'])}, messages=$delta)",
            )
            inner = StepList()
            inner.add("EXE", f'{variable} = "Functional termination condition met"')
            body.branch(f"If {flag}", inner)
            steps.branch(f"If {variable} == None", body)
            return variable
        condition, text = _leaf(node)
        body = StepList()
        body.add("EXE", f"{variable} = {text}")
        steps.branch(f"If {variable} == None and {condition}", body)
        return variable


def _leaf(node: Termination) -> tuple[str, str]:
    """(condition over `$last`, the stop message expression) of a simple leaf."""
    options = node.options
    if node.kind == "text_mention":
        condition = f'$last["content"] != None and {literal(options["text"])} in $last["content"]'
        if options.get("sources") is not None:
            condition += f' and $last["source"] in {literal(list(options["sources"]))}'
        return condition, literal(f"Text '{options['text']}' mentioned")
    if node.kind == "handoff":
        target = literal(options["target"])
        return (
            f'"handoff" in $last and $last["handoff"] == {target}',
            f'{literal("Handoff to " + options["target"] + " from ")} + $last["source"] + " detected."',
        )
    if node.kind == "source_match":
        return (
            f'$last["source"] in {literal(list(options["sources"]))}',
            '"\'" + $last["source"] + "\' answered"',
        )
    if node.kind == "text_message":
        condition = '"handoff" not in $last'
        if options.get("source") is not None:
            condition += f' and $last["source"] == {literal(options["source"])}'
        return condition, '"Text message received from \'" + $last["source"] + "\'"'
    raise ValueError(f"unknown termination kind {node.kind!r}")  # pragma: no cover - the reader makes these

"""Which playbook or agent a step names: the callees of the program, indexed once per agent."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

from pal_core.compiler.names import counts_as_one_word


@dataclass(frozen=True, slots=True, kw_only=True)
class Callee:
    """A playbook a step may call."""

    name: str
    """The playbook name (CamelCase for markdown playbooks, the function name for Python ones)."""
    words: tuple[str, ...]
    """Its name as lower-case words, for spotting it in a sentence."""
    returns_value: bool | None
    """True when it returns a value, False when it returns None, None when that is not known."""


@dataclass(frozen=True, slots=True, kw_only=True)
class AgentCallees:
    """An agent of the program, as a step may name it."""

    name: str
    """The agent name."""
    words: tuple[str, ...]
    """The agent's title as lower-case words."""
    playbooks: Mapping[str, Callee]
    """Its playbooks by name, in text order (Python playbooks first)."""


def _alternation(names: list[str]) -> re.Pattern[str] | None:
    """One pattern for all names as whole words; longest first, so `Agent.Name` wins over `Name`."""
    if not names:
        return None
    ordered = sorted(names, key=lambda name: (-len(name), name))
    return re.compile(r"(?<![\w.$])(?:" + "|".join(re.escape(name) for name in ordered) + r")(?!\w)")


class CallIndex:
    """The playbooks and agents one agent's steps may name, ready for fast look-ups.

    Built once per agent: looking a sentence up costs one regex search and a few dict look-ups,
    whatever the number of playbooks.
    """

    def __init__(self, own: AgentCallees, others: Mapping[str, AgentCallees]) -> None:
        self.own = own
        self.others = others
        spotted: dict[str, Callee] = {
            callee.name: callee for callee in own.playbooks.values() if not counts_as_one_word(callee.name)
        }
        for agent in others.values():
            for callee in agent.playbooks.values():
                spotted[f"{agent.name}.{callee.name}"] = callee
        self._by_name = spotted
        self._name_pattern = _alternation(list(spotted))
        self._by_words: dict[tuple[str, ...], Callee] = {}
        for callee in own.playbooks.values():
            if callee.words:
                self._by_words.setdefault(callee.words, callee)
        self._word_lengths = sorted({len(words) for words in self._by_words}, reverse=True)
        self._agent_pattern = _alternation([agent.name for agent in others.values()])
        self._agent_words = {agent.words for agent in others.values() if len(agent.words) >= 2}
        self._agent_word_lengths = sorted({len(words) for words in self._agent_words})

    def callee(self, name: str) -> Callee | None:
        """The playbook a call such as `Foo(...)` or `Agent.Foo(...)` names, if it is one of the program's."""
        agent, dot, playbook = name.rpartition(".")
        if not dot:
            return self.own.playbooks.get(name)
        other = self.others.get(agent) if agent != self.own.name else self.own
        return other.playbooks.get(playbook) if other is not None else None

    def named_playbook(self, text: str, step_words: tuple[str, ...], itself: str) -> Callee | None:
        """The playbook a sentence names (never `itself`): the first name written in it as a word
        (`Agent.Name` included), else the longest title whose words start the sentence (two words
        or more, or the whole sentence)."""
        if self._name_pattern is not None:
            for match in self._name_pattern.finditer(text):
                callee = self._by_name[match.group()]
                if match.group() != itself:
                    return callee
        for size in self._word_lengths:
            if size > len(step_words) or (size < 2 and len(step_words) != size):
                continue
            callee = self._by_words.get(step_words[:size])
            if callee is not None and callee.name != itself:
                return callee
        return None

    def names_other_agent(self, text: str, step_words: tuple[str, ...]) -> bool:
        """Whether the sentence names another agent: by its name, or by its title's words (two or more)."""
        if self._agent_pattern is not None and self._agent_pattern.search(text):
            return True
        for size in self._agent_word_lengths:
            for start in range(len(step_words) - size + 1):
                if step_words[start : start + size] in self._agent_words:
                    return True
        return False

"""Reading the intent of one markdown line: trigger kinds, conditions, returns, jumps, verbs.

Every function here is a pure function of the text, so compiling is deterministic. The rules are
listed in the docstring of `pal_core.compiler`; the word lists below are the whole of them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from pal_core.step_text import split_top_level

# --- conditions ----------------------------------------------------------------------------------

_CONDITION_RE = re.compile(
    r"(?P<keyword>else\s+if|otherwise,?\s+if|elif|if|while|until|for\s+(?=each\b|every\b|all\b|\$)|when"
    r"|otherwise|else)\b",
    re.IGNORECASE,
)
_THEN_RE = re.compile(r"\s+then\s+", re.IGNORECASE)


@dataclass(frozen=True, slots=True, kw_only=True)
class ConditionParts:
    """A condition line split into the condition and the action written on the same line."""

    condition: str
    """`If $x > 1`, `Otherwise`, `While the game is on`: the text of the CND step."""
    action: str | None
    """`tell the user` from `If $x > 1, tell the user`; None when the line is only a condition."""
    action_offset: int
    """0-based index of the action in the line, for its column."""


def split_condition(text: str) -> ConditionParts | None:
    """Split a condition line; None when the line is not a condition."""
    match = _CONDITION_RE.match(text)
    if match is None:
        return None
    keyword = " ".join(match.group("keyword").lower().replace(",", " ").split())
    end = match.end("keyword")
    if keyword in ("otherwise", "else"):
        rest = text[end:]
        action = rest.lstrip(" \t,:;-—")
        if not action:
            return ConditionParts(condition=text[:end], action=None, action_offset=0)
        return ConditionParts(condition=text[:end], action=action, action_offset=len(text) - len(action))
    split_at: tuple[int, int] | None = None  # (end of condition, start of action)
    then = _THEN_RE.search(text, end)
    if then is not None:
        split_at = (then.start(), then.end())
    pieces = split_top_level(text[end:], ",")
    if len(pieces) > 1:
        comma = end + len(pieces[0])
        if split_at is None or comma < split_at[0]:
            split_at = (comma, comma + 1)
    colon = _top_level_colon(text, end)
    if colon is not None and (split_at is None or colon < split_at[0]):
        split_at = (colon, colon + 1)
    if split_at is None:
        return ConditionParts(condition=text.rstrip(" :"), action=None, action_offset=0)
    condition = text[: split_at[0]].rstrip(" :,")
    rest = text[split_at[1] :]
    action = rest.strip()
    if not action:
        return ConditionParts(condition=condition, action=None, action_offset=0)
    return ConditionParts(condition=condition, action=action, action_offset=len(text) - len(rest.lstrip()))


def _top_level_colon(text: str, start: int) -> int | None:
    """A `: ` that separates a condition from its action (`If valid: say so`): outside brackets and
    double quotes, and followed by a space (so not the one in `$x:int`). Single quotes are not
    tracked: apostrophes in prose (`the user's order`) would unbalance them."""
    depth = 0
    in_string = False
    for index in range(start, len(text) - 1):
        char = text[index]
        if char == '"':
            in_string = not in_string
        elif in_string:
            continue
        elif char in "([{":
            depth += 1
        elif char in ")]}":
            depth = max(depth - 1, 0)
        elif char == ":" and depth == 0 and text[index + 1] in " \t":
            return index
    return None


def is_condition(text: str) -> bool:
    """Whether the line starts with a condition keyword."""
    return _CONDITION_RE.match(text) is not None


# --- whole-line forms ----------------------------------------------------------------------------

_RETURN_RE = re.compile(r"return\b(?![ \t]+to\b)[ \t]*:?[ \t]*(?P<value>.*)\Z", re.IGNORECASE | re.DOTALL)
_EXIT_RE = re.compile(
    r"(?:(?:end|exit|quit|terminate|stop|close)(?:\s+the)?\s+"
    r"(?:program|conversation|session|chat|app|application)"
    r"|exit|quit|end)[.!]?\Z",
    re.IGNORECASE,
)
_WAIT_FOR_USER_RE = re.compile(r"wait\s+for\s+(?:the\s+)?(?:user|human)\b", re.IGNORECASE)
_SET_RE = re.compile(
    r"(?:set|let)\s+(?P<target>\$[A-Za-z_][A-Za-z0-9_]*(?::[A-Za-z_][A-Za-z0-9_]*(?:\[[^\]]*\])?)?)"
    r"\s+(?:to|be|=)\s+(?P<value>.+?)\.?\Z",
    re.IGNORECASE | re.DOTALL,
)


def return_value(text: str) -> str | None:
    """`Return $x` -> `$x`, `Return` -> ``; None when the line is not a return."""
    match = _RETURN_RE.match(text.strip())
    if match is None:
        return None
    return match.group("value").strip()


def is_exit(text: str) -> bool:
    """`End program`, `Exit the conversation`, `Exit`, ..."""
    return _EXIT_RE.match(text.strip()) is not None


_TRAILING_EXIT_RE = re.compile(
    r"(?P<action>.+?)(?:\s*,\s*|\s+)(?:and\s+then|and|then)\s+(?P<exit>(?:end|exit|quit|terminate|stop|close)"
    r"(?:\s+the)?\s+(?:program|conversation|session|chat|app|application))[.!]?\Z",
    re.IGNORECASE | re.DOTALL,
)


def trailing_exit(text: str) -> str | None:
    """`Apologize and end the conversation` -> `Apologize`; None without such a tail."""
    match = _TRAILING_EXIT_RE.fullmatch(text.strip())
    return match.group("action").rstrip(" ,") if match is not None else None


def is_wait_for_user(text: str) -> bool:
    """`Wait for the user to answer`, ..."""
    return _WAIT_FOR_USER_RE.match(text.strip()) is not None


def set_statement(text: str) -> tuple[str, str] | None:
    """`Set $x to 10` -> ($x, 10); None for other lines."""
    match = _SET_RE.match(text.strip())
    if match is None:
        return None
    return match.group("target"), match.group("value").strip()


# --- jumps ---------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class JumpPhrase:
    """Where a `go back` / `try again` phrase sends control."""

    kind: str
    """`enclosing` (the condition or loop around the step), `first`, `previous`, `path` or `text`."""
    path: tuple[int, ...] = ()
    """For `path`: the markdown step number, 1-based per level (`step 2.1` -> (2, 1))."""
    text: str = ""
    """For `text`: the start of the target step's text."""


_JUMP_TARGET_RE = r"(?P<target>.+?)"
_WHOLE_JUMP_RES = (
    re.compile(r"(?:go|jump|loop|skip)\s+back(?:\s+to\s+" + _JUMP_TARGET_RE + r")?", re.IGNORECASE),
    re.compile(
        r"(?:return|go|jump|skip)\s+to\s+"
        r"(?P<target>step\s+.+?|the\s+(?:beginning|start|top)|the\s+first\s+step)",
        re.IGNORECASE,
    ),
    re.compile(
        r"(?:try|start|begin|check)\s+again|retry|start\s+over|restart|repeat|loop|"
        r"repeat\s+(?:the\s+)?(?:loop|steps?)|continue\s+(?:with\s+)?the\s+loop",
        re.IGNORECASE,
    ),
)
_TRAILING_JUMP_RE = re.compile(
    r"(?P<action>.+?)(?:\s*,\s*|\s+)(?:and\s+then|and|then)\s+"
    r"(?P<jump>(?:go|jump|loop)\s+back\b.*|start\s+over.*"
    r"|(?:return|go|jump)\s+to\s+step\s+.*)\Z",
    re.IGNORECASE | re.DOTALL,
)
_TRY_AGAIN_RE = re.compile(r"\b(?:try\s+again|retry)\b", re.IGNORECASE)
_STEP_PATH_RE = re.compile(r"(?:step|line)\s+#?(?P<path>\d+(?:\.\d+)*)\Z", re.IGNORECASE)


def whole_jump(text: str) -> JumpPhrase | None:
    """A line that is only a jump (`Go back to step 2`, `Try again`, `Start over`); None otherwise."""
    cleaned = text.strip().rstrip(".!")
    for pattern in _WHOLE_JUMP_RES:
        match = pattern.fullmatch(cleaned)
        if match is not None:
            target = match.groupdict().get("target")
            lowered = cleaned.lower()
            if target is None:
                if lowered.startswith(("start", "restart", "begin")):
                    return JumpPhrase(kind="first")
                return JumpPhrase(kind="enclosing")
            return jump_target(target)
    return None


def jump_target(target: str) -> JumpPhrase:
    """What `to ...` names: a step number, the beginning, the previous step, or a step by its text."""
    cleaned = target.strip().strip("\"'`“”").rstrip(".!")
    lowered = cleaned.lower()
    path = _STEP_PATH_RE.fullmatch(cleaned)
    if path is not None:
        return JumpPhrase(kind="path", path=tuple(int(part) for part in path.group("path").split(".")))
    if lowered in ("the beginning", "beginning", "the start", "start", "the top", "top", "the first step"):
        return JumpPhrase(kind="first")
    if lowered in ("the previous step", "the last step", "the step before"):
        return JumpPhrase(kind="previous")
    if lowered in ("the loop", "the condition", "the check", "the question", "the top of the loop"):
        return JumpPhrase(kind="enclosing")
    for prefix in ("the step ", "step "):
        if lowered.startswith(prefix):
            cleaned = cleaned[len(prefix) :].strip().strip("\"'`“”")
            break
    return JumpPhrase(kind="text", text=cleaned)


# A step named by its words: `Go back to thinking to find issues, up to 2 times` names the step that
# starts `Think if there is any missing information...`. The words are compared by their stems; the first
# word counts twice, since authors name a step by how it starts.
_REFERENCE_BOUND_RE = re.compile(
    r"[,;(]?\s*(?:up\s+to|at\s+most|no\s+more\s+than|max(?:imum)?(?:\s+of)?)\s+\w+\s+"
    r"(?:times?|attempts?|tries|rounds?|iterations?)\)?\s*\Z|\s+again\s*\Z",
    re.IGNORECASE,
)
_REFERENCE_STOP_WORDS = frozenset(
    [
        "a",
        "an",
        "the",
        "to",
        "of",
        "for",
        "in",
        "on",
        "at",
        "by",
        "with",
        "and",
        "or",
        "if",
        "is",
        "are",
        "was",
        "were",
        "be",
        "any",
        "all",
        "this",
        "that",
        "these",
        "those",
        "it",
        "its",
        "there",
        "their",
        "them",
        "they",
        "we",
        "our",
        "you",
        "your",
        "up",
        "from",
        "into",
        "then",
        "so",
        "as",
        "about",
        "again",
        "step",
        "steps",
    ]
)
REFERENCE_THRESHOLD = 2
"""The least score of a step named by its words: its first word, or two of its words."""


def _stem(word: str) -> str:
    for suffix in ("ing", "ed", "es", "s"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            word = word[: -len(suffix)]
            break
    # `thinking` -> `think`, `planned` -> `plann` -> `plan`: a doubled last consonant is one.
    if len(word) > 3 and word[-1] == word[-2] and word[-1] not in "aeiouls":
        word = word[:-1]
    return word


def _reference_stems(text: str) -> list[str]:
    return [
        _stem(word)
        for word in re.findall(r"[a-z][a-z0-9_]*", text.lower())
        if word not in _REFERENCE_STOP_WORDS
    ]


def reference_bound(wanted: str) -> str:
    """`up to 2 times` from `thinking to find issues, up to 2 times`: a limit the jump's text keeps."""
    match = _REFERENCE_BOUND_RE.search(wanted.strip().rstrip(".!"))
    if match is None or "again" in match.group(0).lower():
        return ""
    return match.group(0).strip(" ,;()")


def reference_score(wanted: str, step_text: str) -> int:
    """How well `wanted` (the words after `go back to`) names a step: each of its words found among the
    step's counts one, and its first word starting the step counts two more."""
    words = _reference_stems(_REFERENCE_BOUND_RE.sub("", wanted.strip().rstrip(".!")))
    step = _reference_stems(step_text)
    if not words or not step:
        return 0
    known = set(step)
    score = sum(1 for word in set(words) if word in known)
    if words[0] == step[0]:
        score += 2
    return score


def trailing_jump(text: str) -> tuple[str, JumpPhrase] | None:
    """`Apologize and go back to step 1` -> (`Apologize`, path (1,)); None without such a tail."""
    match = _TRAILING_JUMP_RE.fullmatch(text.strip())
    if match is None:
        return None
    jump = whole_jump(match.group("jump"))
    if jump is None:
        return None
    return match.group("action").rstrip(" ,"), jump


def mentions_try_again(text: str) -> bool:
    """`Ask them to try again`: the step sends the user round again."""
    return _TRY_AGAIN_RE.search(text) is not None


# --- verbs ---------------------------------------------------------------------------------------

# Words before the verb that do not change what the step does.
_FILLERS = frozenset(
    {"then", "also", "finally", "first", "next", "please", "now", "and", "afterwards", "immediately", "again"}
)
# Verbs ending in -ly, so not skipped as adverbs.
_LY_VERBS = frozenset(
    {"apply", "reply", "supply", "multiply", "rely", "comply", "imply", "fly", "ally", "tally", "rally"}
)
COMMUNICATION_VERBS = frozenset(
    {"say", "tell", "ask", "greet", "inform", "welcome", "thank", "apologize", "apologise", "explain"}
    | {
        "announce",
        "reply",
        "respond",
        "answer",
        "notify",
        "remind",
        "introduce",
        "congratulate",
        "acknowledge",
    }
    | {"present", "show", "display", "share", "nudge", "prompt", "engage", "invite", "encourage", "warn"}
    | {"alert", "reveal", "let", "propose", "suggest", "recommend", "describe", "offer", "give"}
)
_ASK_WORDS = frozenset({"ask", "asks", "asking", "prompt", "prompts", "nudge", "nudges"})
THINK_VERBS = frozenset({"think", "reflect", "reason", "ponder", "deliberate", "consider", "brainstorm"})
CALL_VERBS = frozenset(
    {"lookup", "fetch", "get", "retrieve", "load", "search", "query", "call", "invoke", "run", "send"}
    | {"submit", "download", "upload", "publish"}
)


def leading_verb(text: str) -> str:
    """The first word that is not a filler or an adverb, lower-cased; `look up` reads as `lookup`."""
    words = re.findall(r"[a-z][a-z'-]*", text.lower())
    for index, word in enumerate(words):
        if word in _FILLERS or (word.endswith("ly") and len(word) > 4 and word not in _LY_VERBS):
            continue
        if word == "look" and index + 1 < len(words) and words[index + 1] == "up":
            return "lookup"
        if (
            word == "let"
            and index + 1 < len(words)
            and words[index + 1] not in ("the", "user", "them", "him", "her")
        ):
            # `Let $x be ...` is an assignment, handled elsewhere; `let the user know` is communication.
            return "let-assign"
        return word
    return ""


def is_question(text: str) -> bool:
    """Whether the step is itself a question to put to someone: `What can I help you with?`."""
    return text.rstrip().rstrip("\"'”)").endswith("?")


def asks_for_reply(text: str) -> bool:
    """Whether a communication step expects an answer: it asks, ends with a question, or says try again."""
    words = set(re.findall(r"[a-z]+", text.lower()))
    return bool(words & _ASK_WORDS) or is_question(text) or mentions_try_again(text)

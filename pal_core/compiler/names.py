"""Names: CamelCase agent and playbook names, playbook headers, title words, generated descriptions."""

from __future__ import annotations

import re
from dataclasses import dataclass

from pal_core.codes import BAD_HEADER
from pal_core.errors import SourceReporter
from pal_core.ir import Parameter
from pal_core.step_text import TYPED_VARIABLE_RE, split_top_level

"""A `$name` or `$name:type` in markdown text."""

_HEADER_RE = re.compile(
    r"(?P<title>[^()]*?)[ \t]*(?:\((?P<params>[^()]*(?:\([^()]*\)[^()]*)*)\))?[ \t]*"
    r"(?:(?P<arrow>->)[ \t]*(?P<returns>.*?))?[ \t]*\Z"
)
_PARAM_RE = re.compile(
    r"[ \t]*\$?(?P<name>[A-Za-z_][A-Za-z0-9_]*)[ \t]*"
    r"(?::[ \t]*(?P<type>[^=]+?))?[ \t]*(?:=[ \t]*(?P<default>.+?))?[ \t]*\Z",
    re.DOTALL,
)
_WORD_RE = re.compile(r"\w+")
_LEADING_NON_WORD_RE = re.compile(r"^[^\w$]+")
_APOSTROPHES_RE = re.compile(r"['’`]")
_CAMEL_PARTS_RE = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|\d+|[^\W\d_A-Za-z]+")
# Words that end a natural-language title without naming anything: `Get fact about $country`.
_TRAILING_CONNECTORS = frozenset(
    {
        "a",
        "an",
        "the",
        "for",
        "of",
        "in",
        "with",
        "from",
        "to",
        "by",
        "on",
        "at",
        "and",
        "or",
        "about",
        "given",
    }
    | {"using", "into", "as"}
)


class UnnamableTitle(ValueError):
    """A title from which no usable name can be made; the message says why."""


def camel_case(title: str) -> str:
    """`Customer Support` -> `CustomerSupport`; a title that is already an identifier is kept as written.

    Raises UnnamableTitle when the title has no letters or digits, or the name would start with a digit.
    """
    text = title.strip()
    if text.isidentifier():
        return text
    words = _WORD_RE.findall(_APOSTROPHES_RE.sub("", text))
    name = "".join(word[0].upper() + word[1:] for word in words)
    if not name:
        raise UnnamableTitle(f"{title.strip()!r} has no letters to make a name from")
    if not name.isidentifier():
        raise UnnamableTitle(f"the name {name!r} made from {title.strip()!r} must start with a letter")
    return name


def words_of(text: str) -> tuple[str, ...]:
    """Lower-case words of natural text, `$variables` left out: `Get fact for $x` -> (get, fact, for)."""
    return tuple(
        word.lower() for word in _WORD_RE.findall(_APOSTROPHES_RE.sub("", TYPED_VARIABLE_RE.sub(" ", text)))
    )


def identifier_words(name: str) -> tuple[str, ...]:
    """`GetCountryFact` -> (get, country, fact); `process_countries` -> (process, countries)."""
    return tuple(part.lower() for chunk in name.split("_") for part in _CAMEL_PARTS_RE.findall(chunk))


def counts_as_one_word(name: str) -> bool:
    """Whether a name is a single word (`Main`, `X`): too common to be spotted inside a sentence."""
    return len(identifier_words(name)) <= 1


@dataclass(frozen=True, slots=True, kw_only=True)
class PlaybookHeader:
    """What a `## ...` markdown header says."""

    name: str
    """The CamelCase playbook name."""
    parameters: tuple[Parameter, ...]
    """Parameters from `(...)` first, then `$variables` written in the title, without repeats."""
    returns: str | None
    """The return type written after `->`, or None when the header has no arrow."""
    title: str
    """The title as written, `$variables` included, for a generated description."""
    words: tuple[str, ...]
    """The lower-case words of the name, for spotting the playbook named in a step."""


def read_playbook_header(
    text: str, line: int, column: int, reporter: SourceReporter
) -> PlaybookHeader | None:
    """Read `Name`, `Name($a, $b) -> type` or `Words with $vars`; report and return None when unusable."""
    match = _HEADER_RE.match(text)
    if match is None:
        reporter.error(
            BAD_HEADER,
            "playbook header must look like '## Name', '## Name($a, $b) -> type' "
            "or '## Do something with $a'",
            line,
            column,
        )
        return None
    title = match.group("title").strip()
    returns = match.group("returns").strip() if match.group("arrow") else None
    if returns == "":
        reporter.error(
            BAD_HEADER,
            "'->' must be followed by a return type (or None)",
            line,
            column + match.start("arrow"),
            2,
        )
        return None
    parameters: list[Parameter] = []
    if match.group("params") is not None:
        parsed = _read_parameters(match.group("params"), line, column + match.start("params"), reporter)
        if parsed is None:
            return None
        parameters.extend(parsed)
    for variable in TYPED_VARIABLE_RE.finditer(title):
        if all(parameter.name != variable.group(1) for parameter in parameters):
            parameters.append(Parameter(name=variable.group(1), type=variable.group(2)))
    bare = " ".join(TYPED_VARIABLE_RE.sub(" ", title).split())
    words = list(_WORD_RE.findall(_APOSTROPHES_RE.sub("", bare)))
    while words and words[-1].lower() in _TRAILING_CONNECTORS and len(words) > 1:
        words.pop()
    if not words:
        reporter.error(
            BAD_HEADER, "playbook header has no name; write '## PlaybookName' or '## Do something'", line, 1
        )
        return None
    try:
        name = camel_case(" ".join(words)) if " " in bare or not bare.isidentifier() else bare
    except UnnamableTitle as error:
        reporter.error(BAD_HEADER, f"cannot name the playbook: {error}", line, column, len(title))
        return None
    return PlaybookHeader(
        name=name,
        parameters=tuple(parameters),
        returns=returns,
        title=title,
        words=identifier_words(name) if bare.isidentifier() else tuple(word.lower() for word in words),
    )


def _read_parameters(text: str, line: int, column: int, reporter: SourceReporter) -> list[Parameter] | None:
    if not text.strip():
        return []
    parameters: list[Parameter] = []
    offset = 0
    failed = False
    for piece in split_top_level(text, ","):
        match = _PARAM_RE.match(piece)
        if match is None:
            reporter.error(
                BAD_HEADER,
                f"parameter {piece.strip()!r} must look like '$name', '$name:type' or '$name:type=default'",
                line,
                column + offset + (len(piece) - len(piece.lstrip())),
                len(piece.strip()),
            )
            failed = True
        else:
            parameters.append(
                Parameter(
                    name=match.group("name"),
                    type=match.group("type").strip() if match.group("type") else None,
                    default=match.group("default"),
                )
            )
        offset += len(piece) + 1
    return None if failed else parameters


def playbook_description(header: PlaybookHeader) -> str:
    """A description for a playbook that has none: its title as a sentence when the title was written
    in words (`Greet the user.`); empty for a title that is already an identifier, which would only
    repeat the name."""
    if " " not in header.title.strip():
        return ""
    return _sentence(TYPED_VARIABLE_RE.sub(lambda match: f"${match.group(1)}", header.title))


def agent_description(title: str, playbook_names: list[str]) -> str:
    """A description for an agent that has none: its title and the playbooks it offers."""
    subject = title.strip()
    if not subject.lower().endswith("agent"):
        subject += " agent"
    if not playbook_names:
        return _sentence(subject)
    if len(playbook_names) == 1:
        return _sentence(f"{subject} with the playbook {playbook_names[0]}")
    listed = ", ".join(playbook_names[:-1]) + f" and {playbook_names[-1]}"
    return _sentence(f"{subject} with the playbooks {listed}")


def _sentence(text: str) -> str:
    # From the first word on: a title such as `# Intro` must not yield a line that reads as a header.
    text = _LEADING_NON_WORD_RE.sub("", " ".join(text.split()))
    if not text:
        return ""
    text = text[0].upper() + text[1:]
    return text if text.endswith((".", "!", "?")) else text + "."

"""The LLM output contract of seeds 003/004: what a model's answer says, and how to read it.

`parse_answer(text)` turns a model answer into an `Answer` (pal_core.contract.model) or raises
`ContractSyntaxError`; the verifier (pal_core.contract.verify) decides whether the answer may run.
"""

from pal_core.contract.errors import ContractSyntaxError
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
from pal_core.contract.parse import AnswerAction, StrayCallAction, parse_answer

__all__ = [
    "Action",
    "Answer",
    "AnswerAction",
    "ArtifactAction",
    "ContractSyntaxError",
    "ReturnAction",
    "StepAction",
    "StepRef",
    "StrayCallAction",
    "TriggerAction",
    "VarAction",
    "WhatAction",
    "YieldAction",
    "parse_answer",
]

"""The builtin playbooks, as the validator sees them: a view of the one table in pal_core.builtins."""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

from pal_core.builtins import BUILTINS, PYTHON_BUILTIN_FUNCTIONS, is_builtin

BUILTIN_PLAYBOOKS: Mapping[str, str] = MappingProxyType(
    {name: f"{builtin.signature}: {builtin.summary}" for name, builtin in BUILTINS.items()}
)
"""Builtin playbook name -> what it does (signature first)."""

__all__ = ["BUILTIN_PLAYBOOKS", "PYTHON_BUILTIN_FUNCTIONS", "is_builtin"]

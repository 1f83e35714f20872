"""Moved: the import-path, naming and type helpers every importer uses are in `importers.common`
(`paths`, `naming`, `pal_types`). `resolve` stays importable here for the tests that check a bound path
imports as the original object."""

from __future__ import annotations

from importers.common.paths import resolve

__all__ = ["resolve"]

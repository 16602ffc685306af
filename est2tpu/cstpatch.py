"""A patch of LibCST's matcher visitors, applied on import (the engine imports it).

LibCST's matcher visitors (AddImportsVisitor, RemoveImportsVisitor and the visitors they
run) search themselves for matcher-decorated methods at every construction. This module
makes that search once per class for the classes that have none; it changes no result.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from libcst.matchers import _visitors as _matcher_visitors


def _gathered_once_per_class(gather: Callable[[object], dict[Any, Any]]) -> None:
    """LibCST's matcher visitors (AddImportsVisitor, RemoveImportsVisitor and the visitors
    they run) search themselves for matcher-decorated methods at every construction, through
    `dir()` and `getattr` of each of their 1,650 attributes: tens of milliseconds per visitor,
    built once or twice per rule that adds or removes an import, per pass (a quarter of the
    CPU of migrating the fixtures). None of those classes has a decorated method, and a
    class's methods do not change: a class found to have none is not searched again. A class
    that has some is searched as before, at every construction (the methods found are bound
    to the instance)."""
    without: set[type] = set()

    def gather_once(obj: object) -> dict[Any, Any]:
        cls = type(obj)
        if cls in without:
            return {}
        found = gather(obj)
        if not found:
            without.add(cls)
        return found

    setattr(_matcher_visitors, gather.__name__, gather_once)


for _gather in (
    _matcher_visitors._gather_constructed_visit_funcs,
    _matcher_visitors._gather_constructed_leave_funcs,
    _matcher_visitors._gather_matchers,
):
    _gathered_once_per_class(_gather)

"""LibCST's codemod classes the engine and the rules use (`CodemodContext`,
`AddImportsVisitor`, `RemoveImportsVisitor`), imported on first use, and a patch of LibCST's
matcher visitors, applied when they are.

Importing `libcst.codemod` imports `libcst.matchers`, 17,000 lines of generated matcher
classes: about 0.6 s of CPU, more than the rest of LibCST. A run that parses nothing with
LibCST (a tree where no rule changes anything and the report-only rules read Python's own
tree) never needs them, and neither does a run whose rules schedule no import: a rule's pass
holds a `RuleContext`, not a CodemodContext. The names here stand for LibCST's classes: the
first call of one, or the first attribute asked of it, imports LibCST's codemods, patches
them (`_patch`) and hands the call over; `load()` does that ahead of time (before forking
workers that will need it).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, cast

_patched = False


class RuleContext:
    """What a rule's pass holds of LibCST's `CodemodContext`: the file's name, and the
    `scratch` in which `schedule_import` and `schedule_removal` note the imports to add and
    remove (all that `AddImportsVisitor.add_needed_import` and
    `RemoveImportsVisitor.remove_unused_import` read of a context). Building a
    CodemodContext imports LibCST's codemods; a pass whose rule schedules nothing never
    does. `codemod_context()` is the CodemodContext the import visitors then run with."""

    __slots__ = ("filename", "scratch")

    def __init__(self, filename: str) -> None:
        self.filename = filename
        self.scratch: dict[str, Any] = {}

    def codemod_context(self) -> CodemodContext:
        return CodemodContext(filename=self.filename, scratch=self.scratch)


def schedule_import(
    context: RuleContext, module: str, obj: str | None = None, asname: str | None = None
) -> None:
    """`AddImportsVisitor.add_needed_import` into a rule's context."""
    AddImportsVisitor.add_needed_import(cast("CodemodContext", context), module, obj, asname)


def schedule_removal(
    context: RuleContext, module: str, obj: str | None = None, asname: str | None = None
) -> None:
    """`RemoveImportsVisitor.remove_unused_import` into a rule's context."""
    RemoveImportsVisitor.remove_unused_import(cast("CodemodContext", context), module, obj, asname)


def load() -> None:
    """Import LibCST's codemods (the modules the stand-ins below name) and patch its
    matcher visitors, once. The imports run with the cyclic collector paused: a run that
    has parsed a big module holds hundreds of thousands of nodes, which every collection
    the imports start would walk again."""
    if _patched:
        return
    from est2tpu.cstutil import gc_paused

    with gc_paused(freeze=True):
        _load_patched()


def _load_patched() -> None:
    global _patched
    import libcst.codemod.visitors  # noqa: F401 - what the stand-ins hand over to
    from libcst.matchers import _visitors as matcher_visitors

    for gather in (
        matcher_visitors._gather_constructed_visit_funcs,
        matcher_visitors._gather_constructed_leave_funcs,
        matcher_visitors._gather_matchers,
    ):
        _patch(matcher_visitors, gather)
    _patched = True


def _patch(matcher_visitors: Any, gather: Callable[[object], dict[Any, Any]]) -> None:
    """LibCST's matcher visitors (AddImportsVisitor, RemoveImportsVisitor and the visitors
    they run) search themselves for matcher-decorated methods at every construction, through
    `dir()` and `getattr` of each of their 1,650 attributes: tens of milliseconds per visitor,
    built once or twice per rule that adds or removes an import, per pass (a quarter of the
    CPU of migrating the fixtures). None of those classes has a decorated method, and a
    class's methods do not change: a class found to have none is not searched again. A class
    that has some is searched as before, at every construction (the methods found are bound
    to the instance). It changes no result."""
    without: set[type] = set()

    def gather_once(obj: object) -> dict[Any, Any]:
        cls = type(obj)
        if cls in without:
            return {}
        found = gather(obj)
        if not found:
            without.add(cls)
        return found

    setattr(matcher_visitors, gather.__name__, gather_once)


class _Deferred:
    """A LibCST class imported when it is first called or asked for an attribute."""

    __slots__ = ("_cls", "_module", "_name")

    def __init__(self, module: str, name: str) -> None:
        self._module = module
        self._name = name
        self._cls: type | None = None

    def _load(self) -> type:
        if self._cls is None:
            load()  # imports the module
            self._cls = getattr(importlib.import_module(self._module), self._name)
        return self._cls

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self._load()(*args, **kwargs)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._load(), name)

    def __instancecheck__(self, obj: object) -> bool:
        return isinstance(obj, self._load())

    def __repr__(self) -> str:
        return f"<deferred {self._module}.{self._name}>"


if TYPE_CHECKING:
    from libcst.codemod import CodemodContext
    from libcst.codemod.visitors import AddImportsVisitor, RemoveImportsVisitor
else:
    CodemodContext = _Deferred("libcst.codemod", "CodemodContext")
    AddImportsVisitor = _Deferred("libcst.codemod.visitors", "AddImportsVisitor")
    RemoveImportsVisitor = _Deferred("libcst.codemod.visitors", "RemoveImportsVisitor")

__all__ = [
    "AddImportsVisitor",
    "CodemodContext",
    "RemoveImportsVisitor",
    "RuleContext",
    "load",
    "schedule_import",
    "schedule_removal",
]

"""Finds the rules: every module in `est2tpu/rules/` not named `_*` defines one `Rule`
subclass."""

from __future__ import annotations

import functools
import importlib
import pkgutil

from est2tpu import rules as rules_pkg
from est2tpu.cstutil import gc_paused
from est2tpu.rule import Rule


@functools.cache
def rule_classes() -> tuple[type[Rule], ...]:
    """All rules, in ID order (the fixed order they run in). Imported with the cyclic
    collector paused and what they built frozen (`cstutil.gc_paused`): asked after a big
    module is parsed, every collection the imports started walked its tree again."""
    found: list[type[Rule]] = []
    with gc_paused(freeze=True):
        modules = [
            importlib.import_module(f"{rules_pkg.__name__}.{info.name}")
            for info in pkgutil.iter_modules(rules_pkg.__path__)
            if not info.name.startswith("_")  # what several rules share, not a rule
        ]
    for module in modules:
        for value in vars(module).values():
            if (
                isinstance(value, type)
                and issubclass(value, Rule)
                and value is not Rule
                and value.__module__ == module.__name__
            ):
                found.append(value)
    return tuple(sorted(found, key=lambda cls: cls.ID))

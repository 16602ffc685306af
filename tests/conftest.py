"""Suite-wide: `xdist_group` marks hold under `--dist loadgroup` (`make check`, `make test`),
and the long tests start first.

pytest-xdist groups a test by appending `@<group>` to its node ID in each worker; from pytest
9.2 the node ID is derived from a structured ID and xdist's write no longer takes, so every
group was silently spread over the workers (pytest-dev/pytest-xdist#1386): test_parallel ran
its reference pipeline once per worker, the e2e projects trained their originals twice.
Until xdist writes the structured ID itself, this does, and fails the run when it cannot.

A module-scoped fixture (a TensorFlow probe, a reference run) is set up once per worker
*and again* each time a worker comes back to its module after another module's test: under
`--dist loadgroup`, single tests of one module are spread over both workers and interleaved
with other modules. So a module's tests that share such a fixture, and belong to no group,
are given one (`<module path>-module-fixtures`): one worker, one setup, run back to back.

The suite's wall time is its slower worker's. xdist hands out the groups (biggest first), then
single tests in collection order, where TensorFlow trainings of up to a minute come last
(tests/tf2): one worker would still be training while the other has nothing left. The `tf`
and `slow` tests are collected first, so that both workers end on short tests.
"""

from __future__ import annotations

import pytest


def _group(item: pytest.Item) -> str | None:
    names = {
        str(mark.args[0] if mark.args else mark.kwargs.get("name", "default"))
        for mark in item.iter_markers("xdist_group")
    }
    return "_".join(sorted(names)) or None


def _shares_a_module_fixture(item: pytest.Item) -> bool:
    info = getattr(item, "_fixtureinfo", None)
    if info is None:
        return False
    return any(
        definitions and definitions[-1].scope == "module"
        for definitions in info.name2fixturedefs.values()
    )


def _long(item: pytest.Item) -> bool:
    return item.get_closest_marker("tf") is not None or item.get_closest_marker("slow") is not None


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    # After every other hook here (tests/e2e/conftest.py adds marks), as xdist's own
    # suffixing runs. The sort is stable: each part keeps its collection order.
    items.sort(key=lambda item: not _long(item))
    for item in items:
        if _group(item) is None and _shares_a_module_fixture(item):
            module = item.nodeid.split("::")[0]
            item.add_marker(pytest.mark.xdist_group(f"{module}-module-fixtures"))
    # Set by xdist in its workers under `--dist loadgroup`.
    if not getattr(config.option, "loadgroup", False):
        return
    for item in items:
        group = _group(item)
        if group is None or item.nodeid.endswith(f"@{group}"):
            continue
        grouped = f"{item.nodeid}@{group}"
        structured = getattr(item, "_id", None)
        if structured is not None and hasattr(type(structured), "parse"):
            item._id = type(structured).parse(grouped)
        else:
            item._nodeid = grouped
        if item.nodeid != grouped:
            raise pytest.UsageError(
                f"cannot put {item.nodeid} in xdist group {group!r} with this pytest: "
                "run without --dist loadgroup"
            )

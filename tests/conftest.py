"""Suite-wide: `xdist_group` marks hold under `--dist loadgroup` (`make check`, `make test`).

pytest-xdist groups a test by appending `@<group>` to its node ID in each worker; from pytest
9.2 the node ID is derived from a structured ID and xdist's write no longer takes, so every
group was silently spread over the workers (pytest-dev/pytest-xdist#1386): test_parallel ran
its reference pipeline once per worker, the e2e projects trained their originals twice.
Until xdist writes the structured ID itself, this does, and fails the run when it cannot.
"""

from __future__ import annotations

import pytest


def _group(item: pytest.Item) -> str | None:
    names = {
        str(mark.args[0] if mark.args else mark.kwargs.get("name", "default"))
        for mark in item.iter_markers("xdist_group")
    }
    return "_".join(sorted(names)) or None


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    # Set by xdist in its workers under `--dist loadgroup`; after every other hook here
    # (tests/e2e/conftest.py adds marks), as xdist's own suffixing runs.
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

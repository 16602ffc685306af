"""Every fixture under every rule of each target at once, as a user runs them (issue 17.1).

tests/test_fixtures.py runs each fixture with its own rule only; here the rules meet each
other: nothing fails, the output compiles and is a fixpoint, every finding points into the
original text, and the findings of each target are snapshotted (a change in how the rules
interact shows up in review). tests/test_stale_findings.py shows that a refusal a later
rewrite made false is not reported.
"""

from __future__ import annotations

import functools
from pathlib import Path

import pytest

from est2tpu.api import migrate_source
from est2tpu.catalogue import data_dir
from est2tpu.ftypes import FileResult, Status, Target

FIXTURES = data_dir("fixtures")
SNAPSHOTS = Path(__file__).parent / "snapshots" / "all_rules"
CASES = sorted(p for p in FIXTURES.glob("*/*.before.py") if p.parent.name != "projects")


def _name(before: Path) -> str:
    return f"{before.parent.name}/{before.name[: -len('.before.py')]}"


@functools.cache
def _run(before: Path, target: Target) -> tuple[FileResult, FileResult]:
    """The fixture migrated with every rule of `target`, and its output migrated again."""
    path = before.name.replace(".before", "")
    result = migrate_source(before.read_text(encoding="utf-8"), path=path, target=target)
    again = migrate_source(result.new_text or "", path=path, target=target)
    return result, again


@pytest.mark.parametrize("target", list(Target), ids=[t.value for t in Target])
@pytest.mark.parametrize("before", CASES, ids=[_name(p) for p in CASES])
def test_all_rules_over_fixture(before: Path, target: Target) -> None:
    result, again = _run(before, target)
    assert result.status is not Status.FAILED, result.error
    assert result.new_text is not None
    compile(result.new_text, _name(before), "exec", dont_inherit=True)
    assert again.status is not Status.FAILED, again.error
    assert again.new_text == result.new_text, "a second run must change nothing"
    lines = before.read_text(encoding="utf-8").count("\n") + 1
    for finding in result.findings:
        assert 1 <= finding.position.line <= lines, finding.render()


@pytest.mark.parametrize("target", list(Target), ids=[t.value for t in Target])
def test_all_rules_findings_snapshot(target: Target, snapshot) -> None:  # type: ignore[no-untyped-def]
    out = []
    for before in CASES:
        result, _ = _run(before, target)
        out.append(f"## {_name(before)}: {result.status.value}\n")
        out += [f.render().replace(f"{result.path}:", "", 1) + "\n" for f in result.findings]
    snapshot.snapshot_dir = SNAPSHOTS
    snapshot.assert_match("".join(out), f"{target.value}.findings.txt")

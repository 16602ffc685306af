"""Every fixture under every rule of each target at once, as a user runs them.

tests/test_fixtures.py runs each fixture with its own rule only; here the rules meet each
other: nothing fails, the output compiles and is a fixpoint, every finding points into the
original text, nothing a target cannot keep is left without a finding (the corpus runner's
detector, tests/test_left_rules.py), and the findings of each target are snapshotted (a
change in how the rules interact shows up in review). tests/test_stale_findings.py shows
that a refusal a later rewrite made false is not reported.

Each fixture is migrated once per target (and its output once more) per worker: the checks
share the runs. Each target is one xdist group (`make check` and `make test` run
`--dist loadgroup`), so a target's snapshot, collected last, reads the runs its fixtures'
tests made instead of making them again, and the two targets run in the two workers.
"""

from __future__ import annotations

import functools
from pathlib import Path

import pytest
from test_left_rules import corpus

from est2tpu.api import migrate_source
from est2tpu.catalogue import data_dir
from est2tpu.ftypes import FileResult, Status, Target

FIXTURES = data_dir("fixtures")
SNAPSHOTS = Path(__file__).parent / "snapshots" / "all_rules"
CASES = sorted(p for p in FIXTURES.glob("*/*.before.py") if p.parent.name != "projects")

# One xdist group per target (see the docstring).
TARGETS = [
    pytest.param(t, id=t.value, marks=pytest.mark.xdist_group(f"all_rules-{t.value}"))
    for t in Target
]


def _name(before: Path) -> str:
    return f"{before.parent.name}/{before.name[: -len('.before.py')]}"


def _path(before: Path) -> str:
    return before.name.replace(".before", "")


@functools.cache
def _run(before: Path, target: Target) -> FileResult:
    """The fixture migrated with every rule of `target`."""
    return migrate_source(before.read_text(encoding="utf-8"), path=_path(before), target=target)


# Slow: `make check` keeps the snapshots below, which migrate every fixture with every rule
# of both targets once (a failure or a changed finding shows there); the checks here add a
# second run of each output and the detector (14 s of CPU) and run in the full suite.
@pytest.mark.slow
@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("before", CASES, ids=[_name(p) for p in CASES])
def test_all_rules_over_fixture(before: Path, target: Target) -> None:
    result = _run(before, target)
    assert result.status is not Status.FAILED, result.error
    assert result.new_text is not None
    compile(result.new_text, _name(before), "exec", dont_inherit=True)
    # A fixture the rules left unchanged is its own second run (the same text, path and
    # target give the same result), already cached.
    unchanged = result.new_text == before.read_text(encoding="utf-8")
    again = (
        result if unchanged else migrate_source(result.new_text, path=_path(before), target=target)
    )
    assert again.status is not Status.FAILED, again.error
    assert again.new_text == result.new_text, "a second run must change nothing"
    lines = before.read_text(encoding="utf-8").count("\n") + 1
    for finding in result.findings:
        assert 1 <= finding.position.line <= lines, finding.render()
    # Nothing left without a finding: the findings of the run over the migrated text point
    # into the text the detector reads.
    covered = {f.position.line for f in again.findings}
    if unchanged and target is Target.TF2 and result.findings:
        text = before.read_text(encoding="utf-8")
        rest = migrate_source(text, path=_path(before), target=target, ignore=["TF2004"])
        if rest.new_text != text:
            return  # refused whole (an Estimator API left, TF2004): every construct stays
    _, left = corpus.analyse(result.new_text, Path(before.name), target.value)
    uncovered = [c for c in left if not c.covered(covered)]
    assert not uncovered, uncovered


@pytest.mark.parametrize("target", TARGETS)
def test_all_rules_findings_snapshot(target: Target, snapshot) -> None:  # type: ignore[no-untyped-def]
    out = []
    for before in CASES:
        result = _run(before, target)
        out.append(f"## {_name(before)}: {result.status.value}\n")
        out += [f.render().replace(f"{result.path}:", "", 1) + "\n" for f in result.findings]
    snapshot.snapshot_dir = SNAPSHOTS
    snapshot.assert_match("".join(out), f"{target.value}.findings.txt")

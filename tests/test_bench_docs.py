"""bench/bench.py --write-docs: a run replaces the tables and summary rows it measured and
keeps the others (a run of one section must not wipe the rows of the others)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]

_spec = importlib.util.spec_from_file_location("bench_script", REPO / "bench" / "bench.py")
assert _spec is not None and _spec.loader is not None
bench = importlib.util.module_from_spec(_spec)
sys.modules["bench_script"] = bench
_spec.loader.exec_module(bench)

OLD_STAMP = "Measured with `python bench/bench.py --skip-training --write-docs`, 2026-01-01."
HEAD = "\n".join(bench.SUMMARY_HEAD)
SAMPLE = f"""# Performance

Text before.

<!-- bench:summary -->
{OLD_STAMP}

{HEAD}
| TF 2.15 `tensorflow` + `tensorflow_estimator` (1,963 files), `check` cold | 1.8 | old-cold |
| same tree, `--target tf2` | 2.1 | old-tf2 |
| five copies of that tree without `.pyc` files, measured by hand | 12 | old-five |
| one module of 5,000 small helper functions | 2.2 | old-big |
| a row written by hand | 1 | by-hand |
<!-- /bench:summary -->

Text between.

<!-- bench:trees -->
{OLD_STAMP}

| what | seconds |
| old trees table | 1 |
<!-- /bench:trees -->

<!-- bench:big -->
{OLD_STAMP}

| module | lines |
| old big table | 1 |
<!-- /bench:big -->

Text after.
"""


def fake_measured() -> dict[str, tuple[float, float, int]]:
    """What a full run of the summary's sections leaves in bench.MEASURED."""
    t = (2.0, 60.0, 0)
    up = (80.0, 500.0, 0)
    return {
        "up_full": up,
        "cold": t,
        "cold_tf2": t,
        "warm": (0.2, 30.0, 0),
        "five": (4.0, 130.0, 0),
        "five_files": (9815.0, 0.0, 0),
        "five_cpu": (8.0, 2.0, 0),
        "big": t,
        "up_big": up,
        "big_helpers": (5000.0, 0.0, 0),
        "bigtf": t,
        "up_bigtf": up,
        "bigtf_helpers": (5000.0, 0.0, 0),
        "evaluate": t,
        "up_evaluate": up,
        "evaluate_calls": (8000.0, 0.0, 0),
    }


def block(text: str, key: str) -> str:
    start, end = f"<!-- bench:{key} -->", f"<!-- /bench:{key} -->"
    return text[text.index(start) : text.index(end)]


def test_every_summary_row_is_told_to_belong_to_the_section_that_writes_it() -> None:
    rows = bench.summary(fake_measured())
    assert set(rows) == set(bench.SUMMARY_ROWS)
    for section, lines in rows.items():
        assert lines
        for line in lines:
            assert bench.row_section(line) == section, line


def test_one_section_run_keeps_the_other_rows_tables_and_their_stamp() -> None:
    measured = {k: v for k, v in fake_measured().items() if "big" in k and "tf" not in k}
    rows = bench.summary(measured)
    assert set(rows) == {"big"}
    stamp = "Measured with `python bench/bench.py --only big --write-docs`, 2026-02-02."
    new = bench.updated(SAMPLE, {"big": ["| new big table |"]}, rows, stamp)
    summary = block(new, "summary")
    # the rows of the sections not run, and the row no section writes, stay as they were
    for kept in ("old-cold", "old-tf2", "old-five", "by-hand"):
        assert kept in summary
    assert "old-big" not in summary
    assert rows["big"][0] in summary
    # the old stamp still speaks for the rows it measured; the new one names its rows
    assert OLD_STAMP in summary
    assert "The rows of `big`: measured with `python bench/bench.py --only big" in summary
    # the table order holds: trees' rows, then big's, then the hand-written row
    assert summary.index("old-five") < summary.index(rows["big"][0]) < summary.index("by-hand")
    assert summary.count(bench.SUMMARY_HEAD[1]) == 1
    # the other tables and the text around them are untouched
    assert block(new, "trees") == block(SAMPLE, "trees")
    assert "| new big table |" in block(new, "big")
    for text in ("Text before.", "Text between.", "Text after."):
        assert text in new
    # a second run of the same section gives the same text but for its own rows
    again = bench.updated(new, {"big": ["| new big table |"]}, rows, stamp)
    assert again == new


def test_run_of_the_trees_replaces_the_hand_written_five_copies_row() -> None:
    measured = {
        k: v
        for k, v in fake_measured().items()
        if k.startswith(("up_full", "cold", "warm", "five"))
    }
    rows = bench.summary(measured)
    assert set(rows) == {"trees"}
    stamp = "Measured with `python bench/bench.py --only trees --write-docs`, 2026-02-02."
    summary = block(bench.updated(SAMPLE, {}, rows, stamp), "summary")
    assert "old-cold" not in summary and "old-five" not in summary
    assert "measured by hand" not in summary
    assert "old-big" in summary and "by-hand" in summary
    assert OLD_STAMP in summary


def test_full_run_replaces_every_row_and_stamp() -> None:
    rows = bench.summary(fake_measured())
    stamp = "Measured with `python bench/bench.py --skip-training --write-docs`, 2026-02-02."
    summary = block(bench.updated(SAMPLE, {}, rows, stamp), "summary")
    assert OLD_STAMP not in summary
    assert stamp in summary and "The rows of" not in summary
    for old in ("old-cold", "old-tf2", "old-five", "old-big"):
        assert old not in summary
    assert "by-hand" in summary


def test_readme_gets_only_its_tables_and_docs_get_new_sections() -> None:
    rows = bench.summary(fake_measured())
    stamp = "Measured with `python bench/bench.py --write-docs`, 2026-02-02."
    tables = {"linearity": ["| lin |"], "big": ["| new big table |"]}
    readme = bench.updated(SAMPLE, tables, rows, stamp, readme=True)
    assert "| lin |" not in readme and "| new big table |" in readme
    docs = bench.updated(SAMPLE, tables, rows, stamp)
    assert docs.rstrip().endswith("<!-- /bench:linearity -->")
    assert f"## {bench.TITLES['linearity']}" in docs


def test_stamp_sections_follow_the_command_line() -> None:
    assert bench.stamp_sections(OLD_STAMP) == set(bench.SUMMARY_ROWS)
    only = "Measured with `python bench/bench.py --only trees --only big --write-docs`, x."
    assert bench.stamp_sections(only) == {"trees", "big"}
    assert bench.stamp_sections("Measured by hand.") == set()


def test_best_of_keeps_the_fastest_run_its_cpu_and_every_run(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    runs = iter([(0.5, 40.0, 0, 0.9), (0.25, 60.0, 0, 0.4), (0.3, 35.0, 1, 0.5)])

    def run() -> tuple[float, float, int]:
        seconds, rss, code, cpu = next(runs)
        bench.CPU[0] = cpu
        return seconds, rss, code

    monkeypatch.setattr(bench, "MEASURED", {})
    monkeypatch.setattr(bench, "RUNS", {})
    assert bench.best_of("warm", 3, run) == (0.25, 60.0, 1)
    assert bench.CPU[0] == 0.4  # the fastest run's CPU, not the last run's
    assert bench.MEASURED["warm"] == (0.25, 60.0, 1)
    assert bench.runs_of("warm") == "fastest of 3: 0.50, 0.25, 0.30"
    row = bench.summary(
        {
            "up_full": (80.0, 1.0, 0),
            "cold": (2.0, 1.0, 0),
            "cold_tf2": (2.0, 1.0, 0),
            "warm": bench.MEASURED["warm"],
        }
    )
    assert "0.25 (fastest of 3: 0.50, 0.25, 0.30)" in row["trees"][2]

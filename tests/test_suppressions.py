"""Suppression comments: ignore[ID] on the line or the line above, bare ignore, skip-file,
and E2T001 for a suppression that silences nothing (the specification of E2T001)."""

from __future__ import annotations

from pathlib import Path

from est2tpu import api, suppressions
from est2tpu.ftypes import Finding, Position, Status

# TPU004 refuses here: optimize_loss with gradient noise is not expanded (line 6).
REFUSED = """\
import tensorflow as tf


def model_fn(features, labels, mode, params):
    loss = tf.reduce_mean(features["x"])
    train_op = tf.contrib.layers.optimize_loss(loss, None, 0.1, "SGD", gradient_noise_scale=0.5){comment}
    return tf.estimator.EstimatorSpec(mode=mode, loss=loss, train_op=train_op)


est = tf.estimator.Estimator(model_fn=model_fn, model_dir="/tmp/m")
"""


def ids(result: object) -> list[str]:
    return [f.rule_id for f in result.findings]  # type: ignore[attr-defined]


def test_the_unsuppressed_file_has_a_tpu004_finding_on_line_6() -> None:
    result = api.migrate_source(REFUSED.format(comment=""))
    assert [(f.rule_id, f.position.line) for f in result.findings] == [("TPU004", 6)]


def test_trailing_ignore_with_the_id_silences_the_finding() -> None:
    result = api.migrate_source(REFUSED.format(comment="  # est2tpu: ignore[TPU004]"))
    assert result.findings == []
    # Suppressions silence findings only: the rest of the file is still migrated.
    assert result.status is Status.CHANGED
    assert "TPUEstimator(" in (result.new_text or "")


def test_ignore_on_the_line_above_silences_the_next_line() -> None:
    text = REFUSED.format(comment="").replace(
        "    train_op =", "    # est2tpu: ignore[TPU004]\n    train_op ="
    )
    assert api.migrate_source(text).findings == []


def test_bare_ignore_silences_every_id_and_ids_are_case_insensitive() -> None:
    assert api.migrate_source(REFUSED.format(comment="  # est2tpu: ignore")).findings == []
    assert api.migrate_source(REFUSED.format(comment="  # est2tpu:ignore[tpu004]")).findings == []


def test_ignore_with_another_id_keeps_the_finding_and_is_itself_unused() -> None:
    result = api.migrate_source(REFUSED.format(comment="  # est2tpu: ignore[TPU003]"))
    assert sorted(ids(result)) == ["E2T001", "TPU004"]
    unused = next(f for f in result.findings if f.rule_id == "E2T001")
    line6 = REFUSED.format(comment="  # est2tpu: ignore[TPU003]").splitlines()[5]
    assert unused.position == Position(6, line6.index("#") + 1)
    assert "ignore[TPU003]" in unused.message and "no TPU003 finding" in unused.message


def test_unused_suppression_on_a_clean_line_is_reported() -> None:
    text = "import tensorflow as tf\nx = 1  # est2tpu: ignore\n"
    result = api.migrate_source(text)
    assert [(f.rule_id, f.position) for f in result.findings] == [("E2T001", Position(2, 8))]
    assert "nothing to ignore" in result.findings[0].message


def test_unused_suppression_is_not_judged_for_rules_that_did_not_run() -> None:
    text = REFUSED.format(comment="  # est2tpu: ignore[TPU004]")
    # TPU004 was not selected: its suppression cannot be called unused; E2T001 not selected.
    assert api.migrate_source(text, select=["TPU007"]).findings == []
    assert api.migrate_source(text, select=["TPU007", "E2T001"]).findings == []
    text = "x = 1  # est2tpu: ignore[TPU004]\n"
    assert ids(api.migrate_source(text)) == ["E2T001"]
    assert api.migrate_source(text, ignore=["E2T001"]).findings == []


def test_a_comment_inside_a_string_is_not_a_suppression() -> None:
    text = 'x = "# est2tpu: ignore"\n'
    assert suppressions.find(text) == []


def test_skip_file_in_the_first_ten_lines_leaves_the_file_untouched() -> None:
    text = "# est2tpu: skip-file\n" + REFUSED.format(comment="")
    result = api.migrate_source(text)
    assert result.status is Status.SKIPPED
    assert result.new_text == text and result.findings == []
    late = "\n" * 10 + "# est2tpu: skip-file\n" + REFUSED.format(comment="")
    assert api.migrate_source(late).status is Status.CHANGED


def test_skip_file_in_a_tree_is_reported_skipped(tmp_path: Path) -> None:
    path = tmp_path / "train.py"
    path.write_text("# est2tpu: skip-file\n" + REFUSED.format(comment=""), encoding="utf-8")
    [result] = api.migrate_paths([tmp_path])
    assert result.status is Status.SKIPPED


def test_apply_on_plain_findings() -> None:
    f = Finding("TPU009", "py_func", Position(3, 5))
    sups = suppressions.find("a = 1\n# est2tpu: ignore[TPU009, TPU004]\nb = 2\n")
    assert [s.line for s in sups] == [3]
    kept = suppressions.apply([f], sups, enabled=lambda _id: True)
    assert [k.rule_id for k in kept] == ["E2T001"]
    assert "no TPU004 finding" in kept[0].message

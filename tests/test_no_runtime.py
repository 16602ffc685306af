"""--no-runtime: the migrated code is plain TensorFlow, with no import of est2tpu."""

from __future__ import annotations

from pathlib import Path

from est2tpu.api import migrate_source
from est2tpu.catalogue import data_dir

FIXTURES = data_dir("fixtures")


def test_plain_tensorflow_helpers_replace_the_shim() -> None:
    src = (FIXTURES / "TPU005" / "literal_batch.before.py").read_text()
    result = migrate_source(src, path="train.py", use_runtime=False)
    assert result.error is None
    text = result.new_text or ""
    assert "est2tpu" not in text.replace("_est2tpu_", "")
    assert "use_tpu=_est2tpu_use_tpu()" in text
    assert "config=_est2tpu_run_config()" in text
    assert text.count("def _est2tpu_cluster_resolver(") == 1
    compile(text, "train.py", "exec", dont_inherit=True)
    again = migrate_source(text, path="train.py", use_runtime=False)
    assert again.new_text == text


def test_opaque_config_is_refused_without_the_shim(tmp_path: Path) -> None:
    src = (FIXTURES / "TPU007" / "config_from_caller.before.py").read_text()
    result = migrate_source(src, path="build.py", use_runtime=False)
    assert result.new_text is not None and "TPUEstimator(" not in result.new_text
    assert any(f.rule_id == "TPU007" and "--no-runtime" in f.message for f in result.findings)


def test_evaluation_steps_counted_by_the_runtime_stay_findings_without_it() -> None:
    """`evaluate()` / `EvalSpec(steps=None)` over an input of known length become the
    runtime's step count; under --no-runtime they stay findings (an internal error before)."""
    for name in ("evaluate_arrays_read_once", "eval_spec_to_the_end_of_arrays"):
        src = (FIXTURES / "TPU005" / f"{name}.before.py").read_text()
        result = migrate_source(src, path="train.py", use_runtime=False)
        assert result.error is None, (name, result.error)
        assert "est2tpu" not in (result.new_text or "").replace("_est2tpu_", "")
        assert any(f.rule_id == "TPU005" and "steps" in f.message for f in result.findings), name

"""Tests of the runtime shim ``est2tpu.runtime``.

The import-cost tests run in this (TensorFlow-free) interpreter's fresh
subprocesses.  The behaviour tests need TensorFlow 2.15: they run one probe
script in the TF interpreter (see tests/e2e/harness.py) and check its report.
"""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
import textwrap
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

REPO_ROOT = Path(__file__).resolve().parents[1]


def _harness() -> ModuleType:
    name = "est2tpu_e2e_harness"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, REPO_ROOT / "tests/e2e/harness.py")
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return sys.modules[name]


# Records every top-level module an import statement *tries* to load, so the
# test also holds in an interpreter where TensorFlow is not installed at all.
_IMPORT_SPY = textwrap.dedent(
    """
    import json, os, sys
    attempted = set()

    class Spy:
        def find_spec(self, name, path=None, target=None):
            attempted.add(name.split(".")[0])
            return None

    sys.meta_path.insert(0, Spy())
    os.environ.pop("TPU_NAME", None)
    import est2tpu.runtime as runtime
    after_import = sorted(attempted)
    resolver = runtime.cluster_resolver()
    on_tpu = runtime.use_tpu()
    print(json.dumps({"after_import": after_import,
                      "after_resolve": sorted(attempted),
                      "resolver": repr(resolver), "use_tpu": on_tpu}))
    """
)


def _on_tpu_vm() -> bool:
    return any(Path(device).exists() for device in ("/dev/accel0", "/dev/vfio/0"))


@pytest.fixture(scope="module")
def import_report() -> dict[str, Any]:
    proc = subprocess.run(
        [sys.executable, "-c", _IMPORT_SPY],
        cwd=REPO_ROOT,
        env={**_harness().tf_env(), "PYTHONPATH": str(REPO_ROOT)},
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    report: dict[str, Any] = json.loads(proc.stdout)
    return report


@pytest.mark.parametrize("heavy", ["libcst", "typer", "rich", "tensorflow"])
def test_importing_runtime_does_not_import(heavy: str, import_report: dict[str, Any]) -> None:
    assert heavy not in import_report["after_import"]


@pytest.mark.skipif(_on_tpu_vm(), reason="this host is a Cloud TPU VM")
def test_no_tpu_is_answered_without_tensorflow(import_report: dict[str, Any]) -> None:
    assert import_report["resolver"] == "None"
    assert import_report["use_tpu"] is False
    assert "tensorflow" not in import_report["after_resolve"]


_TF_PROBE = textwrap.dedent(
    """
    import json, os
    os.environ.pop("TPU_NAME", None)
    import est2tpu.runtime as runtime
    import tensorflow as tf

    report = {}
    report["tf_before_call"] = False  # set by the caller's check below

    # run_config(): TPU RunConfig with TPUConfig and no cluster on CPU.
    rc = runtime.run_config(model_dir="m", tf_random_seed=3, iterations_per_loop=7)
    report["run_config"] = {
        "type": type(rc).__module__ + "." + type(rc).__name__,
        "is_tpu": isinstance(rc, tf.compat.v1.estimator.tpu.RunConfig),
        "model_dir": rc.model_dir,
        "tf_random_seed": rc.tf_random_seed,
        "iterations_per_loop": rc.tpu_config.iterations_per_loop,
        "per_host_v2": rc.tpu_config.per_host_input_for_training
            == tf.compat.v1.estimator.tpu.InputPipelineConfig.PER_HOST_V2,
        "cluster": repr(rc.cluster),
    }

    # ensure_tpu_run_config(): identity, None, plain RunConfig, bad type.
    report["identity"] = runtime.ensure_tpu_run_config(rc) is rc
    fresh = runtime.ensure_tpu_run_config(None, iterations_per_loop=11)
    report["from_none"] = [isinstance(fresh, tf.compat.v1.estimator.tpu.RunConfig),
                           fresh.tpu_config.iterations_per_loop]
    session = tf.compat.v1.ConfigProto(inter_op_parallelism_threads=2)
    strategy = tf.distribute.OneDeviceStrategy("/cpu:0")
    plain = tf.estimator.RunConfig(
        model_dir="plain_dir", tf_random_seed=5, save_summary_steps=17,
        save_checkpoints_steps=23, session_config=session, keep_checkpoint_max=3,
        keep_checkpoint_every_n_hours=4, log_step_count_steps=9,
        train_distribute=strategy, eval_distribute=strategy,
        experimental_max_worker_delay_secs=6, session_creation_timeout_secs=8,
        checkpoint_save_graph_def=False)
    converted = runtime.ensure_tpu_run_config(plain, iterations_per_loop=13)
    names = ["model_dir", "tf_random_seed", "save_summary_steps", "save_checkpoints_steps",
             "save_checkpoints_secs", "keep_checkpoint_max", "keep_checkpoint_every_n_hours",
             "log_step_count_steps", "experimental_max_worker_delay_secs",
             "session_creation_timeout_secs", "checkpoint_save_graph_def"]
    report["kept"] = {n: [getattr(plain, n), getattr(converted, n)] for n in names}
    report["kept_objects"] = {
        "session_config": converted.session_config == plain.session_config,
        "session_config_copied": converted.session_config is not plain.session_config,
        "train_distribute": converted.train_distribute is strategy,
        "eval_distribute": converted.eval_distribute is strategy,
    }
    report["converted_tpu"] = [isinstance(converted, tf.compat.v1.estimator.tpu.RunConfig),
                               converted.tpu_config.iterations_per_loop]
    by_secs = runtime.ensure_tpu_run_config(tf.estimator.RunConfig(save_checkpoints_secs=77))
    report["by_secs"] = [by_secs.save_checkpoints_secs, by_secs.save_checkpoints_steps]
    default = runtime.ensure_tpu_run_config(tf.estimator.RunConfig())
    report["default_ckpt"] = [default.save_checkpoints_secs, default.save_checkpoints_steps]
    # Off TPU: one step per session.run, so 1 (else TPUEstimator logs after every step).
    report["loops_off_tpu"] = [runtime.iterations_per_loop(), runtime.iterations_per_loop(50),
                               runtime.run_config().tpu_config.iterations_per_loop,
                               default.tpu_config.iterations_per_loop]
    class MasterRunConfig(tf.estimator.RunConfig):
        def __init__(self, master, **kwargs):
            super().__init__(**kwargs)
            self._master = master

    own = runtime.ensure_tpu_run_config(MasterRunConfig("grpc://ps:2222", model_dir="m"))
    report["own_master"] = [own.master, own.evaluation_master, own.model_dir,
                            default.master, default.evaluation_master]
    try:
        runtime.ensure_tpu_run_config({"model_dir": "x"})
        report["bad_type"] = "no error"
    except TypeError as e:
        report["bad_type"] = "TypeError"

    # cluster_resolver(): order of sources, ValueError -> None, caching.
    constructed = []

    class FakeResolver:
        def __init__(self, tpu=None, zone=None, project=None):
            constructed.append(tpu)
            if tpu == "missing":
                raise ValueError("no TPU named missing")
            self.tpu = tpu

    tf.distribute.cluster_resolver.TPUClusterResolver = FakeResolver
    report["explicit"] = runtime.cluster_resolver("my-tpu").tpu
    report["cached"] = runtime.cluster_resolver("my-tpu") is runtime.cluster_resolver("my-tpu")
    report["missing"] = repr(runtime.cluster_resolver("missing"))
    report["use_tpu_missing"] = runtime.use_tpu("missing")
    os.environ["TPU_NAME"] = "from-env"
    report["from_env"] = runtime.cluster_resolver().tpu
    report["arg_beats_env"] = runtime.cluster_resolver("my-tpu").tpu
    report["use_tpu_env"] = runtime.use_tpu()
    del os.environ["TPU_NAME"]
    real_exists = os.path.exists
    os.path.exists = lambda p: p == "/dev/vfio/0" or real_exists(p)
    report["tpu_vm"] = runtime.cluster_resolver().tpu
    os.path.exists = real_exists
    report["constructed"] = constructed
    print("REPORT" + json.dumps(report))
    """
)


@pytest.fixture(scope="module")
def tf_report() -> dict[str, Any]:
    harness = _harness()
    check_lazy = "import sys, est2tpu.runtime; assert 'tensorflow' not in sys.modules\n"
    proc = harness.run_tf_code(check_lazy + _TF_PROBE, fork=False)
    assert proc.returncode == 0, proc.stderr[-4000:]
    line = next(x for x in proc.stdout.splitlines() if x.startswith("REPORT"))
    report: dict[str, Any] = json.loads(line[len("REPORT") :])
    return report


@pytest.mark.tf
def test_run_config_is_a_tpu_run_config_without_cluster_on_cpu(tf_report: dict[str, Any]) -> None:
    assert tf_report["run_config"] == {
        "type": "tensorflow_estimator.python.estimator.tpu.tpu_config.RunConfig",
        "is_tpu": True,
        "model_dir": "m",
        "tf_random_seed": 3,
        "iterations_per_loop": 7,
        "per_host_v2": True,
        "cluster": "None",
    }


@pytest.mark.tf
def test_iterations_per_loop_is_one_off_tpu(tf_report: dict[str, Any]) -> None:
    assert tf_report["loops_off_tpu"] == [1, 1, 1, 1]


@pytest.mark.tf
def test_ensure_tpu_run_config_returns_a_tpu_config_unchanged(tf_report: dict[str, Any]) -> None:
    assert tf_report["identity"] is True


@pytest.mark.tf
def test_ensure_tpu_run_config_builds_one_from_none(tf_report: dict[str, Any]) -> None:
    assert tf_report["from_none"] == [True, 11]


@pytest.mark.tf
def test_ensure_tpu_run_config_keeps_every_setting(tf_report: dict[str, Any]) -> None:
    for name, (before, after) in tf_report["kept"].items():
        assert after == before, name
    assert tf_report["kept"]["save_checkpoints_steps"] == [23, 23]
    assert all(tf_report["kept_objects"].values()), tf_report["kept_objects"]
    assert tf_report["converted_tpu"] == [True, 13]


@pytest.mark.tf
def test_ensure_tpu_run_config_keeps_checkpoint_schedule(tf_report: dict[str, Any]) -> None:
    assert tf_report["by_secs"] == [77, None]
    assert tf_report["default_ckpt"] == [600, None]


@pytest.mark.tf
def test_ensure_tpu_run_config_keeps_a_subclass_master(tf_report: dict[str, Any]) -> None:
    # A subclass's own master (no constructor argument carries it) survives off TPU; the
    # evaluation master follows it, as TF's TPU RunConfig does when none is given.
    assert tf_report["own_master"] == ["grpc://ps:2222", "grpc://ps:2222", "m", "", ""]


@pytest.mark.tf
def test_ensure_tpu_run_config_refuses_other_types(tf_report: dict[str, Any]) -> None:
    assert tf_report["bad_type"] == "TypeError"


@pytest.mark.tf
def test_cluster_resolver_sources_and_cache(tf_report: dict[str, Any]) -> None:
    assert tf_report["explicit"] == "my-tpu"
    assert tf_report["cached"] is True
    assert tf_report["from_env"] == "from-env"
    assert tf_report["arg_beats_env"] == "my-tpu"
    assert tf_report["use_tpu_env"] is True
    assert tf_report["tpu_vm"] == "local"
    # One construction per distinct TPU name: later calls hit the cache.
    assert tf_report["constructed"] == ["my-tpu", "missing", "from-env", "local"]


@pytest.mark.tf
def test_cluster_resolver_value_error_means_no_tpu(tf_report: dict[str, Any]) -> None:
    assert tf_report["missing"] == "None"
    assert tf_report["use_tpu_missing"] is False


class _HParamsLike:
    """The part of tf.contrib.training.HParams that params_without_batch_size uses."""

    def __init__(self, **values: Any) -> None:
        self.__dict__.update(values)

    def __contains__(self, key: str) -> bool:
        return key in self.__dict__

    def del_hparam(self, name: str) -> None:
        del self.__dict__[name]


def test_params_without_batch_size_copies_without_the_key() -> None:
    from est2tpu.runtime import params_without_batch_size

    params = {"learning_rate": 0.1, "batch_size": 32}
    assert params_without_batch_size(params) == {"learning_rate": 0.1}
    assert params == {"learning_rate": 0.1, "batch_size": 32}
    hparams = _HParamsLike(learning_rate=0.1, batch_size=32)
    copied = params_without_batch_size(hparams)
    assert "batch_size" not in copied and copied.learning_rate == 0.1
    assert hparams.batch_size == 32
    with pytest.raises(TypeError, match="mapping or an HParams"):
        params_without_batch_size([("batch_size", 32)])

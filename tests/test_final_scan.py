"""Files where only a FINAL rule applies are reported from Python's own tree (`Rule.scan`,
`pipeline._scanned`), never parsed by LibCST: the findings must be exactly those of the
rule's walk of LibCST's tree, which the reference pipeline (every file parsed) runs.

Each case below is a module where TF2004 (`--target tf2`) or TPU014 (tpu-estimator) is the
only rule that applies, laid out where Python's tree and LibCST's could disagree: columns
after non-ASCII text, parentheses, chains over several lines, CRLF, imports in nested
blocks, star and relative imports, an ambiguous import (E2T003), f-strings, decorators,
class bases, a class name after a line continuation, text LibCST refuses. Over every
fixture, `tests/test_parallel.py` holds the same pipeline to the reference too.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from oracle import migrate_all_parsed

from est2tpu import api, pipeline
from est2tpu.ftypes import FileResult, Target

REPO = Path(__file__).resolve().parents[1]

TF2 = {
    "imports_everywhere.py": (
        "import tensorflow.contrib.tpu as tpu_lib\n"
        "from tensorflow.contrib import tpu as tpu2, layers\n"
        "from tensorflow_estimator.python.estimator import *\n"
        "from . import estimator_helpers\n"
        "from .contrib import tpu\n"
        "try:\n"
        "    from tensorflow.contrib.tpu.python.tpu import tpu_config as est_lib\n"
        "except ImportError:\n"
        "    est_lib = None\n"
        "def f():\n"
        "    import tensorflow_estimator\n"
        "    if True:\n"
        "        import tensorflow.contrib.tpu.python as tp; x = 1\n"
        "    return est_lib.Estimator, tpu_lib.TPUConfig\n"
        "class C:\n"
        "    with open('x') as fh:\n"
        "        import tensorflow.python.keras.estimator\n"
        "match 1:\n"
        "    case 1:\n"
        "        from tensorflow.contrib.tpu import (\n"
        "            TPUConfig as config,\n"
        "        )\n"
    ),
    "uses.py": (
        "# -*- coding: utf-8 -*-\n"
        "import tensorflow as tf\n"
        "import tensorflow.python as tfpy\n"
        "a = tf.contrib.tpu.TPUConfig\n"
        "b = 'ünïcödé'; c = tf.contrib.tpu.RunConfig(model_dir='é')\n"
        "d = (tf.contrib).tpu.InputPipelineConfig.PER_HOST_V2\n"
        "e = ((tf).contrib.tpu.CrossShardOptimizer)\n"
        "f = tfpy.estimator.estimator.Estimator(\n"
        "    model_fn=None)\n"
        "g = tf.contrib \\\n"
        "    .tpu.shard\n"
        "h = tf.contrib.tpu.TPUConfig().iterations_per_loop.real\n"
        "@tf.contrib.tpu.on_device_training_loop\n"
        "def hooked():\n"
        '    """tf.contrib.tpu.TPUConfig in a docstring is no use"""\n'
        "    return [tfpy.estimator.model_fn for _ in range(2)]\n"
        "i = 1 if tf.contrib.tpu else 2  # tf.contrib.tpu in a comment\n"
        "if i:\n"
        "\tj = tf.contrib.tpu.shard\n"
    ),
    "crlf.py": "import tensorflow as tf\r\nx = tf.contrib.tpu.TPUConfig\r\ny = tf.contrib.tpu\r\n",
    "ambiguous.py": (
        "import tensorflow as tf\n"
        "try:\n"
        "    import numpy as tf\n"
        "except ImportError:\n"
        "    pass\n"
        "import tensorflow.contrib.tpu as tpu_lib\n"
        "x = tf.contrib.tpu.TPUConfig, tpu_lib.shard\n"
    ),
    "fstring.py": "import tensorflow as tf\nprint(f'{tf.contrib.tpu.TPUConfig} is gone')\n",
    "form_feed.py": "import tensorflow as tf\n\f\nx = tf.contrib.tpu.TPUConfig\n",
    "python2.py": "import tensorflow as tf\nprint 'x', tf.contrib.tpu.TPUConfig\n",
}

TPU = {
    "subclass.py": (
        "from tensorflow_estimator.python.estimator import estimator as estimator_lib\n"
        "from tensorflow_estimator.python.estimator.estimator import EstimatorV2\n"
        "class Mine(estimator_lib.Estimator):\n"
        "    pass\n"
        "@decorated\n"
        "class   Ünï(EstimatorV2, metaclass=type): pass\n"
        "def f():\n"
        "    class Inner((estimator_lib).EstimatorV2):\n"
        "        pass\n"
        "class Starred(*estimator_lib.Estimator, **{}):\n"
        "    pass\n"
    ),
    "continuation.py": (
        "from tensorflow_estimator.python.estimator import estimator as estimator_lib\n"
        "class Spaced \\\n"
        "    (estimator_lib.Estimator):\n"
        "    pass\n"
        "class \\\n"
        "    Joined(estimator_lib.Estimator):\n"
        "    pass\n"
    ),
    "calls.py": (
        "from tensorflow_estimator.python.estimator import model_fn as model_fn_lib\n"
        "from tensorflow_estimator.python.estimator import run_config\n"
        "from tensorflow_estimator.python.estimator.canned import dnn\n"
        "def spec(mode):\n"
        "    return model_fn_lib.EstimatorSpec(mode=mode, loss=1.0)\n"
        "config = run_config.RunConfig(model_dir='ü'); c2 = (run_config).RunConfig()\n"
        "z = [dnn.DNNClassifierV2(hidden_units=[1], feature_columns=[]) for _ in ()]\n"
        "msg = f'{len([1])}'\n"
    ),
    "fstring_only.py": (
        "from tensorflow_estimator.python.estimator import run_config\n"
        "print(f'{run_config.RunConfig().model_dir} {len([1])}')\n"
    ),
}


def _write(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = root / name
        path.write_bytes(text.encode("utf-8"))
    return root


def _facts(results: list[FileResult]) -> list[tuple[object, ...]]:
    return [(r.path.name, r.status, r.new_text, r.findings, r.edits, r.error) for r in results]


@pytest.mark.parametrize(("target", "files"), [(Target.TF2, TF2), (Target.TPU_ESTIMATOR, TPU)])
def test_scanned_files_report_as_the_reference(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, target: Target, files: dict[str, str]
) -> None:
    root = _write(tmp_path, files)
    scanned: list[str] = []
    real = pipeline._scanned

    def spy(result: FileResult, *args: object) -> bool:
        done = real(result, *args)  # type: ignore[arg-type]
        if done:
            scanned.append(result.path.name)
        return done

    monkeypatch.setattr(pipeline, "_scanned", spy)
    fast = list(api.migrate_paths([root], target=target, jobs=1))
    reference = list(migrate_all_parsed([root], target=target))
    assert _facts(fast) == _facts(reference)
    # The cases LibCST must decide (f-strings holding a finding, a form feed, Python 2,
    # a class name after a continuation) were parsed; every other one was scanned.
    parsed = {"fstring.py", "form_feed.py", "python2.py", "fstring_only.py", "continuation.py"}
    assert sorted(scanned) == sorted(set(files) - parsed)
    # And the scans found something: the test compares findings, not two empty lists.
    by_name = {r.path.name: r for r in fast}
    assert all(by_name[name].findings for name in scanned)


def _tensorflow_215_trees() -> list[Path]:
    python = REPO / ".venv-tf215" / "bin" / "python"
    if not python.exists():
        return []
    out = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True,
        text=True,
        check=True,
    )
    site = Path(out.stdout.strip())
    return [site / "tensorflow", site / "tensorflow_estimator"]


@pytest.mark.slow
@pytest.mark.parametrize("target", [Target.TF2, Target.TPU_ESTIMATOR])
def test_scan_gives_what_the_libcst_walk_gives_on_tensorflow(
    monkeypatch: pytest.MonkeyPatch, target: Target
) -> None:
    """TensorFlow 2.15's own sources (1,963 files, where the scan answers for 117 files
    under tf2 and 35 under tpu-estimator): the same results either way."""
    trees = _tensorflow_215_trees()
    if not trees:
        pytest.skip("needs .venv-tf215 (scripts/tf215-env.sh)")
    scanned: list[str] = []
    real = pipeline._scanned

    def spy(result: FileResult, *args: object) -> bool:
        done = real(result, *args)  # type: ignore[arg-type]
        if done:
            scanned.append(str(result.path))
        return done

    monkeypatch.setattr(pipeline, "_scanned", spy)
    fast = list(api.migrate_paths(trees, target=target, jobs=1))
    assert len(scanned) >= 30
    monkeypatch.setattr(pipeline, "_scanned", lambda *args: False)
    parsed = list(api.migrate_paths(trees, target=target, jobs=1))
    assert _facts(fast) == _facts(parsed)
    assert sum(len(r.findings) for r in fast) > 100

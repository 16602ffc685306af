"""The `tf2` target's runtime: an Estimator-shaped facade for current TensorFlow.

Code migrated with `est2tpu migrate --target tf2` keeps its model_fn and its
train/evaluate/predict calls and imports this package instead of `tf.estimator`::

    import est2tpu.runtime.tf2 as tf2_runtime
    estimator = tf2_runtime.Estimator(model_fn, model_dir, config=tf2_runtime.RunConfig(...))

Importing it is cheap: TensorFlow is imported when an Estimator is built or a facade
function runs. `strategy()` picks TPUStrategy, MultiWorkerMirroredStrategy (TF_CONFIG),
MirroredStrategy (several GPUs, or `EST2TPU_CPU_REPLICAS=N` logical CPUs, configured when
this package is imported) or the default.

Keras: a migrated program was written for Keras 2, which `tf.keras` was up to TF 2.15. On
current TensorFlow `tf.keras` is Keras 3 unless `TF_USE_LEGACY_KERAS=1` when it is first
used, so importing this package sets `TF_USE_LEGACY_KERAS=1` (unless it is already set)
when tf-keras is installed: the program's own `tf.keras` is then the tf-keras the facade
builds with. TensorFlow reads the variable at the program's first `tf.keras` access; when
that access came first (`tf.keras.utils.set_random_seed(...)` above the facade's import, in
the program or in a harness that imports it), importing this package routes `tf.keras`,
`tf.compat.v1.keras` and `import tensorflow.keras...` to tf-keras after the fact, as if the
variable had been set before TensorFlow was imported. Objects the program already built
with Keras 3 stay Keras 3. Without tf-keras (`pip install tensorflow` alone) nothing is
changed: install the runtime's extra, `pip install "est2tpu[tf2]"`.
"""

from __future__ import annotations

import os
import sys
import types

_KERAS_3_PREFIX = "keras._tf_keras.keras"
# What tensorflow.python.util.lazy_loader.KerasLazyLoader keeps of its constructor arguments.
_LOADER_ARGS = ("_tfll_parent_module_globals", "_tfll_mode", "_tfll_submodule", "_tfll_name")


def _on_path(package: str) -> bool:
    """Whether `package` is on sys.path, without importing it or asking the import system
    (this import must stay light)."""
    for entry in sys.path:
        try:
            if os.path.isdir(os.path.join(entry or ".", package)):
                return True
        except (TypeError, OSError):
            continue
    return False


def _tf_keras_installed() -> bool:
    return _on_path("tf_keras")


def _route_tf_keras() -> None:
    """Give an already imported TensorFlow the tf-keras routing TF_USE_LEGACY_KERAS asks for."""
    if os.environ.get("TF_USE_LEGACY_KERAS") not in ("true", "True", "1"):
        return
    if "tensorflow" not in sys.modules or not _tf_keras_installed():
        return  # TensorFlow, imported later, reads the variable itself
    try:
        from tensorflow.python.util.lazy_loader import KerasLazyLoader
    except ImportError:  # TensorFlow <= 2.15: tf.keras is Keras 2 already
        return
    import importlib

    for name, module in list(sys.modules.items()):
        if not isinstance(module, types.ModuleType) or name.startswith("tensorflow.python"):
            continue
        namespace = vars(module)
        mode = "v1" if ".compat.v1" in name else "v2"
        for attr, value in list(namespace.items()):
            if isinstance(value, KerasLazyLoader):
                state = value.__dict__
                if state.get("_tfll_keras_version") == "keras_3":
                    # Resolved to Keras 3 (and maybe loaded, its __dict__ a copy of the
                    # module's): forget it, so that the next use resolves again.
                    kept = {key: state[key] for key in _LOADER_ARGS if key in state}
                    state.clear()
                    state.update(kept, _tfll_initialized=False)
            elif isinstance(value, types.ModuleType) and value.__name__.startswith(_KERAS_3_PREFIX):
                # `tf.keras` (or a name bound to it) after the loader replaced itself by
                # the Keras 3 module; a plain `import keras` is not touched.
                submodule = value.__name__[len(_KERAS_3_PREFIX) :].lstrip(".") or None
                namespace[attr] = KerasLazyLoader(
                    namespace, mode=mode, submodule=submodule, name=attr
                )
    # `import tensorflow.keras.x` searches tensorflow.__path__, which TensorFlow fixed at
    # import time; put tf-keras's API first, as TensorFlow does when the variable is set.
    tensorflow = sys.modules["tensorflow"]
    spec = importlib.util.find_spec("tf_keras.api._v2")
    if spec is not None and spec.submodule_search_locations:
        api_dir = next(iter(spec.submodule_search_locations))
        path = [entry for entry in tensorflow.__path__ if entry != api_dir]
        tensorflow.__path__ = [api_dir, *path]
    # `import tensorflow.keras[.x]` before this package: Keras 3's modules, under their own
    # names or under `tensorflow.keras...` (`import tensorflow.keras as keras` binds Keras 3's
    # `_tf_keras/keras` package as `tensorflow.keras`). Forget them and bind every name
    # that holds one to tf-keras's module of the same name, as if the variable had been set.
    stale: dict[str, types.ModuleType] = {}
    for name in [
        n for n in sys.modules if n == "tensorflow.keras" or n.startswith("tensorflow.keras.")
    ]:
        module = sys.modules[name]
        origin = os.path.normpath(str(getattr(module, "__file__", "") or ""))
        keras_3 = f"{os.sep}keras{os.sep}_tf_keras{os.sep}" in origin
        if getattr(module, "__name__", "").startswith("keras.") or keras_3:
            stale[name] = sys.modules.pop(name)
    fresh: dict[int, types.ModuleType] = {}
    for name, old in stale.items():
        try:
            fresh[id(old)] = importlib.import_module(name)
        except ImportError:
            continue
    if fresh:
        for module in list(sys.modules.values()):
            if not isinstance(module, types.ModuleType):
                continue
            namespace = vars(module)
            for attr, value in list(namespace.items()):
                if isinstance(value, types.ModuleType) and id(value) in fresh:
                    namespace[attr] = fresh[id(value)]


def _check_keras() -> None:
    """Fail at import, with the fix, where the facade cannot run: Keras 3 and no tf-keras."""
    import importlib.metadata

    if _tf_keras_installed() or not _on_path("tensorflow"):
        return
    try:
        keras_version = importlib.metadata.version("keras")
    except importlib.metadata.PackageNotFoundError:
        return
    if keras_version.startswith("2."):
        return  # TensorFlow <= 2.15: tf.keras is Keras 2
    raise ImportError(
        f"est2tpu.runtime.tf2 needs tf-keras (Keras 2) next to TensorFlow, whose tf.keras "
        f"is Keras {keras_version} here: the migrated program's tf.compat.v1 layers, losses "
        'and Keras 2 models run on tf-keras. Install it with `pip install "est2tpu[tf2]"` '
        '(or `pip install "tf-keras~=<your TensorFlow major.minor>.0"`).'
    )


_check_keras()
if "TF_USE_LEGACY_KERAS" not in os.environ and _tf_keras_installed():
    os.environ["TF_USE_LEGACY_KERAS"] = "1"
_route_tf_keras()

from est2tpu.runtime.tf2 import (
    datasets,
    export,
    hooks,
    inputs,
    layers,
    losses,
    metrics,
    premade,
    train,
)
from est2tpu.runtime.tf2._core import GraphKeys, ModeKeys, get_collection
from est2tpu.runtime.tf2._estimator import Estimator
from est2tpu.runtime.tf2._keras_estimator import KerasEstimator, model_to_estimator
from est2tpu.runtime.tf2._strategy import (
    configure_cpu_replicas,
    cpu_replicas,
    resolve_strategy,
    strategy,
)
from est2tpu.runtime.tf2.exporter import FinalExporter, LatestExporter
from est2tpu.runtime.tf2.extenders import add_metrics
from est2tpu.runtime.tf2.model_fn import EstimatorSpec
from est2tpu.runtime.tf2.premade import (
    DNNClassifier,
    DNNRegressor,
    LinearClassifier,
    LinearRegressor,
)
from est2tpu.runtime.tf2.run_config import RunConfig
from est2tpu.runtime.tf2.training import EvalSpec, TrainSpec, train_and_evaluate

if cpu_replicas() > 1:
    # The test stand-in for an N-core TPU must split the CPU before TensorFlow runs anything,
    # and a model_to_estimator program runs TensorFlow (builds its model) before it calls
    # the facade. Only with the variable set does importing the facade import TensorFlow.
    configure_cpu_replicas()

__all__ = [
    "DNNClassifier",
    "DNNRegressor",
    "Estimator",
    "EstimatorSpec",
    "EvalSpec",
    "FinalExporter",
    "GraphKeys",
    "KerasEstimator",
    "LatestExporter",
    "LinearClassifier",
    "LinearRegressor",
    "ModeKeys",
    "RunConfig",
    "TrainSpec",
    "add_metrics",
    "datasets",
    "export",
    "get_collection",
    "hooks",
    "inputs",
    "layers",
    "losses",
    "metrics",
    "model_to_estimator",
    "premade",
    "resolve_strategy",
    "strategy",
    "train",
    "train_and_evaluate",
]

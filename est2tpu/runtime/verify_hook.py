"""The import-time hook of `est2tpu verify`: seeds a program and records what its Estimators
return, without a change to the program's files.

`est2tpu verify` puts a generated ``sitecustomize.py`` on the child's ``PYTHONPATH`` only; it
calls `install()` before the program's first line runs. Nothing here imports TensorFlow (or
libcst, typer, rich): the patches are applied when the program itself imports the modules
that define ``Estimator``, ``TPUEstimator``, ``RunConfig`` (TF 2.15) or the tf2 facade's
classes, through a `sys.meta_path` finder that runs a patch after the module has loaded.

What it does in the program:

- seeds Python's ``random`` at start, NumPy's global generator when NumPy loads and
  TensorFlow's global seed when TensorFlow loads, all from ``$EST2TPU_VERIFY_SEED``;
- gives ``RunConfig(tf_random_seed=None)`` that seed (the graph seed of every
  train/evaluate/predict graph an Estimator builds);
- with ``$EST2TPU_VERIFY_TF_SEED_SHIFT`` set, adds it to every TensorFlow seed: the global
  seed, the program's own ``tf.random.set_seed`` (any spelling), ``RunConfig``'s and the
  seed Keras' initializers draw from (``keras.utils.set_random_seed``);
- with ``$EST2TPU_VERIFY_TPU_CORES`` set (``verify --tpu``), applies the TPU semantics of
  `est2tpu.runtime.tpu_verify` instead of recording, and writes its findings;
- records each ``train()`` (the global step it reached) and ``evaluate()`` (the metrics dict it
  returned), outermost calls only (``TPUEstimator.train`` calls ``Estimator.train``), and
  writes them as JSON to ``$EST2TPU_VERIFY_RECORD`` when the interpreter exits, even after an
  uncaught exception.
"""

from __future__ import annotations

import atexit
import functools
import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import json
import os
import random
import re
import sys
import threading
from collections.abc import Callable, Sequence
from types import ModuleType
from typing import Any

SEED_ENV = "EST2TPU_VERIFY_SEED"
RECORD_ENV = "EST2TPU_VERIFY_RECORD"
HOOK_DIR_ENV = "EST2TPU_VERIFY_HOOK_DIR"
PROJECT_ENV = "EST2TPU_VERIFY_PROJECT"  # the copy the program runs in
# Added to every TensorFlow seed the program sets or gets (`verify --target tf2`'s run under
# other TensorFlow seeds: how far the program's metrics move with its initial values).
TF_SEED_SHIFT_ENV = "EST2TPU_VERIFY_TF_SEED_SHIFT"

_record: dict[str, Any] = {"evaluations": [], "trains": [], "patched": [], "model_dirs": []}
_active = threading.local()
_installed = False


def _seed() -> int:
    return int(os.environ.get(SEED_ENV, "0"))


def _tf_seed_shift() -> int:
    return int(os.environ.get(TF_SEED_SHIFT_ENV, "0") or 0)


def _plain(value: Any) -> Any:
    """NumPy scalars/arrays, bytes and containers as JSON values (floats kept exactly)."""
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    tolist = getattr(value, "tolist", None)
    if callable(tolist):  # numpy scalar or array
        return _plain(tolist())
    if isinstance(value, (bool, int, float, str)) or value is None:
        return value
    return repr(value)


def _global_step(estimator: Any) -> int | None:
    """The global step of the estimator's latest checkpoint, however the estimator keeps it."""
    # The value is informative: any failure to read it means "unknown", never a crash of the
    # user's program.
    try:
        return int(estimator.get_variable_value("global_step"))
    except Exception:  # noqa: BLE001, S110
        pass  # the tf2 facade's checkpoints are object-based: read the step from the name
    try:
        checkpoint = estimator.latest_checkpoint()
    except Exception:  # noqa: BLE001
        return None
    match = re.search(r"-(\d+)$", str(checkpoint or ""))
    return int(match.group(1)) if match else None


def _has_checkpoint(directory: str) -> bool:
    try:
        names = os.listdir(directory)
    except OSError:
        return False
    return any(name == "checkpoint" or name.endswith(".index") for name in names)


def _note_model_dir(estimator: Any) -> None:
    """Each model_dir the program uses, and whether a checkpoint was there before its first
    use (`verify` refuses to compare runs that share state outside their copies)."""
    model_dir = getattr(estimator, "model_dir", None)
    if not isinstance(model_dir, str) or not model_dir:
        return
    path = os.path.abspath(model_dir)
    if any(entry["path"] == path for entry in _record["model_dirs"]):
        return
    _record["model_dirs"].append({"path": path, "checkpoint_before": _has_checkpoint(path)})


def _recording(kind: str, method: Callable[..., Any]) -> Callable[..., Any]:
    """Wrap ``train``/``evaluate`` so that the outermost call of each kind is recorded."""

    @functools.wraps(method)
    def wrapper(self: Any, *args: Any, **kwargs: Any) -> Any:
        if getattr(_active, kind, False):
            return method(self, *args, **kwargs)
        setattr(_active, kind, True)
        _note_model_dir(self)
        try:
            result = method(self, *args, **kwargs)
        finally:
            setattr(_active, kind, False)
        entry: dict[str, Any] = {"estimator": type(self).__name__}
        if kind == "evaluate":
            entry["metrics"] = _plain(result)
            _record["evaluations"].append(entry)
        else:
            entry["global_step"] = _global_step(self)
            _record["trains"].append(entry)
        return result

    wrapper.__est2tpu_verify__ = True  # type: ignore[attr-defined]
    return wrapper


def _patch_methods(module: ModuleType, class_name: str) -> None:
    cls = getattr(module, class_name, None)
    if cls is None:
        return
    for kind in ("train", "evaluate"):
        method = cls.__dict__.get(kind)
        if method is not None and not getattr(method, "__est2tpu_verify__", False):
            setattr(cls, kind, _recording(kind, method))
    _record["patched"].append(f"{module.__name__}.{class_name}")


def _default_seed(module: ModuleType, class_name: str) -> None:
    """``RunConfig(tf_random_seed=None)`` -> the verify seed (a program's own seed is kept)."""
    cls = getattr(module, class_name, None)
    if cls is None or getattr(cls.__init__, "__est2tpu_verify__", False):
        return
    init = cls.__init__

    @functools.wraps(init)
    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        if len(args) >= 2:  # RunConfig(model_dir, tf_random_seed, ...)
            if args[1] is not None:
                args = (args[0], args[1] + _tf_seed_shift(), *args[2:])
        elif kwargs.get("tf_random_seed") is None:
            kwargs["tf_random_seed"] = _seed() + _tf_seed_shift()
        else:
            kwargs["tf_random_seed"] += _tf_seed_shift()
        init(self, *args, **kwargs)

    __init__.__est2tpu_verify__ = True  # type: ignore[attr-defined]
    cls.__init__ = __init__


def _seed_numpy(module: ModuleType) -> None:
    importlib.import_module("numpy.random").seed(_seed())


def _seed_tensorflow(module: ModuleType) -> None:
    set_seed = getattr(getattr(module, "random", None), "set_seed", None)
    if set_seed is not None:
        set_seed(_seed() + _tf_seed_shift())
    if _tf_seed_shift():
        _shift_seed_setters(module)


def _shift_seed_setters(module: ModuleType) -> None:
    """The program's own global seeds, shifted: `tf.random.set_seed` and its TF1 and
    `compat.v2` spellings (Keras' `set_random_seed` calls the latter)."""
    places = [
        (("random",), "set_seed"),
        (("compat", "v2", "random"), "set_seed"),
        (("compat", "v1"), "set_random_seed"),
        (("compat", "v1", "random"), "set_random_seed"),
    ]
    for path, name in places:
        owner: Any = module
        for part in path:
            owner = getattr(owner, part, None)
        setter = getattr(owner, name, None)
        if setter is None or getattr(setter, "__est2tpu_verify__", False):
            continue

        def shifted(seed: Any, _setter: Any = setter) -> Any:
            return _setter(seed if seed is None else seed + _tf_seed_shift())

        shifted.__est2tpu_verify__ = True  # type: ignore[attr-defined]
        setattr(owner, name, functools.wraps(setter)(shifted))


class _ShiftedSeeds(threading.local):
    """Keras' seed generator (`backend._SEED_GENERATOR`), whose `generator` Keras'
    `set_random_seed` sets to `random.Random(seed)`: each one set is replaced by a generator
    of another seed derived from it, so the initial values of Keras layers move too."""

    def __setattr__(self, name: str, value: Any) -> None:
        if name == "generator" and isinstance(value, random.Random):
            value = random.Random(value.getrandbits(64) + _tf_seed_shift())
        super().__setattr__(name, value)


def _shift_keras_seeds(module: ModuleType) -> None:
    """Keras' own seed generator, shifted (with ``$EST2TPU_VERIFY_TF_SEED_SHIFT``)."""
    current = getattr(module, "_SEED_GENERATOR", None)
    if not _tf_seed_shift() or current is None or isinstance(current, _ShiftedSeeds):
        return
    shifted = _ShiftedSeeds()
    if getattr(current, "generator", None) is not None:
        shifted.generator = current.generator
    module._SEED_GENERATOR = shifted  # type: ignore[attr-defined]


def _patch_facade(module: ModuleType) -> None:
    _patch_methods(module, "Estimator")
    _default_seed(module, "RunConfig")


_ESTIMATOR = "tensorflow_estimator.python.estimator."
# module -> what to do once it has loaded
_PATCHES: dict[str, Callable[[ModuleType], None]] = {
    "numpy": _seed_numpy,
    "tensorflow": _seed_tensorflow,
    "keras.src.backend": _shift_keras_seeds,  # Keras 2.15, TF 2.15's
    _ESTIMATOR + "estimator": lambda m: _patch_methods(m, "Estimator"),
    _ESTIMATOR + "tpu.tpu_estimator": lambda m: _patch_methods(m, "TPUEstimator"),
    _ESTIMATOR + "run_config": lambda m: _default_seed(m, "RunConfig"),
    "est2tpu.runtime.tf2._estimator": _patch_facade,
    "est2tpu.runtime.tf2._keras_estimator": lambda m: _patch_methods(m, "KerasEstimator"),
}


class _Loader(importlib.abc.Loader):
    """The module's own loader, then the patch."""

    def __init__(self, loader: importlib.abc.Loader, patch: Callable[[ModuleType], None]):
        self._loader = loader
        self._patch = patch

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType | None:
        return self._loader.create_module(spec)

    def exec_module(self, module: ModuleType) -> None:
        self._loader.exec_module(module)
        self._patch(module)


class _Finder(importlib.abc.MetaPathFinder):
    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        patch = _PATCHES.get(fullname)
        if patch is None:
            return None
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(fullname, path, target)
            if spec is not None:
                if spec.loader is not None and hasattr(spec.loader, "exec_module"):
                    spec.loader = _Loader(spec.loader, patch)
                return spec
        return None


def _write() -> None:
    path = os.environ.get(RECORD_ENV)
    if not path:
        return
    from est2tpu.runtime import tpu_verify

    if tpu_verify.enabled():
        _record["tpu"] = tpu_verify.record()
    steps = [t["global_step"] for t in _record["trains"] if t["global_step"] is not None]
    steps += [
        e["metrics"]["global_step"]
        for e in _record["evaluations"]
        if isinstance(e.get("metrics"), dict) and isinstance(e["metrics"].get("global_step"), int)
    ]
    _record["final_global_step"] = steps[-1] if steps else None
    _record["seed"] = _seed()
    with open(path, "w", encoding="utf-8") as f:
        json.dump(_record, f, indent=1, sort_keys=True)


def _chain_sitecustomize() -> None:
    """Run the ``sitecustomize`` the interpreter would have run without ours (a venv's)."""
    hook_dir = os.environ.get(HOOK_DIR_ENV)
    if not hook_dir:
        return
    others = [p for p in sys.path if os.path.abspath(p or ".") != os.path.abspath(hook_dir)]
    spec = importlib.machinery.PathFinder.find_spec("sitecustomize", others)
    if spec is None or spec.loader is None:
        return
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)


def install() -> None:
    """Seed, put the patching finder first on `sys.meta_path`, and write the record at exit."""
    global _installed
    if _installed:
        return
    _installed = True
    random.seed(_seed())
    from est2tpu.runtime import tpu_verify, tpu_verify_tf2

    if tpu_verify.enabled():
        from est2tpu.runtime import tpu_verify_xla  # noqa: F401 -- registers the XLA step

        # The TPU check builds graphs and records no results: seeds and TPU semantics only.
        for name in list(_PATCHES):
            if name.startswith(("tensorflow_estimator.", "est2tpu.")):
                del _PATCHES[name]
        _PATCHES.update(tpu_verify.PATCHES)
        _PATCHES.update(tpu_verify_tf2.PATCHES)
    sys.meta_path.insert(0, _Finder())
    for name, patch in _PATCHES.items():
        module = sys.modules.get(name)
        if module is not None:  # loaded before us (by a .pth file, say)
            patch(module)
    atexit.register(_write)
    _chain_sitecustomize()

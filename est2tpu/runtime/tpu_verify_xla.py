"""One training step of the TPU model_fn, compiled and run by XLA on CPU, for
`est2tpu verify --tpu` (TensorFlow 2.15).

TPUEstimator's TPU graph is never compiled on a machine without a TPU: XLA compiles the
cluster when a session first runs it on the TPU. This module compiles the same step on CPU.
When TPUEstimator calls the user's model_fn for a training step on the TPU, it records the
call (`capture`); once the TPU graph is checked, `run_step` calls the model_fn again through
TPUEstimator's own wrapper (same params, ``params['batch_size']`` per core, ``use_tpu`` and
the TPU context) inside ``tensorflow.python.compiler.xla.xla.compile``, in a graph of its own,
on inputs of the per-core shapes and dtypes the TPU infeed gives, and runs it once on zeros.
Importing this module registers it with `tpu_verify` (`verify_hook` does, under the check).

XLA on CPU shares its kernels, and its compile-time-constant rules, with XLA on TPU: what it
cannot compile, the TPU cannot either. ``CrossReplicaSum`` has no XLA:CPU kernel in the pip
build; over one core it is the identity, and that is what the step uses.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterator
from typing import Any

from est2tpu.runtime import tpu_verify, tpu_verify_graph, tpu_verify_tf2

_pending: dict[str, Any] = {}
_building = {"now": False}

_NODE = re.compile(r"\{\{node ([^}]+)\}\}")
_UNSUPPORTED = "Detected unsupported operations"
# What XLA says when it cannot compile (tf2xla's errors), as against a failure to run
_COMPILE_ERRORS = (_UNSUPPORTED, "must be a compile-time constant", "tf2xla conversion failed")


def capture(wrapper: Any, features: Any, labels: Any) -> None:
    """The training step's model_fn call on the TPU (``wrapper`` is TPUEstimator's
    `_ModelFnWrapper`): keep what `run_step` needs to make it again."""
    if _building["now"] or getattr(wrapper._ctx, "mode", None) != "train":
        return
    import tensorflow as tf

    def spec(value: Any) -> Any:
        return tf.TensorSpec(value.shape, value.dtype) if isinstance(value, tf.Tensor) else value

    structure = tf.nest.map_structure(spec, (features, labels))
    _pending["train"] = (wrapper, structure, tpu_verify.state["errors_reported"])


@contextlib.contextmanager
def _one_core() -> Iterator[None]:
    """``CrossReplicaSum`` over one core: the identity (XLA:CPU has no kernel for it)."""
    import tensorflow as tf
    from tensorflow.python.ops import gen_tpu_ops

    original = gen_tpu_ops.cross_replica_sum

    def identity(input: Any, group_assignment: Any = None, name: Any = None) -> Any:
        return tf.identity(input, name=name)

    gen_tpu_ops.cross_replica_sum = identity
    _building["now"] = True
    try:
        yield
    finally:
        gen_tpu_ops.cross_replica_sum = original
        _building["now"] = False


def run_step(site: tuple[str, int] | None) -> bool | None:
    """Compile and run one training step of the captured model_fn with XLA on CPU; report
    what XLA refuses. True when the step ran, False when XLA refused it, None when it could
    not be made (a note says why)."""
    captured = _pending.pop("train", None)
    if captured is None:
        return None
    wrapper, structure, before = captured
    import numpy as np
    import tensorflow as tf
    from tensorflow.python.compiler.xla import xla

    specs = [s for s in tf.nest.flatten(structure) if isinstance(s, tf.TensorSpec)]
    if not all(s.shape.is_fully_defined() for s in specs):
        tpu_verify.state["notes"].append(
            "the XLA step was not run: an input of the TPU step has no static shape"
        )
        return None
    graph = tf.Graph()
    with graph.as_default():
        tf.compat.v1.train.get_or_create_global_step()
        feeds = [tf.compat.v1.placeholder(s.dtype, s.shape) for s in specs]

        created: list[Any] = []

        def record(next_creator: Any, **kwargs: Any) -> Any:
            variable = next_creator(**kwargs)
            created.append(variable)
            return variable

        def step(*inputs: Any) -> Any:
            values = iter(inputs)
            features, labels = tf.nest.map_structure(
                lambda s: next(values) if isinstance(s, tf.TensorSpec) else s, structure
            )
            # every variable the model_fn makes, those Keras keeps out of the collections too
            with tf.variable_creator_scope(record), tf.compat.v1.variable_creator_scope(record):
                spec = wrapper._call_model_fn(features, labels)
            with tf.control_dependencies([spec.train_op]):
                return tf.identity(spec.loss)

        try:
            with _one_core():
                (loss,) = xla.compile(step, feeds)
        except Exception as exc:  # noqa: BLE001 -- the TPU graph was built: our harness's limit
            tpu_verify.state["notes"].append(
                "the XLA step was not run: the model_fn could not be built inside "
                f"xla.compile ({tpu_verify._one_line(f'{type(exc).__name__}: {exc}', 200)})"
            )
            return None
        zeros = {f: np.zeros(f.shape, f.dtype.as_numpy_dtype) for f in feeds}
        variables = {
            id(v): v
            for v in (
                *tf.compat.v1.global_variables(),
                *tf.compat.v1.local_variables(),
                *created,
            )
        }
        init = [
            tf.compat.v1.variables_initializer(list(variables.values())),
            tf.compat.v1.tables_initializer(),
        ]
        with tf.compat.v1.Session(graph=graph) as session:
            try:
                session.run(init)
            except tf.errors.OpError as exc:  # the host's work, not the TPU's: no finding
                tpu_verify.state["notes"].append(
                    "the XLA step was not run: its variables and tables could not be "
                    f"initialized ({tpu_verify._one_line(exc.message, 200)})"
                )
                return None
            try:
                session.run(loss, feed_dict=zeros)
            except tf.errors.OpError as exc:
                if not any(mark in exc.message for mark in _COMPILE_ERRORS):
                    # compiled; running it on zeros failed (not XLA's refusal): no finding
                    tpu_verify.state["notes"].append(
                        "the XLA step compiled but did not run "
                        f"({tpu_verify._one_line(exc.message, 200)})"
                    )
                    return None
                _translate(exc, graph, site, before)
                return False
    return True


def _translate(exc: Any, graph: Any, site: tuple[str, int] | None, before: int) -> None:
    """XLA's refusal as findings at the user's lines. Operations with no XLA kernel get the ID
    the kernel-registry check gives them (and are not repeated where it already did); any
    other refusal (a shape that must be known at compile time, ...) is TPU115, which takes
    the place of a TPU112 warning at its line. A refusal at no line of the project, after
    errors of the same train() (``before``: the error count when it started), is their
    consequence."""
    text = str(exc)
    if _UNSUPPORTED in text:
        tpu_verify_tf2.translate_xla(exc, site, before)
        return
    op = getattr(exc, "op", None)
    frames = tpu_verify_tf2._frames(text)
    for name in _NODE.findall(text):
        try:
            op = graph.get_operation_by_name(name)
            break
        except (KeyError, ValueError):
            continue
    if op is not None:
        frames = tpu_verify_graph.frames_of(op) or frames
    where = tpu_verify.user_frame(frames)
    if where is None and tpu_verify.state["errors_reported"] > before:
        return
    where = where or site
    reason = _reason(text)
    tpu_verify.report("TPU115", f"XLA cannot compile the TPU training step: {reason}", where)


def _reason(text: str) -> str:
    """XLA's own sentence, without its traces."""
    for line in text.splitlines():
        line = line.strip()
        if line and not line.startswith(("Graph execution error", "Detected at node", "File ")):
            if line.startswith(("Node:", "defined at")):
                continue
            return tpu_verify._one_line(line, 240)
    return tpu_verify._one_line(text, 240)


def _capturing(call_model_fn: Any) -> Any:
    def wrapper(self: Any, features: Any, labels: Any, *args: Any, **kwargs: Any) -> Any:
        try:
            capture(self, features, labels)
        except Exception as exc:  # noqa: BLE001 -- our check failed, not the program
            tpu_verify.internal("the capture of the training step", exc)
        return call_model_fn(self, features, labels, *args, **kwargs)

    return wrapper


def patch_model_fn_wrapper(module: Any) -> None:
    """TPUEstimator's `_ModelFnWrapper` records each training step's model_fn call."""
    cls = module._ModelFnWrapper
    cls._call_model_fn = _capturing(cls._call_model_fn)


def after_train_graph(estimator: Any, checked: dict[str, Any] | None) -> None:
    """The XLA step, once TPUEstimator's training graph is built and checked."""
    site = getattr(estimator, "_est2tpu_verify_call_site", None)
    try:
        ran = run_step(site)
    except Exception as exc:  # noqa: BLE001 -- our check failed, not the program
        tpu_verify.internal("the XLA step of the training graph", exc)
        return
    if checked is not None and ran is not None:
        checked["xla_step"] = ran


tpu_verify.MODULE_PATCHES.append(patch_model_fn_wrapper)
tpu_verify.AFTER_TRAIN_GRAPH.append(after_train_graph)

"""The checks of `est2tpu verify --tpu` on a graph TPUEstimator built for a TPU: the
operations inside the TPU cluster, and what is missing from it.

Runs inside the user's program (TensorFlow 2.15) after TPUEstimator's own TPU path built the
train or eval graph. Each problem comes back with the creation traceback of the operation
that shows it, so that the caller reports the user's line.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

# Operations that exist only on a TPU (no XLA:CPU kernel in the pip build) and that
# TPUEstimator itself places in the cluster.
_TPU_ONLY = frozenset(
    {
        "CrossReplicaSum",
        "AllToAll",
        "CollectivePermute",
        "InfeedDequeue",
        "InfeedDequeueTuple",
        "OutfeedEnqueue",
        "OutfeedEnqueueTuple",
        "TPUReplicatedInput",
        "TPUReplicatedOutput",
        "TPUReplicateMetadata",
        "TPUCompilationResult",
        "TPUOrdinalSelector",
        "TPUPartitionedInput",
        "TPUPartitionedOutput",
        "XlaSharding",
        "XlaSpmdFullToShardShape",
        "XlaSpmdShardToFullShape",
        "_Arg",
        "_Retval",
        "Placeholder",
        "NoOp",
        "Assert",  # its XLA kernel compiles it to nothing, string message included
    }
)
_SUMMARY = frozenset(
    {
        "ScalarSummary",
        "HistogramSummary",
        "ImageSummary",
        "AudioSummary",
        "AudioSummaryV2",
        "TensorSummary",
        "TensorSummaryV2",
        "MergeSummary",
        "WriteSummary",
        "WriteScalarSummary",
        "WriteHistogramSummary",
        "WriteImageSummary",
        "WriteAudioSummary",
        "WriteRawProtoSummary",
    }
)
_TABLE_PREFIXES = ("HashTable", "MutableHashTable", "MutableDenseHashTable", "LookupTable")
_TABLE = frozenset({"InitializeTable", "InitializeTableV2", "InitializeTableFromTextFileV2"})
# Data-dependent output shapes that XLA's dynamic padder compiles on TPU (bounded sizes).
_PADDED = frozenset({"Unique", "UniqueV2", "UniqueWithCounts", "Where"})
_APPLY_PREFIXES = ("ResourceApply", "ApplyGradient", "ResourceSparseApply")
_METRICS_SOURCE = "/ops/metrics_impl.py"
_BODY_ATTRIBUTES = ("_body_graph", "_cond_graph", "_true_graph", "_false_graph")


@dataclass
class Problem:
    """One finding before it is placed: its ID, message and the traceback to place it by."""

    id: str
    message: str
    frames: list[tuple[str, int]]


def frames_of(op: Any) -> list[tuple[str, int]]:
    """``op``'s creation traceback as (file, line), outermost first."""
    try:
        return [(frame.filename, frame.lineno) for frame in op.traceback]
    except (AttributeError, TypeError, ValueError):
        return []


def _in_cluster(op: Any) -> bool:
    return "_tpu_replicate" in op.node_def.attr


def _bodies(op: Any) -> Iterator[Any]:
    """The function graphs a control-flow operation runs (while/cond v2), when it keeps them."""
    for name in _BODY_ATTRIBUTES:
        graph = getattr(op, name, None)
        if graph is not None:
            yield graph
    for graph in getattr(op, "_branch_graphs", None) or ():
        yield graph


def cluster_ops(graph: Any) -> list[Any]:
    """The operations that run on the TPU: those TPUEstimator marked for the cluster, and
    every operation of the while/cond bodies they run."""
    seen: set[int] = set()
    out: list[Any] = []
    pending = [op for op in graph.get_operations() if _in_cluster(op)]
    while pending:
        op = pending.pop()
        if id(op) in seen:
            continue
        seen.add(id(op))
        out.append(op)
        for body in _bodies(op):
            pending.extend(body.get_operations())
    out.sort(key=lambda o: o._id if hasattr(o, "_id") else 0)
    return out


def _xla_devices(op_type: str) -> set[str]:
    from tensorflow.python.framework import kernels

    return {k.device_type for k in kernels.get_registered_kernels_for_op(op_type).kernel}


def register_xla_kernels() -> None:
    """XLA:CPU registers its kernels on the first XLA compile: compile something small."""
    import tensorflow as tf

    if "XLA_CPU_JIT" in _xla_devices("MatMul"):
        return
    with tf.Graph().as_default() as graph:
        from tensorflow.python.compiler.xla import xla

        (doubled,) = xla.compile(lambda x: x * 2, [tf.constant(1.0)])
        with tf.compat.v1.Session(graph=graph) as session:
            session.run(doubled)


def _has_string(op: Any) -> bool:
    import tensorflow as tf

    return any(t.dtype == tf.string for t in op.outputs) or any(
        t.dtype == tf.string for t in op.inputs
    )


def _shape_unknown(tensor: Any) -> bool:
    shape = tensor.shape
    return shape.rank is None or any(d is None for d in shape.as_list())


def _starts_dynamic_shape(op: Any) -> bool:
    """An output of unknown shape from inputs whose shapes are all known."""
    if not op.outputs or op.type in _PADDED:
        return False
    import tensorflow as tf

    outputs = [t for t in op.outputs if t.dtype not in (tf.resource, tf.variant)]
    if not any(_shape_unknown(t) for t in outputs):
        return False
    inputs = [t for t in op.inputs if t.dtype not in (tf.resource, tf.variant)]
    return all(not _shape_unknown(t) for t in inputs)


def _spelling(op: Any) -> str:
    return f"{op.type} ('{op.name}')"


def check_ops(ops: Sequence[Any], *, mode: str, cores: int) -> list[Problem]:
    """The problems a TPU has with ``ops`` (the cluster's operations) in ``mode``."""
    register_xla_kernels()
    problems: list[Problem] = []
    metric_lines: set[tuple[str, int]] = set()
    for op in ops:
        kind = op.type
        if kind in _TPU_ONLY or kind.startswith("TPU") or _feeds_only_summaries(op):
            continue
        frames = frames_of(op)
        if kind in _SUMMARY:
            problems.append(
                Problem(
                    "TPU105",
                    f"a summary ({_spelling(op)}) runs inside the TPU loop; TPUs have no "
                    "summary kernels and the loop's graph is not the one the session "
                    "writes summaries from",
                    frames,
                )
            )
            continue
        if kind in _TABLE or kind.startswith(_TABLE_PREFIXES):
            problems.append(
                Problem(
                    "TPU106",
                    f"a lookup table ({_spelling(op)}) is created or used inside the TPU "
                    "loop; tables live on the CPU host and their initializers cannot run "
                    "from the loop",
                    frames,
                )
            )
            continue
        if any(f.endswith(_METRICS_SOURCE) for f, _ in frames) and mode == "train":
            # One finding per metric call, not per operation it builds.
            site = _last_user_like(frames)
            if site not in metric_lines:
                metric_lines.add(site)
                problems.append(
                    Problem(
                        "TPU110",
                        "a tf.compat.v1.metrics update runs inside the TPU training loop: "
                        "each core counts only its own examples (never summed across "
                        "cores), and a value inside the loop cannot be fetched by hooks or "
                        "summaries on the host",
                        frames,
                    )
                )
            continue
        if _has_string(op):
            problems.append(
                Problem(
                    "TPU107",
                    f"a string tensor reaches the TPU ({_spelling(op)}); TPUs have no string type",
                    frames,
                )
            )
            continue
        if "XLA_CPU_JIT" not in _xla_devices(kind):
            if kind in ("PyFunc", "EagerPyFunc", "PyFuncStateless"):
                what = "a Python function (tf.py_function / tf.numpy_function / py_func)"
            else:
                what = f"operation {_spelling(op)}"
            problems.append(
                Problem(
                    "TPU108",
                    f"{what} has no XLA kernel, so it cannot run inside the TPU computation",
                    frames,
                )
            )
            continue
        if kind in _PADDED:
            problems.append(
                Problem(
                    "TPU109",
                    f"{_spelling(op)} has a data-dependent output shape; it compiles on TPU "
                    "only through XLA's dynamic padder",
                    frames,
                )
            )
            continue
        if _starts_dynamic_shape(op):
            problems.append(
                Problem(
                    "TPU112",
                    f"{_spelling(op)} gives a shape not known when the graph is built "
                    f"({', '.join(str(t.shape) for t in op.outputs)})",
                    frames,
                )
            )
    if mode == "train" and cores > 1:
        problems.extend(_cross_replica_sum(ops, cores))
    return problems


def _feeds_only_summaries(op: Any) -> bool:
    """A summary's tag or an assertion's message: the summary itself is the finding, and XLA
    compiles an assertion (with its message) to nothing."""
    consumers = [c for t in op.outputs for c in t.consumers()]
    return bool(consumers) and all(c.type in _SUMMARY or c.type == "Assert" for c in consumers)


def _cross_replica_sum(ops: Sequence[Any], cores: int) -> list[Problem]:
    """Gradients applied without a sum across cores: each core trains its own copy.

    TPUEstimator's own check of this returns early under control flow v2 (the default)."""
    if any(op.type == "CrossReplicaSum" for op in ops):
        return []
    applies = [op for op in ops if op.type.startswith(_APPLY_PREFIXES)]
    if not applies:
        return []
    return [
        Problem(
            "TPU111",
            f"the optimizer applies gradients on each of the {cores} cores without summing "
            "them across cores (no CrossReplicaSum in the training step)",
            frames_of(applies[0]),
        )
    ]


def _last_user_like(frames: Sequence[tuple[str, int]]) -> tuple[str, int]:
    """The innermost frame outside TensorFlow and est2tpu (the caller refines it)."""
    for filename, line in reversed(frames):
        if "/site-packages/" not in filename and "/est2tpu/" not in filename:
            return filename, line
    return frames[-1] if frames else ("", 0)

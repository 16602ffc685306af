"""The findings of `est2tpu verify --tpu`: each ID's severity and the fix its message ends with.

The catalogue entries (``rules/verify/TPU1xx.md``) explain each ID at length; this table is
what the code inside the user's program needs (it cannot read the catalogue), and a test keeps
the two in agreement.
"""

from __future__ import annotations

from dataclasses import dataclass

ERROR = "error"
WARNING = "warning"


@dataclass(frozen=True)
class Check:
    """One verify finding ID: whether it fails the check and how the user fixes it."""

    id: str
    severity: str
    fix: str


CHECKS: dict[str, Check] = {
    c.id: c
    for c in (
        Check(
            "TPU100",
            ERROR,
            "the message is TensorFlow's own; the program fails the same way on a TPU",
        ),
        Check(
            "TPU101",
            ERROR,
            "make the global batch size a multiple of the number of TPU cores",
        ),
        Check(
            "TPU102",
            ERROR,
            "turn strings into numbers in input_fn (a vocabulary lookup or hashing in the "
            "tf.data pipeline); only numeric and bool tensors reach the TPU",
        ),
        Check(
            "TPU103",
            ERROR,
            "give every input tensor a static shape: .batch(params['batch_size'], "
            "drop_remainder=True), padded_batch with a fixed padded_shapes, or a reshape to "
            "the known size",
        ),
        Check(
            "TPU104",
            ERROR,
            "give the tensor a batch dimension before passing it to eval_metrics or "
            "host_call (tf.reshape(t, [1]) or tf.fill([batch_size], t)); the host function "
            "reduces it",
        ),
        Check(
            "TPU105",
            ERROR,
            "write summaries from a host_call (TPUEstimatorSpec(host_call=(fn, tensors))), "
            "which runs on the CPU host",
        ),
        Check(
            "TPU106",
            ERROR,
            "do the lookup in input_fn (on the CPU host) and feed the ids to the model",
        ),
        Check(
            "TPU107",
            ERROR,
            "keep strings on the CPU host: convert them in input_fn, or return them from a "
            "host_call",
        ),
        Check(
            "TPU108",
            ERROR,
            "compute it in input_fn (on the CPU host) or with operations XLA compiles",
        ),
        Check(
            "TPU109",
            WARNING,
            "XLA pads the result to its largest size on TPU; a fixed-size formulation "
            "(tf.math.top_k, masks with tf.where(cond, x, y)) avoids the padding",
        ),
        Check(
            "TPU110",
            ERROR,
            "compute metrics in eval_metrics=(metric_fn, tensors), which runs on the CPU "
            "host; in training, log the tensor from a host_call",
        ),
        Check(
            "TPU111",
            ERROR,
            "wrap the optimizer: tf.compat.v1.tpu.CrossShardOptimizer(optimizer) when "
            "params['use_tpu']",
        ),
        Check(
            "TPU112",
            WARNING,
            "XLA compiles only shapes known at compile time; compute the size from "
            "constants or static shapes (tensor.shape, not tf.shape(tensor))",
        ),
        Check(
            "TPU113",
            ERROR,
            "give TPUEstimator an eval_batch_size (a multiple of the number of cores)",
        ),
        Check(
            "TPU115",
            ERROR,
            "compute sizes from static shapes (tensor.shape), constants or params, not from "
            "tensor values; pad to a fixed size and mask",
        ),
        Check(
            "TPU114",
            WARNING,
            "batch with drop_remainder=True (or pad to a fixed size) so that every step has "
            "the shape XLA compiled for",
        ),
    )
}

"""Findings point into the text before the migration through `rule.line_map`: each line of
a rewritten text maps back to the line it came from."""

from __future__ import annotations

from est2tpu.rule import line_map

OLD = """\
def model_fn(features, labels, mode):
    train_op = optimize_loss(
        loss, step, learning_rate=0.1
    )
    spec = EstimatorSpec(
        mode, loss=loss, train_op=make_op(loss)
    )
    return spec if train_op is None else EstimatorSpec(mode, loss=loss, train_op=train_op)
"""

# The optimize_loss call expanded into several statements (its closing bracket kept), the
# spec renamed and given another argument, as an all-rules run does.
NEW = """\
def model_fn(features, labels, mode, params):
    optimizer = Optimizer(learning_rate=0.1)
    if params["use_tpu"]:
        optimizer = CrossShardOptimizer(optimizer)
    gradients = optimizer.compute_gradients(loss)
    train_op = optimizer.apply_gradients(gradients)
    spec = TPUEstimatorSpec(
        mode, loss=loss, train_op=make_op(loss), host_call=host_call
    )
    return spec if train_op is None else TPUEstimatorSpec(mode, loss=loss, train_op=train_op, host_call=host_call)
"""


def test_a_rewritten_line_keeps_its_own_line_past_an_expanded_call() -> None:
    mapping = line_map(OLD, NEW)
    new_lines = NEW.splitlines()
    spec_args = new_lines.index(
        "        mode, loss=loss, train_op=make_op(loss), host_call=host_call"
    )
    assert mapping[spec_args] == 6
    assert mapping[-1] == 8


def test_unchanged_text_maps_line_for_line() -> None:
    assert line_map(OLD, OLD) == list(range(1, 9))

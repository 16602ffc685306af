"""The train step under XLA over several local replicas (`EST2TPU_JIT_COMPILE=1` with
`EST2TPU_CPU_REPLICAS=N`, or several GPUs): what each replica computes is compiled, the
collectives between replicas are not.

A `jit_compile=True` function cannot hold a cross-replica collective under MirroredStrategy
(`merge_call` and `all_reduce` need the replica threads, which an XLA program does not
have), and its call op must be placed on its replica's device (`on_replica_device`). So
each replica's step is split where TF1 split it: the XLA program runs the model_fn forward
and backward and returns, for every minimized loss, the gradients of the replica's *sum*
of it (the loss times its local denominator, as in `_local_sum`) and that denominator;
outside it, one all-reduce sums the denominators, each gradient is divided by its global
denominator, and the optimizer applies the result (its own all-reduce sums the replicas'
shares). That is the global-batch gradient the facade takes without XLA.

A model_fn that computes its gradients itself (`compute_gradients`, then
`apply_gradients`) sees them scaled to the global batch: the global batch size is
all-reduced before the XLA program runs and passed in, and the replica's mean loss is
weighed by its share of the examples (see `scaled_to_global`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from est2tpu.runtime.tf2 import _dense_lookup, _host_columns, _xla_summaries
from est2tpu.runtime.tf2._core import Invocation, ModeKeys, current, facade_owned, invoke
from est2tpu.runtime.tf2._distribute import _divided, apply, batch_size, reducible
from est2tpu.runtime.tf2._strategy import on_replica_device


def terms(loss: Any, inv: Invocation, features: Any) -> list[tuple[Any, Any]]:
    """`loss` as (what to differentiate, this replica's denominator or None) terms: a
    replica's sum of a mean loss with its denominator, a SUM loss with None (the sums add
    up), and a `get_total_loss` as the terms of its parts."""
    import tensorflow as tf

    record = next((r for r in inv.losses if r.loss is loss), None)
    if record is not None and record.parts is not None:
        return [term for part in record.parts for term in terms(part, inv, features)]
    if record is not None and record.denominator is None:
        return [(loss, None)]
    local = record.denominator if record is not None else batch_size(features)
    return [(loss * tf.cast(local, loss.dtype), tf.cast(local, tf.float32))]


def scaled_to_global(loss: Any, inv: Invocation, features: Any, global_examples: Any) -> Any:
    """This replica's share of the global-batch `loss`, inside the XLA program, where the
    global batch size is known (passed in) and no other denominator can be reduced."""
    import tensorflow as tf

    record = next((r for r in inv.losses if r.loss is loss), None)
    if record is not None and record.parts is not None:
        return tf.add_n(
            [
                tf.cast(scaled_to_global(part, inv, features, global_examples), loss.dtype)
                for part in record.parts
            ]
        )
    if record is not None and record.denominator is None:
        return loss
    # A mean over the replica's batch (its own denominator, which no collective can sum
    # here) weighs by the replica's share of the examples: TF1's own scaling under a
    # strategy (the replica's mean over the number of replicas) for equal batches, and
    # the global mean whenever the denominators follow the examples (unweighted losses).
    local = batch_size(features)
    return loss * tf.cast(tf.math.divide_no_nan(local, global_examples), loss.dtype)


class _Plan:
    """What the traced program returns, by position: per train op, its variables and,
    per term, the index of its denominator (or None) and of each variable's gradient; and
    the optimizers' hyperparameters the model_fn computed (a learning rate decayed from the
    global step): `(optimizer, attribute)` per value the program returns for them."""

    def __init__(self) -> None:
        self.ops: list[tuple[Any, list[Any], list[tuple[int | None, list[int | None]]]]] = []
        self.hyper: list[tuple[Any, str]] = []


def _traced_hyperparameters(records: list[Any]) -> tuple[list[tuple[Any, str]], list[Any]]:
    """The optimizers' attributes that hold tensors of the program being traced: the
    optimizer applies its update outside the program, where those tensors do not exist, so
    the program returns their values and the step sets them before the update."""
    import tensorflow as tf

    graph = tf.compat.v1.get_default_graph()
    where: list[tuple[Any, str]] = []
    values: list[Any] = []
    seen: set[int] = set()
    for record in records:
        inner = record.optimizer.inner
        if id(inner) in seen:
            continue
        seen.add(id(inner))
        for key, value in vars(inner).items():
            if isinstance(value, tf.Tensor) and getattr(value, "graph", None) is graph:
                where.append((inner, key))
                values.append(value)
    return where, values


def train_replica_fn(estimator: Any) -> Callable[..., Any]:
    """What `strategy.run` calls for one train step: the Estimator's `_replica_train`; under
    XLA on one device, all of it compiled; under XLA over several local replicas,
    `replica_step`. Embedding lookups in a compiled program are XLA's (`_dense_lookup`), and
    the ids of string feature columns come from the host (`_host_columns`)."""
    import tensorflow as tf

    state = estimator._ensure_state()
    replica_train: Callable[..., Any] = _host_columns.reading(estimator._replica_train, state)
    if not estimator._config.jit_compile:
        return replica_train
    if estimator._strategy.num_replicas_in_sync > 1:
        return replica_step(estimator)
    program, around = _xla_summaries.carried(replica_train)
    return around(tf.function(_dense_lookup.compilable(program), jit_compile=True, autograph=False))


def replica_step(estimator: Any) -> Callable[[Any], Any]:
    """The replica function `strategy.run` calls in the XLA train loop: one step, its loss
    (what `Estimator._replica_train` returns)."""
    import tensorflow as tf

    plan = _Plan()

    def program(element: Any, global_examples: Any) -> Any:
        state = estimator._ensure_state()
        features, labels = estimator._split(element)

        def call() -> Any:
            inv = current("the model_fn")
            inv.scale_loss = lambda loss: scaled_to_global(loss, inv, features, global_examples)
            return estimator._call_model_fn(features, labels, ModeKeys.TRAIN)

        with tf.GradientTape(persistent=True) as tape:
            spec, inv = invoke(state, ModeKeys.TRAIN, False, call)
            targets = {
                id(record): terms(record.loss, inv, features)
                for record in inv.train_ops
                if record.grads_and_vars is None
            }
        if spec.loss is None or not inv.train_ops:
            raise ValueError(
                "est2tpu tf2 facade: in TRAIN mode the model_fn must return a loss "
                "and a train_op from optimizer.minimize(loss)"
            )
        grads_out: list[Any] = []
        denominators: list[Any] = []
        plan.ops = []
        for record in inv.train_ops:
            if record.grads_and_vars is not None:
                pairs = [(g, v) for g, v in record.grads_and_vars if g is not None]
                variables = [v for _, v in pairs]
                slots: list[int | None] = []
                for g, _ in pairs:
                    slots.append(len(grads_out))
                    grads_out.append(g)
                plan.ops.append((record, variables, [(None, slots)]))
                continue
            variables = list(record.var_list or state.trainable_variables())
            per_term = []
            for target, local in targets[id(record)]:
                grads = tape.gradient(target, variables)
                den: int | None = None
                if local is not None:
                    den = len(denominators)
                    denominators.append(local)
                term_slots: list[int | None] = []
                for g in grads:
                    term_slots.append(None if g is None else len(grads_out))
                    if g is not None:
                        grads_out.append(g)
                per_term.append((den, term_slots))
            plan.ops.append((record, variables, per_term))
        del tape
        plan.hyper, hyper = _traced_hyperparameters(inv.train_ops)
        return tf.cast(spec.loss, tf.float32), grads_out, denominators, hyper

    carried, around = _xla_summaries.carried(program)
    compiled = around(
        on_replica_device(
            tf.function(
                _dense_lookup.compilable(_host_columns.reading(carried, estimator._ensure_state())),
                jit_compile=True,
                autograph=False,
            )
        )
    )

    def step(element: Any) -> Any:
        ctx = tf.distribute.get_replica_context()
        element = _host_columns.with_ids(element, estimator._ensure_state())
        features, _ = estimator._split(element)
        global_examples = ctx.all_reduce(tf.distribute.ReduceOp.SUM, batch_size(features))
        loss, grads, locals_, hyper = compiled(element, global_examples)
        for (optimizer, key), value in zip(plan.hyper, hyper):
            setattr(optimizer, key, value)
        totals = ctx.all_reduce(tf.distribute.ReduceOp.SUM, list(locals_)) if locals_ else []
        for record, variables, per_term in plan.ops:
            summed: list[Any] = [None] * len(variables)
            for den, term_slots in per_term:
                for i, slot in enumerate(term_slots):
                    if slot is None:
                        continue
                    grad = grads[slot]
                    if den is not None:
                        grad = _divided(grad, totals[den])
                    summed[i] = grad if summed[i] is None else _sum(summed[i], grad)
            pairs = [(g, v) for g, v in zip(summed, variables) if g is not None]
            if not pairs:
                raise ValueError("est2tpu tf2 facade: the loss has no gradient")
            pairs = reducible(pairs)
            with facade_owned():  # the optimizer's slots are its own
                apply(record.optimizer.inner, pairs)
        return loss

    return step


def _sum(a: Any, b: Any) -> Any:
    import tensorflow as tf

    if isinstance(a, tf.IndexedSlices) and isinstance(b, tf.IndexedSlices):
        return tf.IndexedSlices(
            tf.concat([a.values, b.values], 0), tf.concat([a.indices, b.indices], 0), a.dense_shape
        )
    return tf.convert_to_tensor(a) + tf.convert_to_tensor(b)

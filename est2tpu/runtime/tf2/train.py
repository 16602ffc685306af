"""`tf.compat.v1.train` optimizers and the global step, for model_fns run by the facade.

An optimizer here *is* TF1's optimizer class (same update kernels, same defaults: Adam's
epsilon stays 1e-8), created once per call site so its slots persist and are checkpointed.
`minimize(loss, global_step=...)` records the request and returns a no-op; the facade then
takes the gradient with a GradientTape, scaled to the global batch, and applies it (TF1's
`apply_gradients` sums the replicas' gradients). The facade advances the global step itself.
"""

from __future__ import annotations

from typing import Any

from est2tpu.runtime.tf2._core import TrainOpRecord, current, stored

# TF1 optimizer state that must survive a later call with new hyperparameters.
_KEEP = ("_slots", "_non_slot_dict", "_deferred_slot_restorations")


class _Optimizer:
    """A TF1 optimizer kept across model_fn calls; only `minimize` is supported."""

    def __init__(self, class_name: str, checkpoint_name: str, args: Any, kwargs: Any) -> None:
        import tensorflow as tf

        self.adopted = False  # built by the facade (see `adopting`)
        self.class_name = class_name
        self.checkpoint_name = checkpoint_name
        self.inner = getattr(tf.compat.v1.train, class_name)(*args, **kwargs)

    @classmethod
    def adopting(cls, inner: Any, checkpoint_name: str) -> _Optimizer:
        """A TF1 optimizer built outside the model_fn (`params["optimizer"]`), kept as is."""
        self = cls.__new__(cls)
        self.adopted = True
        self.class_name = type(inner).__name__
        self.checkpoint_name = checkpoint_name
        self.inner = inner
        return self

    def refresh(self, args: Any, kwargs: Any) -> None:
        """Take this call's hyperparameters (they may be tensors of the current trace)."""
        import tensorflow as tf

        fresh = getattr(tf.compat.v1.train, self.class_name)(*args, **kwargs)
        for key, value in vars(fresh).items():
            if key not in _KEEP and not key.startswith("_self_"):
                setattr(self.inner, key, value)

    def minimize(
        self,
        loss: Any,
        global_step: Any = None,
        var_list: Any = None,
        gate_gradients: Any = None,
        aggregation_method: Any = None,
        colocate_gradients_with_ops: bool = False,
        name: str | None = None,
        grad_loss: Any = None,
    ) -> Any:
        """Record the step; the facade applies it after the model_fn returns."""
        import tensorflow as tf

        if grad_loss is not None:
            raise NotImplementedError(
                "est2tpu tf2 facade: minimize(grad_loss=...) is not supported"
            )
        inv = current(f"{self.class_name}.minimize")
        inv.train_ops.append(TrainOpRecord(self, loss, var_list))
        return tf.no_op(name=name or "minimize")

    def compute_gradients(
        self,
        loss: Any,
        var_list: Any = None,
        gate_gradients: int = 1,
        aggregation_method: Any = None,
        colocate_gradients_with_ops: bool = False,
        grad_loss: Any = None,
    ) -> list[tuple[Any, Any]]:
        """TF1's `[(gradient or None, variable)]` of this replica's share of `loss`, by
        `tf.gradients` in the model_fn's graph, over the model's trainable variables."""
        import tensorflow as tf

        inv = current(f"{self.class_name}.compute_gradients")
        variables = list(var_list) if var_list is not None else inv.state.trainable_variables()
        if not variables:
            raise ValueError("No variables to optimize.")
        if inv.building:
            # The build trace runs outside the replicas, where a mirrored variable has no
            # handle to differentiate; it only creates state, so the values do not matter.
            return [(tf.zeros(v.shape, v.dtype), v) for v in variables]
        scaled = inv.scale_loss(loss) if inv.scale_loss is not None else loss
        grads = tf.compat.v1.gradients(
            scaled,
            variables,
            grad_ys=grad_loss,
            gate_gradients=gate_gradients == 1,
            aggregation_method=aggregation_method,
            colocate_gradients_with_ops=colocate_gradients_with_ops,
        )
        return list(zip(grads, variables))

    def apply_gradients(
        self, grads_and_vars: Any, global_step: Any = None, name: Any = None
    ) -> Any:
        """Record the gradients; the facade applies them after the model_fn returns, once
        per step (and advances the global step itself)."""
        import tensorflow as tf

        inv = current(f"{self.class_name}.apply_gradients")
        if inv.graph is not None and tf.compat.v1.get_default_graph() is not inv.graph:
            raise NotImplementedError(
                "est2tpu tf2 facade: apply_gradients inside tf.cond/tf.while_loop is not "
                "supported: the facade applies the gradients after the model_fn returns"
            )
        pairs = [(g, v) for g, v in grads_and_vars]
        applied = [v for g, v in pairs if g is not None]
        inv.train_ops.append(TrainOpRecord(self, None, applied, pairs))
        return tf.no_op(name=name or "apply_gradients")

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


def _factory(class_name: str) -> Any:
    def make(*args: Any, **kwargs: Any) -> _Optimizer:
        inv = current(f"tf2.train.{class_name}")
        key = inv.site_key(1)
        store = inv.state.optimizers
        opt: _Optimizer = stored(
            "optimizer",
            lambda: _Optimizer(
                class_name,
                class_name if not store else f"{class_name}_{len(store)}",
                args,
                kwargs,
            ),
            key,
            store,
        )
        opt.refresh(args, kwargs)
        return opt

    make.__name__ = class_name
    make.__qualname__ = class_name
    make.__doc__ = f"`tf.compat.v1.train.{class_name}`, created once per call site."
    return make


AdadeltaOptimizer = _factory("AdadeltaOptimizer")
AdagradOptimizer = _factory("AdagradOptimizer")
AdamOptimizer = _factory("AdamOptimizer")
FtrlOptimizer = _factory("FtrlOptimizer")
GradientDescentOptimizer = _factory("GradientDescentOptimizer")
MomentumOptimizer = _factory("MomentumOptimizer")
RMSPropOptimizer = _factory("RMSPropOptimizer")
ProximalAdagradOptimizer = _factory("ProximalAdagradOptimizer")
ProximalGradientDescentOptimizer = _factory("ProximalGradientDescentOptimizer")


def adopted(optimizer: Any, key: str) -> _Optimizer:
    """The facade's optimizer for a TF1 optimizer the model_fn gets in `params[key]`
    (built outside the model_fn): its `minimize`, `compute_gradients` and
    `apply_gradients` are the facade's, its update and slots the optimizer's own."""
    inv = current("a TF1 optimizer in params")
    store = inv.state.optimizers
    opt: _Optimizer = stored(
        "optimizer",
        lambda: _Optimizer.adopting(optimizer, f"params_{key}"),
        ("params", key, id(optimizer)),
        store,
    )
    return opt


def _routed(optimizer: Any) -> _Optimizer:
    """The facade's optimizer for a TF1 optimizer the facade did not build, met in a model_fn
    (built there by a class TF2002 does not map, a library's subclass, or passed in): the
    n-th such optimizer of the call, kept across calls; an optimizer built again on each
    call gives the kept one its hyperparameters, as `refresh` does."""
    inv = current("a TF1 optimizer")
    if not any(o is optimizer for o in inv.raw_optimizers):
        inv.raw_optimizers.append(optimizer)
    n = next(i for i, o in enumerate(inv.raw_optimizers) if o is optimizer)
    store = inv.state.optimizers
    name = type(optimizer).__name__
    opt: _Optimizer = stored(
        "optimizer",
        lambda: _Optimizer.adopting(optimizer, f"{name}_tf1_{n}"),
        ("tf1", n, name),
        store,
    )
    if opt.inner is not optimizer:
        for key, value in vars(optimizer).items():
            if key not in _KEEP and not key.startswith("_self_"):
                setattr(opt.inner, key, value)
    return opt


def _facade_inner(optimizer: Any, inv: Any) -> bool:
    """Is `optimizer` the TF1 optimizer inside one the facade built (whose own methods the
    facade calls)?"""
    return any(
        o.inner is optimizer and not getattr(o, "adopted", False)
        for o in inv.state.optimizers.values()
    )


_ROUTED: list[bool] = []


def route_tf1_optimizers() -> None:
    """While a model_fn runs under the facade, `compute_gradients` and `apply_gradients` of
    any `tf.compat.v1.train.Optimizer` the facade did not build are the facade's: its
    gradients of the replica's share of the loss, over the model's variables, and the
    update applied once per step after the model_fn returns. TF1's `minimize` calls both,
    so it (and a subclass's own `compute_gradients`, calling TF1's) goes the same way.
    Outside a model_fn the optimizer is TF1's, untouched."""
    if _ROUTED:
        return
    import tensorflow as tf

    from est2tpu.runtime.tf2 import _core

    base = tf.compat.v1.train.Optimizer
    tf1_compute, tf1_apply = base.compute_gradients, base.apply_gradients

    def active(optimizer: Any) -> Any:
        inv = getattr(_core._LOCAL, "invocation", None)
        return inv is not None and not _facade_inner(optimizer, inv)

    def compute_gradients(
        self: Any,
        loss: Any,
        var_list: Any = None,
        gate_gradients: int = 1,
        aggregation_method: Any = None,
        colocate_gradients_with_ops: bool = False,
        grad_loss: Any = None,
    ) -> Any:
        if not active(self):
            return tf1_compute(
                self,
                loss,
                var_list=var_list,
                gate_gradients=gate_gradients,
                aggregation_method=aggregation_method,
                colocate_gradients_with_ops=colocate_gradients_with_ops,
                grad_loss=grad_loss,
            )
        return _routed(self).compute_gradients(
            loss,
            var_list,
            gate_gradients,
            aggregation_method,
            colocate_gradients_with_ops,
            grad_loss,
        )

    def apply_gradients(
        self: Any, grads_and_vars: Any, global_step: Any = None, name: Any = None
    ) -> Any:
        if not active(self):
            return tf1_apply(self, grads_and_vars, global_step=global_step, name=name)
        return _routed(self).apply_gradients(grads_and_vars, global_step, name)

    base.compute_gradients = compute_gradients
    base.apply_gradients = apply_gradients
    _ROUTED.append(True)


def get_global_step(graph: Any = None) -> Any:
    """The facade's step variable (int64), read-only for the model_fn."""
    return current("tf2.train.get_global_step").state.global_step


def get_or_create_global_step(graph: Any = None) -> Any:
    """Same as `get_global_step`: the facade always has one."""
    return current("tf2.train.get_or_create_global_step").state.global_step

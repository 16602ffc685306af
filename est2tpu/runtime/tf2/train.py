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

        self.class_name = class_name
        self.checkpoint_name = checkpoint_name
        self.inner = getattr(tf.compat.v1.train, class_name)(*args, **kwargs)

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


def get_global_step(graph: Any = None) -> Any:
    """The facade's step variable (int64), read-only for the model_fn."""
    return current("tf2.train.get_global_step").state.global_step


def get_or_create_global_step(graph: Any = None) -> Any:
    """Same as `get_global_step`: the facade always has one."""
    return current("tf2.train.get_or_create_global_step").state.global_step

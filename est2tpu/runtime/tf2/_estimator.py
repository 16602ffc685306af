"""The Estimator-shaped facade: the user's model_fn under a tf.distribute strategy in TF2."""

from __future__ import annotations

import importlib.util
import inspect
import os
import tempfile
import time
from collections.abc import Callable, Iterator
from typing import Any

from est2tpu.runtime.tf2 import (
    _core,
    _dense_lookup,
    _device_iterators,
    _distribute,
    _host_columns,
    _strategy,
    _xla,
)
from est2tpu.runtime.tf2._core import ModeKeys, State, current, input_dataset, invoke, tf_function
from est2tpu.runtime.tf2._core import scalar_summary as _scalar_summary
from est2tpu.runtime.tf2._distribute import batch_size
from est2tpu.runtime.tf2.hooks import StepCounter, hook_tensors
from est2tpu.runtime.tf2.metrics import Metric
from est2tpu.runtime.tf2.model_fn import EstimatorSpec, _check_spec, _with_metrics
from est2tpu.runtime.tf2.run_config import RunConfig
from est2tpu.runtime.tf2.training import CheckpointSaves


class Estimator:
    """Constructed like `tf.estimator.Estimator`; runs the same model_fn on current TF.

    The model_fn runs inside `tf.function` + `strategy.run` (TPUStrategy, Mirrored,
    MultiWorkerMirrored, or the default strategy; see `strategy()`), with the facade's
    `layers`, `losses`, `metrics` and `train` in place of `tf.compat.v1`'s. Checkpoints are
    object-based (`tf.train.Checkpoint`) under `model_dir`; training resumes from them.
    """

    def __init__(
        self,
        model_fn: Callable[..., Any],
        model_dir: str | None = None,
        config: RunConfig | None = None,
        params: dict[str, Any] | None = None,
        warm_start_from: Any = None,
    ) -> None:
        self._config = config or RunConfig()
        model_dir = model_dir or self._config.model_dir
        if model_dir is None:
            model_dir = tempfile.mkdtemp(prefix="est2tpu-")
        self._model_dir = os.fspath(model_dir)
        self._config = self._config.replace(model_dir=self._model_dir)
        self._model_fn = model_fn
        self._params = dict(params or {})
        self._warm_start_from = warm_start_from
        # One strategy holds the variables: RunConfig's train_distribute (or, without it,
        # eval_distribute), else the one strategy() picks for this host.
        self._strategy = (
            self._config.train_distribute or self._config.eval_distribute or _strategy.strategy()
        )
        _device_iterators.install()  # its iterators end when they are dropped
        # add_metrics(): metric_fns whose metrics join the model_fn's in EVAL mode
        self._metric_fns: tuple[Callable[..., Any], ...] = ()
        self._init_state()

    def _init_state(self) -> None:
        """What this Estimator builds and runs, created on first use (an add_metrics copy
        starts afresh and restores from the same model_dir, as TF1's new Estimator did)."""
        self._state: State | None = None
        self._built: set[str] = set()
        self._checkpoint: Any = None
        self._manager: Any = None
        self._restored = False
        self._eval_metrics: dict[str, Metric] = {}
        self._functions: dict[str, Any] = {}
        self._last_save = time.monotonic()
        self._train_writer: Any = None
        self._summary_vars: tuple[Any, Any] | None = None
        self._spec_hooks: list[Any] = []  # EstimatorSpec(training_hooks=...) as built
        self._user_hooks: list[Any] = []  # train(hooks=...) of the current call

    # -- properties tf.estimator.Estimator has ----------------------------------------------

    @property
    def model_dir(self) -> str:
        return self._model_dir

    @property
    def config(self) -> RunConfig:
        return self._config

    @property
    def params(self) -> dict[str, Any]:
        return dict(self._params)

    @property
    def model_fn(self) -> Callable[..., Any]:
        return self._model_fn

    def eval_dir(self, name: str | None = None) -> str:
        """Where `evaluate(name=...)` writes its summaries, as `tf.estimator.Estimator`."""
        return os.path.join(self._model_dir, "eval" if not name else f"eval_{name}")

    def latest_checkpoint(self) -> str | None:
        import tensorflow as tf

        path: str | None = tf.train.latest_checkpoint(self._model_dir)
        return path

    # -- calling user code --------------------------------------------------------------

    def _call_model_fn(self, features: Any, labels: Any, mode: str) -> EstimatorSpec:
        import tensorflow as tf

        names = inspect.signature(self._model_fn).parameters
        kwargs: dict[str, Any] = {}
        if "labels" in names:
            kwargs["labels"] = labels
        if "mode" in names:
            kwargs["mode"] = mode
        if "params" in names:
            kwargs["params"] = self._call_params()
        if "config" in names:
            kwargs["config"] = self._config
        # TF1 never converted a model_fn with AutoGraph; neither do we.
        fn = tf.autograph.experimental.do_not_convert(self._model_fn)
        current("the model_fn").graph = tf.compat.v1.get_default_graph()
        # TF1 built the model_fn at the graph's top name scope: its op names and summary
        # tags (`train_rmse`, not `while/cond_1/train_rmse` inside the step loop) are those.
        with tf.compat.v1.name_scope(None):
            spec = _check_spec(fn(features, **kwargs), mode)
            if mode == ModeKeys.EVAL:
                for metric_fn in self._metric_fns:
                    spec = _with_metrics(spec, metric_fn, features, labels, self._config)
            return spec

    def _call_params(self) -> dict[str, Any]:
        """`params` as the model_fn sees it: a TF1 optimizer built outside the model_fn and
        passed in (`params["optimizer"].minimize(loss)`) is the facade's optimizer."""
        import tensorflow as tf

        from est2tpu.runtime.tf2.train import adopted

        params = dict(self._params)
        for key, value in params.items():
            if isinstance(value, tf.compat.v1.train.Optimizer):
                params[key] = adopted(value, str(key))
        return params

    def _dataset(self, input_fn: Callable[..., Any], mode: str) -> Any:
        return input_dataset(
            input_fn, {"params": self._params, "mode": mode, "config": self._config}
        )

    @staticmethod
    def _split(element: Any) -> tuple[Any, Any]:
        if isinstance(element, tuple) and len(element) == 2:
            return element[0], element[1]
        return element, None

    # -- state: build once per mode, restore once ---------------------------------------

    def _ensure_state(self) -> State:
        if self._state is None:
            import tensorflow as tf

            from est2tpu.runtime.tf2.train import route_tf1_optimizers

            if self._config.tf_random_seed is not None:
                tf.random.set_seed(self._config.tf_random_seed)
            route_tf1_optimizers()
            # XLA over local replicas runs one program per replica (see `_xla`); a
            # TPUStrategy's replicas are one program, collectives included.
            tpu = isinstance(self._strategy, tf.distribute.TPUStrategy)
            self._state = State(
                self._strategy,
                replica_programs=bool(self._config.jit_compile)
                and self._strategy.num_replicas_in_sync > 1
                and not tpu,
                compiled=bool(self._config.jit_compile) or tpu,
            )
            if self._state.host_columns is not None:
                _host_columns.install()
        return self._state

    def _build(self, mode: str, dataset: Any) -> None:
        """Trace the model_fn once in `mode` under `strategy.scope()` to create its state."""
        if mode in self._built:
            return
        import tensorflow as tf

        state = self._ensure_state()
        features_spec, labels_spec = self._split(dataset.element_spec)

        def build(features: Any, labels: Any) -> Any:
            spec, inv = invoke(
                state, mode, True, lambda: self._call_model_fn(features, labels, mode)
            )
            if mode == ModeKeys.TRAIN:
                # The hooks the model_fn returns, as built; later traces return copies
                # whose tensors the train loop fetches by position.
                self._spec_hooks = list(spec.training_hooks or ())
                for record in inv.train_ops:
                    var_list = record.var_list or state.trainable_variables()
                    with tf.init_scope():
                        # What TF1's apply_gradients does first; done here, outside the
                        # replicas, so the slots exist before the step function runs.
                        record.optimizer.inner._create_slots(list(var_list))
            return spec.loss if spec.loss is not None else tf.constant(0.0)

        with self._strategy.scope():
            tf.function(build, autograph=False).get_concrete_function(features_spec, labels_spec)
        self._built.add(mode)
        self._restore()

    def _restore(self) -> None:
        """Attach what was built to the checkpoint and restore the latest one (once)."""
        import tensorflow as tf

        state = self._ensure_state()
        if self._checkpoint is None:
            self._checkpoint = tf.train.Checkpoint()
            self._manager = tf.train.CheckpointManager(
                self._checkpoint,
                self._checkpoint_dir(),
                max_to_keep=self._config.keep_checkpoint_max,
                checkpoint_name="ckpt",
            )
        for name, obj in state.trackables().items():
            # Attaching to a restored Checkpoint restores the object (deferred restore).
            self._checkpoint._track_trackable(obj, name=name, overwrite=True)
        if self._restored:
            return
        self._restored = True
        latest = tf.train.latest_checkpoint(self._model_dir)
        if latest is not None:
            self._checkpoint.restore(latest).expect_partial()
        elif self._warm_start_from is not None:
            source = os.fspath(self._warm_start_from)
            if os.path.isdir(source):
                source = tf.train.latest_checkpoint(source) or source
            self._checkpoint.restore(source).expect_partial()

    def _is_chief(self) -> bool:
        resolver = getattr(self._strategy, "cluster_resolver", None)
        task_type = getattr(resolver, "task_type", None)
        task_id = getattr(resolver, "task_id", 0) or 0
        if task_type in (None, "chief"):
            return True
        if task_type == "worker" and resolver is not None:
            spec = resolver.cluster_spec().as_dict()
            return "chief" not in spec and task_id == 0
        return False

    def _checkpoint_dir(self) -> str:
        if self._is_chief():
            return self._model_dir
        # Every worker must save (the variables may need collectives); only the chief's
        # copy is kept in model_dir.
        resolver = self._strategy.cluster_resolver
        return os.path.join(self._model_dir, f".worker-{resolver.task_type}-{resolver.task_id}")

    def _save(self) -> None:
        state = self._ensure_state()
        self._manager.save(checkpoint_number=int(state.global_step.numpy()))
        self._last_save = time.monotonic()

    # -- train --------------------------------------------------------------------------

    def _replica_train(self, element: Any, fetch: Any = None) -> Any:
        """One step on this replica: its loss, and with `fetch` (the logging hooks given to
        train(), by position) also `{key: tensor}` of the hooks' tensors."""
        import tensorflow as tf

        state = self._ensure_state()
        features, labels = self._split(element)
        ctx = tf.distribute.get_replica_context()

        def call() -> EstimatorSpec:
            inv = current("the model_fn")
            inv.scale_loss = lambda loss: _distribute.scaled(loss, inv, features, ctx)
            return self._call_model_fn(features, labels, ModeKeys.TRAIN)

        # Over several replicas a minimized loss's gradient is taken of the replica's *sum*
        # (loss x local denominator) and divided by the global denominator after one
        # all-reduce that carries both (`_apply_summed`): the same global-batch gradient
        # as scaling the loss by local / global first, without a collective between the
        # forward and the backward pass. One replica keeps the plain scaled loss.
        # Only TF1 optimizers (whose `_distributed_apply` `_apply_summed` drives); the
        # premades' Keras optimizers keep the scaled loss.
        several = ctx.num_replicas_in_sync > 1
        with tf.GradientTape(persistent=True) as tape:
            spec, inv = invoke(state, ModeKeys.TRAIN, False, call)
            targets = {
                id(record): (
                    (
                        _distribute.local_sum(record.loss, inv, features)
                        if several
                        and isinstance(record.optimizer.inner, tf.compat.v1.train.Optimizer)
                        else None
                    )
                    or (_distribute.scaled(record.loss, inv, features, ctx), None)
                )
                for record in inv.train_ops
                if record.grads_and_vars is None
            }
        if spec.loss is None or not inv.train_ops:
            raise ValueError(
                "est2tpu tf2 facade: in TRAIN mode the model_fn must return a loss "
                "and a train_op from optimizer.minimize(loss)"
            )
        for record in inv.train_ops:
            denominator = None
            if record.grads_and_vars is not None:
                # apply_gradients: what the model_fn computed (and maybe clipped)
                pairs = [(g, v) for g, v in record.grads_and_vars if g is not None]
            else:
                target, denominator = targets[id(record)]
                variables = list(record.var_list or state.trainable_variables())
                grads = tape.gradient(target, variables)
                pairs = [(g, v) for g, v in zip(grads, variables) if g is not None]
            if not pairs:
                raise ValueError("est2tpu tf2 facade: the loss has no gradient")
            pairs = _dense_lookup.compilable_gradients(_distribute.reducible(pairs))
            # The optimizer is the facade's: its slot variables are its own, not the
            # model_fn's (the variable store leaves them to it).
            with _core.facade_owned():
                if denominator is None:
                    _distribute.apply(record.optimizer.inner, pairs)
                else:
                    ctx.merge_call(
                        _distribute.apply_summed,
                        args=(record.optimizer.inner, pairs, denominator),
                    )
        del tape
        if fetch is None:
            return tf.cast(spec.loss, tf.float32)
        return tf.cast(spec.loss, tf.float32), hook_tensors(spec, fetch)

    def _fetch_function(self, user_hooks: list[Any]) -> Any:
        """One train step that also returns the logging hooks' tensors (replica 0's)."""
        import tensorflow as tf

        state = self._ensure_state()
        strategy = self._strategy

        summary_step, _ = self._summary_steps()

        @tf_function
        def fetch_step(iterator: Any) -> Any:
            element = iterator.get_next()
            summary_step.assign(state.global_step + 1)
            replica_train = _host_columns.reading(self._replica_train, state)
            loss, tensors = strategy.run(replica_train, args=(element, user_hooks))
            loss = strategy.reduce(tf.distribute.ReduceOp.MEAN, loss, axis=None)
            first = {key: strategy.experimental_local_results(t)[0] for key, t in tensors.items()}
            state.global_step.assign_add(1)
            return loss, first

        return fetch_step

    def _run_fetch_step(self, fetch_step: Any, iterator: Any, writer: Any) -> Any:
        """The fetching step; its values go to the logging hooks. (loss, steps done)."""
        import tensorflow as tf

        from est2tpu.runtime.tf2.hooks import LoggingTensorHook

        try:
            loss, tensors = self._with_summaries(writer, lambda: fetch_step(iterator))
        except tf.errors.OutOfRangeError:
            return tf.constant(0.0), 0
        step = int(self._ensure_state().global_step.numpy())
        values = {key: value.numpy() for key, value in tensors.items()}
        groups = [
            ("hook", [h for h in self._user_hooks if isinstance(h, LoggingTensorHook)]),
            ("spec", self._spec_hooks),
        ]
        for kind, group in groups:
            for i, hook in enumerate(group):
                if isinstance(hook, LoggingTensorHook):
                    prefix = f"{kind}{i}/"
                    hook.fetched(
                        step,
                        {k[len(prefix) :]: v for k, v in values.items() if k.startswith(prefix)},
                    )
        return loss, 1

    def _train_function(self, infinite: bool) -> Any:
        """`train_steps(iterator, n)`: up to `n` steps in one execution; `infinite` when the
        input never runs out (its end is then never tested for)."""
        key = "train-infinite" if infinite else "train"
        if key in self._functions:
            return self._functions[key]
        import tensorflow as tf

        state = self._ensure_state()
        strategy = self._strategy
        summary_step, _ = self._summary_steps()
        replica_fn = _xla.train_replica_fn(self)

        @tf_function
        def train_steps(iterator: Any, n: Any) -> Any:
            # Only the last step's loss is reported: the replicas' losses are averaged once
            # per execution, not every step.
            per_replica = strategy.run(lambda: tf.constant(0.0))
            done = tf.constant(0, tf.int64)
            if infinite:
                # An input that never runs out needs no end test: no Optional and no
                # conditional around every step (what Keras `fit` runs, too).
                for _ in tf.range(n):
                    summary_step.assign(state.global_step + 1)
                    per_replica = strategy.run(replica_fn, args=(next(iterator),))
                    state.global_step.assign_add(1)
                    done += 1
            else:
                for _ in tf.range(n):
                    optional = iterator.get_next_as_optional()
                    if not optional.has_value():
                        break
                    summary_step.assign(state.global_step + 1)
                    per_replica = strategy.run(replica_fn, args=(optional.get_value(),))
                    state.global_step.assign_add(1)
                    done += 1
            return strategy.reduce(tf.distribute.ReduceOp.MEAN, per_replica, axis=None), done

        self._functions[key] = train_steps
        return train_steps

    def train(
        self,
        input_fn: Callable[..., Any],
        hooks: Any = None,
        steps: int | None = None,
        max_steps: int | None = None,
        saving_listeners: Any = None,
    ) -> Estimator:
        """Train for `steps` more steps, or until the global step reaches `max_steps`.

        `saving_listeners` are called as TF1's CheckpointSaverHook calls them (`begin`;
        `before_save`/`after_save` around every checkpoint, the first one at the starting
        step; `end`), with `session=None`; an `after_save` returning True stops training.
        `hooks` are the facade's (`est2tpu.runtime.tf2.hooks`); they see the model between
        `tf.function` calls at the steps they ask for, before that step's checkpoint.
        Summaries the model_fn writes (`tf.compat.v1.summary.*`, `tf.summary.*`) go to
        `model_dir` every `save_summary_steps` steps.
        """
        import tensorflow as tf

        from est2tpu.runtime.tf2.hooks import FacadeHook

        hooks = list(hooks or ())
        self._user_hooks = hooks
        for hook in hooks:
            if not isinstance(hook, FacadeHook):
                raise TypeError(
                    f"est2tpu tf2 facade: train(hooks=...) runs the hooks of "
                    f"est2tpu.runtime.tf2.hooks, not {type(hook).__name__}: a SessionRunHook "
                    "needs a session"
                )
        listeners = list(saving_listeners or ())
        if steps is not None and max_steps is not None:
            raise ValueError("Can not provide both steps and max_steps.")
        dataset = self._dataset(input_fn, ModeKeys.TRAIN)
        self._build(ModeKeys.TRAIN, dataset)
        state = self._ensure_state()
        dataset = _host_columns.on_host(dataset, state)  # string lookups, if compiled
        start = int(state.global_step.numpy())
        if max_steps is not None:
            target = max_steps
        elif steps is not None:
            target = start + steps
        else:
            target = None
        if target is not None and start >= target:
            return self
        iterator = iter(self._strategy.experimental_distribute_dataset(dataset))
        infinite = bool(dataset.cardinality() == tf.data.INFINITE_CARDINALITY)
        train_steps = self._train_function(infinite)
        if self._train_writer is None and self._is_chief():
            # One writer for every train() call: the traced train function records the
            # model_fn's summaries through the writer it was traced with.
            self._train_writer = tf.summary.create_file_writer(self._model_dir)
        writer = self._train_writer
        config = self._config
        counter = StepCounter(config.log_step_count_steps)
        step = start
        saves = CheckpointSaves(self._save, lambda: int(state.global_step.numpy()), listeners)
        from est2tpu.runtime.tf2.hooks import LoggingTensorHook

        hooks = [*hooks, *self._spec_hooks]
        logging_hooks = [h for h in hooks if isinstance(h, LoggingTensorHook)]
        user_logging = [h for h in self._user_hooks if isinstance(h, LoggingTensorHook)]
        fetch_step = self._fetch_function(user_logging) if logging_hooks else None
        for hook in hooks:
            hook.begin(self, step)
        self._summary_steps()[1].assign(step + 1)
        for key, metric in state.metrics.items():
            if isinstance(key, tuple) and key[:1] == ("train",):
                metric.reset()  # TF1 initialized them with each train() call's session
        if saves.begin():
            target = step
        while target is None or step < target:
            n = config.steps_per_execution
            if target is not None:
                n = min(n, target - step)
            for every in (config.save_summary_steps, config.save_checkpoints_steps):
                if every:
                    n = min(n, every - step % every)
            for hook in hooks:
                wanted = hook.next_step(step)
                if wanted is not None and wanted > step:
                    n = min(n, wanted - step)
            if step + n in {h.wants(step) for h in logging_hooks}:
                # The chunk's last step fetches the logging hooks' tensors.
                loss, done = (
                    self._run_train_steps(train_steps, iterator, n - 1, writer)
                    if n > 1
                    else (tf.constant(0.0), tf.constant(0))
                )
                if int(done) == n - 1:
                    loss, last = self._run_fetch_step(fetch_step, iterator, writer)
                    done = int(done) + last
            else:
                loss, done = self._run_train_steps(train_steps, iterator, n, writer)
            step = int(state.global_step.numpy())
            # TF1 ran the user's hooks' after_run before the CheckpointSaverHook's.
            stop_requested = False
            for hook in hooks:  # every hook sees the step, as every after_run ran
                stop_requested = hook.after_steps(step) or stop_requested
            rate = counter.update(step)
            if rate is not None:
                tf.get_logger().info("global_step/sec: %g", rate)
                if writer is not None:
                    with writer.as_default():
                        _scalar_summary("global_step/sec", rate, step)
            if (
                writer is not None
                and config.save_summary_steps
                and (step % config.save_summary_steps == 0)
            ):
                with writer.as_default():
                    _scalar_summary("loss", loss, step)
            due = (config.save_checkpoints_steps and step % config.save_checkpoints_steps == 0) or (
                config.save_checkpoints_secs
                and time.monotonic() - self._last_save >= config.save_checkpoints_secs
            )
            if due and saves.save():
                break
            if int(done) < n or stop_requested:
                break  # the input ran out (TF1's OutOfRangeError) or a hook asked to stop
        saves.end()
        for hook in hooks:
            hook.end(step)
        if writer is not None:
            writer.flush()
        return self

    def _run_train_steps(self, train_steps: Any, iterator: Any, n: int, writer: Any) -> Any:
        """`n` train steps; summaries the model_fn writes are recorded at the steps TF1's
        SummarySaverHook saved them (every `save_summary_steps`), by replica 0."""
        import tensorflow as tf

        return self._with_summaries(writer, lambda: train_steps(iterator, tf.constant(n, tf.int64)))

    def _with_summaries(self, writer: Any, run: Callable[[], Any]) -> Any:
        import tensorflow as tf

        every = self._config.save_summary_steps
        # TensorFlow writes tf.compat.v1.summary.* and tf.summary.scalar through the
        # tensorboard package, which TensorFlow 2.20+ no longer installs: without it the
        # model_fn's summaries are computed and not written (as in TF1 without a writer).
        if writer is None or not every or importlib.util.find_spec("tensorboard") is None:
            return run()
        step, first = self._summary_steps()
        # TF1's SummarySaverHook: the first step of each train() call, then every
        # `save_summary_steps` steps, labelled with the global step after the step.
        with (
            writer.as_default(step=step),
            tf.summary.record_if(lambda: tf.equal((step - first) % every, 0)),
        ):
            return run()

    def _summary_steps(self) -> tuple[Any, Any]:
        """Two int64 variables, outside the checkpoint: the step a summary written now is
        labelled with (the global step after the running step) and the label of the first
        step of the current train() call."""
        if self._summary_vars is None:
            import tensorflow as tf

            with tf.init_scope():
                self._summary_vars = (
                    tf.Variable(0, dtype=tf.int64, trainable=False),
                    tf.Variable(1, dtype=tf.int64, trainable=False),
                )
        return self._summary_vars

    # -- evaluate -----------------------------------------------------------------------

    def _replica_eval(self, element: Any) -> Any:
        import tensorflow as tf

        state = self._ensure_state()
        features, labels = self._split(element)
        spec, inv = invoke(
            state,
            ModeKeys.EVAL,
            False,
            lambda: self._call_model_fn(features, labels, ModeKeys.EVAL),
        )
        if spec.loss is None:
            raise ValueError("est2tpu tf2 facade: in EVAL mode the model_fn must return a loss")
        metrics: dict[str, Metric] = {}
        for name, value in (spec.eval_metric_ops or {}).items():
            metric = getattr(value, "metric", None)
            if metric is None and isinstance(value, tuple) and len(value) == 2:
                metric = inv.metric_by_op.get(id(value[1]))
                if metric is not None and value[0] is not inv.metric_value_by_op[id(value[1])]:
                    raise TypeError(
                        f"est2tpu tf2 facade: eval_metric_ops[{name!r}] pairs a metric's "
                        "update op with another value (one computed from the metric's "
                        "value?); the facade reports an entry by its update op's metric, "
                        "so put the metric itself in eval_metric_ops and compute the value "
                        "from evaluate's result (TF2003)"
                    )
            if metric is None:
                raise TypeError(
                    f"est2tpu tf2 facade: eval_metric_ops[{name!r}] is not a metric from "
                    "est2tpu.runtime.tf2.metrics"
                )
            metrics[name] = metric
        self._eval_metrics = metrics
        # Estimator's "loss": the mean over batches of each (global) batch's loss. Each
        # replica adds its share of the global-batch loss (weighted like training, see
        # `_scaled`) and of one batch.
        ctx = tf.distribute.get_replica_context()
        local = batch_size(features)
        batch_share = tf.math.divide_no_nan(
            local, ctx.all_reduce(tf.distribute.ReduceOp.SUM, local)
        )
        loss_share = tf.cast(_distribute.scaled(spec.loss, inv, features, ctx), tf.float32)
        total = tf.where(local > 0, loss_share, 0.0)
        return self._loss_metric.update(total=total, count=batch_share)

    def evaluate(
        self,
        input_fn: Callable[..., Any],
        steps: int | None = None,
        hooks: Any = None,
        checkpoint_path: str | None = None,
        name: str | None = None,
    ) -> dict[str, Any]:
        """Evaluate for `steps` batches (or until the input ends); TF1's result dict."""
        import tensorflow as tf

        if hooks:
            raise NotImplementedError("est2tpu tf2 facade: evaluate(hooks=...) is not supported")
        dataset = self._dataset(input_fn, ModeKeys.EVAL)
        self._build(ModeKeys.EVAL, dataset)
        if checkpoint_path is not None:
            self._checkpoint.restore(checkpoint_path).expect_partial()
        state = self._ensure_state()
        if "eval" not in self._functions:
            with self._strategy.scope(), tf.init_scope():
                self._loss_metric = Metric(
                    "eval_loss",
                    {"total": [], "count": []},
                    lambda total, count: tf.math.divide_no_nan(total, count),
                )
            strategy = self._strategy

            @tf_function
            def eval_step(element: Any) -> None:
                strategy.run(self._replica_eval, args=(element,))

            self._functions["eval"] = eval_step
        eval_step = self._functions["eval"]
        self._loss_metric.reset()
        for key, metric in state.metrics.items():
            if not (isinstance(key, tuple) and key[:1] == ("train",)):
                metric.reset()  # the eval graph's metrics; training's run on
        for i, element in enumerate(self._strategy.experimental_distribute_dataset(dataset)):
            if steps is not None and i >= steps:
                break
            eval_step(element)
        results: dict[str, Any] = {
            key: metric.result().numpy() for key, metric in self._eval_metrics.items()
        }
        results["loss"] = self._loss_metric.result().numpy()
        results["global_step"] = state.global_step.numpy()
        if self._is_chief():
            eval_dir = os.path.join(self._model_dir, "eval" if name is None else f"eval_{name}")
            with tf.summary.create_file_writer(eval_dir).as_default():
                for key, value in results.items():
                    if key != "global_step":
                        _scalar_summary(key, value, int(results["global_step"]))
        return results

    # -- predict ------------------------------------------------------------------------

    def _replica_predict(self, element: Any) -> Any:
        import tensorflow as tf

        state = self._ensure_state()
        features, _ = self._split(element)
        spec, _inv = invoke(
            state,
            ModeKeys.PREDICT,
            False,
            lambda: self._call_model_fn(features, None, ModeKeys.PREDICT),
        )
        if spec.predictions is None:
            raise ValueError(
                "est2tpu tf2 facade: in PREDICT mode the model_fn must return predictions"
            )
        return tf.nest.map_structure(tf.convert_to_tensor, spec.predictions)

    def predict(
        self,
        input_fn: Callable[..., Any],
        predict_keys: Any = None,
        hooks: Any = None,
        checkpoint_path: str | None = None,
        yield_single_examples: bool = True,
    ) -> Iterator[Any]:
        """Yield predictions, one example at a time (or one batch at a time)."""
        import tensorflow as tf

        if hooks:
            raise NotImplementedError("est2tpu tf2 facade: predict(hooks=...) is not supported")
        dataset = self._dataset(input_fn, ModeKeys.PREDICT)
        self._build(ModeKeys.PREDICT, dataset)
        if checkpoint_path is not None:
            self._checkpoint.restore(checkpoint_path).expect_partial()
        if "predict" not in self._functions:
            strategy = self._strategy

            @tf_function
            def predict_step(element: Any) -> Any:
                out = strategy.run(self._replica_predict, args=(element,))
                return tf.nest.map_structure(lambda t: strategy.gather(t, axis=0), out)

            self._functions["predict"] = predict_step
        predict_step = self._functions["predict"]
        for element in self._strategy.experimental_distribute_dataset(dataset):
            batch = tf.nest.map_structure(lambda t: t.numpy(), predict_step(element))
            if isinstance(batch, dict) and predict_keys is not None:
                keys = [predict_keys] if isinstance(predict_keys, str) else list(predict_keys)
                batch = {k: batch[k] for k in keys}
            if not yield_single_examples:
                yield batch
                continue
            size = len(tf.nest.flatten(batch)[0])
            for i in range(size):
                yield tf.nest.map_structure(lambda a, i=i: a[i], batch)

    # -- export -------------------------------------------------------------------------

    def export_saved_model(
        self,
        export_dir_base: str,
        serving_input_receiver_fn: Callable[[], Any],
        assets_extra: Any = None,
        as_text: bool = False,
        checkpoint_path: str | None = None,
        experimental_mode: str = ModeKeys.PREDICT,
    ) -> bytes:
        """Write a SavedModel whose `serving_default` runs the model_fn in PREDICT mode.

        The serving_input_receiver_fn may build TF1 placeholders: it runs in a TF1 graph
        (`tf.compat.v1.wrap_function`) and is pruned to a function of its receiver tensors.
        Returns the export directory as bytes, like Estimator.
        """
        from est2tpu.runtime.tf2.exporter import export_saved_model

        return export_saved_model(
            self,
            export_dir_base,
            serving_input_receiver_fn,
            assets_extra=assets_extra,
            as_text=as_text,
            checkpoint_path=checkpoint_path,
            experimental_mode=experimental_mode,
        )

"""`tf.compat.v1.layers` functions with the same signatures and TF1 defaults, each layer created
once per call site and reused on every later call of the model_fn."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from est2tpu.runtime.tf2._core import collect, current, facade_owned, stored
from est2tpu.runtime.tf2._keras import keras

# The construction site of a class-form layer being called (see `_ClassForm`): its layer is
# keyed by where it was created, not by where it is called.
_site: list[Any] = []
# The layer that construction site's call made or found (see `_ClassForm.__getattr__`).
_made: list[Any] = []


def _layer(kind: str, name: str | None, make: Callable[[str], Any], depth: int = 2) -> Any:
    """The layer of this call site (`depth` frames up is the user's code)."""
    inv = current(f"tf2.layers.{kind}")
    class_form = bool(_site)
    # A named layer is TF1's variable `<variable scope>/<name>`: the same name in another
    # `tf.compat.v1.variable_scope` is another layer, in the same one (reuse) this one.
    key: Any = ("name", _scoped(name)) if name else _site.pop() if _site else inv.site_key(depth)
    state = inv.state
    layer = stored("layer", lambda: make(name or state.unique_name(kind)), key, state.layers)
    inv.used_layers.append(layer)
    if class_form:
        _made.append(layer)
    return layer


def _scoped(name: str) -> str:
    import tensorflow as tf

    scope: str = tf.compat.v1.get_variable_scope().name
    return f"{scope}/{name}" if scope else name


def _run(layer: Any, *args: Any, **kwargs: Any) -> Any:
    """Call a facade layer; its weights join the model_fn graph's variable collections, as
    a TF1 layer's did (`tf.compat.v1.trainable_variables()` in the model_fn lists them)."""
    with facade_owned():
        out = layer(*args, **kwargs)
    collect(current("a layer"), layer.weights)
    return out


def _training(training: Any) -> Any:
    # The build trace only creates variables: no moving-average updates, no dropout draws.
    return False if current("a layer").building else training


def dense(
    inputs: Any,
    units: int,
    activation: Any = None,
    use_bias: bool = True,
    kernel_initializer: Any = None,
    bias_initializer: Any = "zeros",
    kernel_regularizer: Any = None,
    bias_regularizer: Any = None,
    activity_regularizer: Any = None,
    kernel_constraint: Any = None,
    bias_constraint: Any = None,
    trainable: bool = True,
    name: str | None = None,
    reuse: Any = None,
) -> Any:
    """`tf.compat.v1.layers.dense` (glorot-uniform kernel, zero bias, as in TF1)."""
    layer = _layer(
        "dense",
        name,
        lambda n: keras().layers.Dense(
            units,
            activation=activation,
            use_bias=use_bias,
            kernel_initializer=kernel_initializer or "glorot_uniform",
            bias_initializer=bias_initializer or "zeros",
            kernel_regularizer=kernel_regularizer,
            bias_regularizer=bias_regularizer,
            activity_regularizer=activity_regularizer,
            kernel_constraint=kernel_constraint,
            bias_constraint=bias_constraint,
            trainable=trainable,
            name=n,
        ),
    )
    return _run(layer, inputs)


def batch_normalization(
    inputs: Any,
    axis: int = -1,
    momentum: float = 0.99,
    epsilon: float = 1e-3,
    center: bool = True,
    scale: bool = True,
    beta_initializer: Any = "zeros",
    gamma_initializer: Any = "ones",
    moving_mean_initializer: Any = "zeros",
    moving_variance_initializer: Any = "ones",
    beta_regularizer: Any = None,
    gamma_regularizer: Any = None,
    beta_constraint: Any = None,
    gamma_constraint: Any = None,
    training: Any = False,
    trainable: bool = True,
    name: str | None = None,
    reuse: Any = None,
    renorm: bool = False,
    renorm_clipping: Any = None,
    renorm_momentum: float = 0.99,
    fused: Any = None,
    virtual_batch_size: Any = None,
    adjustment: Any = None,
) -> Any:
    """`tf.compat.v1.layers.batch_normalization`.

    Batch statistics are taken over the *global* batch (synchronized across replicas), so
    N replicas compute what one device computed on the whole batch (on a TPU too: its
    replicas are one program), except where each replica runs an XLA program of its own (XLA
    over several local replicas), in which XLA compiles no collective for CPU devices: there,
    as on a TPU core under TPUEstimator, a replica's statistics are its own batch's (over
    8 CPU replicas, the numbers of 8 replicas whose statistics are their own, to 6 digits;
    see `tests/tf2/test_tf2_e2e.py`). The moving averages
    update when the layer runs with `training=True` (TF1's UPDATE_OPS, applied for you).
    """
    if renorm or virtual_batch_size is not None or adjustment is not None:
        raise NotImplementedError(
            "est2tpu tf2 facade: batch_normalization with renorm, virtual_batch_size or "
            "adjustment is not supported"
        )
    synchronized = not current("a layer").state.replica_programs
    layer = _layer(
        "batch_normalization",
        name,
        lambda n: keras().layers.BatchNormalization(
            axis=axis,
            momentum=momentum,
            epsilon=epsilon,
            center=center,
            scale=scale,
            beta_initializer=beta_initializer or "zeros",
            gamma_initializer=gamma_initializer or "ones",
            moving_mean_initializer=moving_mean_initializer or "zeros",
            moving_variance_initializer=moving_variance_initializer or "ones",
            beta_regularizer=beta_regularizer,
            gamma_regularizer=gamma_regularizer,
            beta_constraint=beta_constraint,
            gamma_constraint=gamma_constraint,
            trainable=trainable,
            synchronized=synchronized,
            name=n,
        ),
    )
    return _run(layer, inputs, training=_training(training))


def dropout(
    inputs: Any,
    rate: float = 0.5,
    noise_shape: Any = None,
    seed: Any = None,
    training: Any = False,
    name: str | None = None,
) -> Any:
    """`tf.compat.v1.layers.dropout` (`rate` is the fraction dropped, as in TF1)."""
    layer = _layer(
        "dropout",
        name,
        lambda n: keras().layers.Dropout(rate, noise_shape=noise_shape, seed=seed, name=n),
    )
    return _run(layer, inputs, training=_training(training))


def _conv(kind: str, cls_name: str, inputs: Any, filters: int, kernel_size: Any, **kw: Any) -> Any:
    name = kw.pop("name", None)
    kw.pop("reuse", None)
    kw["kernel_initializer"] = kw.get("kernel_initializer") or "glorot_uniform"
    kw["bias_initializer"] = kw.get("bias_initializer") or "zeros"
    layer = _layer(
        kind,
        name,
        lambda n: getattr(keras().layers, cls_name)(filters, kernel_size, name=n, **kw),
        depth=3,
    )
    return _run(layer, inputs)


def conv2d(
    inputs: Any,
    filters: int,
    kernel_size: Any,
    strides: Any = (1, 1),
    padding: str = "valid",
    data_format: str = "channels_last",
    dilation_rate: Any = (1, 1),
    activation: Any = None,
    use_bias: bool = True,
    kernel_initializer: Any = None,
    bias_initializer: Any = "zeros",
    kernel_regularizer: Any = None,
    bias_regularizer: Any = None,
    activity_regularizer: Any = None,
    kernel_constraint: Any = None,
    bias_constraint: Any = None,
    trainable: bool = True,
    name: str | None = None,
    reuse: Any = None,
) -> Any:
    """`tf.compat.v1.layers.conv2d`."""
    return _conv(
        "conv2d",
        "Conv2D",
        inputs,
        filters,
        kernel_size,
        strides=strides,
        padding=padding,
        data_format=data_format,
        dilation_rate=dilation_rate,
        activation=activation,
        use_bias=use_bias,
        kernel_initializer=kernel_initializer,
        bias_initializer=bias_initializer,
        kernel_regularizer=kernel_regularizer,
        bias_regularizer=bias_regularizer,
        activity_regularizer=activity_regularizer,
        kernel_constraint=kernel_constraint,
        bias_constraint=bias_constraint,
        trainable=trainable,
        name=name,
    )


def conv1d(
    inputs: Any,
    filters: int,
    kernel_size: Any,
    strides: Any = 1,
    padding: str = "valid",
    data_format: str = "channels_last",
    dilation_rate: Any = 1,
    activation: Any = None,
    use_bias: bool = True,
    kernel_initializer: Any = None,
    bias_initializer: Any = "zeros",
    kernel_regularizer: Any = None,
    bias_regularizer: Any = None,
    activity_regularizer: Any = None,
    kernel_constraint: Any = None,
    bias_constraint: Any = None,
    trainable: bool = True,
    name: str | None = None,
    reuse: Any = None,
) -> Any:
    """`tf.compat.v1.layers.conv1d`."""
    return _conv(
        "conv1d",
        "Conv1D",
        inputs,
        filters,
        kernel_size,
        strides=strides,
        padding=padding,
        data_format=data_format,
        dilation_rate=dilation_rate,
        activation=activation,
        use_bias=use_bias,
        kernel_initializer=kernel_initializer,
        bias_initializer=bias_initializer,
        kernel_regularizer=kernel_regularizer,
        bias_regularizer=bias_regularizer,
        activity_regularizer=activity_regularizer,
        kernel_constraint=kernel_constraint,
        bias_constraint=bias_constraint,
        trainable=trainable,
        name=name,
    )


def _pool(
    kind: str,
    cls_name: str,
    inputs: Any,
    pool_size: Any,
    strides: Any,
    padding: str,
    data_format: str,
    name: str | None,
) -> Any:
    layer = _layer(
        kind,
        name,
        lambda n: getattr(keras().layers, cls_name)(
            pool_size, strides=strides, padding=padding, data_format=data_format, name=n
        ),
        depth=3,
    )
    return _run(layer, inputs)


def max_pooling2d(
    inputs: Any,
    pool_size: Any,
    strides: Any,
    padding: str = "valid",
    data_format: str = "channels_last",
    name: str | None = None,
) -> Any:
    """`tf.compat.v1.layers.max_pooling2d` (`strides` is required, as in TF1)."""
    return _pool(
        "max_pooling2d", "MaxPooling2D", inputs, pool_size, strides, padding, data_format, name
    )


def average_pooling2d(
    inputs: Any,
    pool_size: Any,
    strides: Any,
    padding: str = "valid",
    data_format: str = "channels_last",
    name: str | None = None,
) -> Any:
    """`tf.compat.v1.layers.average_pooling2d`."""
    return _pool(
        "average_pooling2d",
        "AveragePooling2D",
        inputs,
        pool_size,
        strides,
        padding,
        data_format,
        name,
    )


def max_pooling1d(
    inputs: Any,
    pool_size: Any,
    strides: Any,
    padding: str = "valid",
    data_format: str = "channels_last",
    name: str | None = None,
) -> Any:
    """`tf.compat.v1.layers.max_pooling1d`."""
    return _pool(
        "max_pooling1d", "MaxPooling1D", inputs, pool_size, strides, padding, data_format, name
    )


def flatten(inputs: Any, name: str | None = None, data_format: str = "channels_last") -> Any:
    """`tf.compat.v1.layers.flatten`."""
    layer = _layer(
        "flatten", name, lambda n: keras().layers.Flatten(data_format=data_format, name=n)
    )
    return _run(layer, inputs)


class _ClassForm:
    """`tf.compat.v1.layers.Dense(...)` and the other class forms, created in a model_fn
    (the shape TensorFlow's own migration guide uses): the object remembers its arguments and
    where it was created; calling it runs the functional form above with them, so its Keras
    layer is created once per construction site, reused on every later call of the model_fn
    and shared by every call of the same object, as a TF1 layer object's variables are."""

    _function: Callable[..., Any]

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self._args = args
        self._kwargs = kwargs
        self._key = current(f"tf2.layers.{type(self).__name__}").site_key(1)
        self._layer: Any = None

    def __call__(self, inputs: Any, *args: Any, **kwargs: Any) -> Any:
        # `training=` (Dropout, BatchNormalization) is a call argument in the class form.
        _site.append(self._key)
        _made.clear()
        try:
            return type(self)._function(inputs, *self._args, *args, **{**self._kwargs, **kwargs})
        finally:
            _site.clear()
            self._layer = _made[-1] if _made else self._layer
            _made.clear()

    def __getattr__(self, name: str) -> Any:
        """`dense.weights`, `dense.kernel`, `dense.trainable_variables`, ...: those of its
        Keras layer, once a call has made it (a TF1 layer object makes its variables at its
        first call too)."""
        layer = self.__dict__.get("_layer")
        if layer is None or name.startswith("__"):
            raise AttributeError(f"{type(self).__name__!r} has no {name!r} before its first call")
        return getattr(layer, name)


def _class_form(name: str, function: Callable[..., Any]) -> type[_ClassForm]:
    return type(name, (_ClassForm,), {"_function": staticmethod(function), "__doc__": (
        f"`tf.compat.v1.layers.{name}`: the class form of `{function.__name__}`."
    )})  # fmt: skip


Dense = _class_form("Dense", dense)
BatchNormalization = _class_form("BatchNormalization", batch_normalization)
Dropout = _class_form("Dropout", dropout)
Conv1D = _class_form("Conv1D", conv1d)
Conv2D = _class_form("Conv2D", conv2d)
MaxPooling1D = _class_form("MaxPooling1D", max_pooling1d)
MaxPooling2D = _class_form("MaxPooling2D", max_pooling2d)
AveragePooling2D = _class_form("AveragePooling2D", average_pooling2d)
Flatten = _class_form("Flatten", flatten)

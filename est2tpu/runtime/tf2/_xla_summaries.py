"""Summaries a model_fn writes inside an XLA program, written outside it.

XLA compiles none of a summary's ops: the writer, the step it is labelled with and the
`record_if` condition are resources of the host ("Uninitialized arguments ... summary_cond"
on one device; "Trying to access resource ... located in device CPU:0" over several). So
while the facade traces a program it compiles, every `tf.summary.write` (what `tf.summary.*`
and, under a default writer, `tf.compat.v1.summary.*` end in) is recorded instead of run: its
tag and metadata at trace time, its tensor (and an explicit step) as outputs of the program.
After the program has run, `write` writes them with TensorFlow's own `tf.summary.write`,
under the writer, step and `record_if` the facade set, and by the strategy's rule (replica 0
over several replicas), as the uncompiled step writes them. What is written is the same;
only the tensors are computed every step, whether the step records or not.

The interception is a function installed once in place of `tf.summary.write`, which records
only in a thread that is tracing a compiled program (`capturing`), so the replicas' threads,
tracing their programs side by side, each record their own.
"""

from __future__ import annotations

import contextlib
import threading
import types
from collections.abc import Callable, Iterator
from typing import Any

_LOCAL = threading.local()
_INSTALL = threading.Lock()
_installed = False


class Captured:
    """What one trace of a compiled program recorded: per write, its tag, its metadata,
    whether it named its step, and for a lazy tensor (a function TensorBoard's image and
    audio summaries pass, whose ops XLA may not compile: PNG encoding) the function and
    which of its closure's cells hold tensors of the program; `values` are the traced
    tensors, in order: the tensor or those cells' tensors, then the step if named."""

    def __init__(self) -> None:
        self.writes: list[tuple[str, Any, bool, tuple[Any, list[int]] | None]] = []
        self.values: list[Any] = []

    def add(self, tag: Any, tensor: Any, step: Any, metadata: Any) -> None:
        import tensorflow as tf

        lazy = None
        if callable(tensor):
            # TensorBoard wraps its lazy tensor's function in a LazyTensorCreator.
            tensor = getattr(tensor, "_tensor_callable", tensor)
            graph = tf.compat.v1.get_default_graph()
            cells = getattr(tensor, "__closure__", None) or ()
            traced = [
                i
                for i, cell in enumerate(cells)
                if isinstance(cell.cell_contents, tf.Tensor)
                and getattr(cell.cell_contents, "graph", None) is graph
            ]
            if isinstance(tensor, types.FunctionType) and traced:
                lazy = (tensor, traced)
                self.values.extend(cells[i].cell_contents for i in traced)
            else:
                tensor = tensor()
        if lazy is None:
            self.values.append(tf.identity(tensor))
        if step is not None:
            self.values.append(tf.cast(step, tf.int64))
        self.writes.append((str(tag), metadata, step is not None, lazy))

    @staticmethod
    def lazy_with(fn: Any, traced: list[int], values: list[Any]) -> Any:
        """`fn` with the traced cells of its closure holding `values` instead."""
        cells = list(fn.__closure__)
        for i, value in zip(traced, values):
            cells[i] = types.CellType(value)
        again = types.FunctionType(
            fn.__code__, fn.__globals__, fn.__name__, fn.__defaults__, tuple(cells)
        )
        again.__kwdefaults__ = fn.__kwdefaults__
        return again


def _install() -> None:
    global _installed
    with _INSTALL:
        if _installed:
            return
        import tensorflow as tf
        from tensorflow.python.ops import summary_ops_v2

        original = summary_ops_v2.write

        def write(
            tag: Any, tensor: Any, step: Any = None, metadata: Any = None, name: Any = None
        ) -> Any:
            captured: Captured | None = getattr(_LOCAL, "captured", None)
            if captured is None or not summary_ops_v2.has_default_writer():
                return original(tag, tensor, step=step, metadata=metadata, name=name)
            if step is _HOST_STEP:
                step = None  # the writer's own step, which tf.compat.v1.summary passes on
            captured.add(tag, tensor, step, metadata)
            return tf.constant(True)

        write.__doc__ = original.__doc__
        summary_ops_v2.write = write
        # tf.summary.scalar & co. (TensorBoard's) call the public symbol.
        for module in {id(m): m for m in (tf.summary, tf.compat.v2.summary)}.values():
            if getattr(module, "write", None) is original:
                module.write = write
        _installed = True


class _HostStep(int):
    """Stands for the writer's step while a compiled program traces: the step is a variable
    of the host, and a program that captured it would read it (XLA reads every variable a
    program captures, and one on another device fails)."""


_HOST_STEP = _HostStep(0)


@contextlib.contextmanager
def capturing(captured: Captured) -> Iterator[None]:
    """Record, in this thread, every summary written while the block traces."""
    from tensorflow.python.ops import summary_ops_v2

    _install()
    outer = getattr(_LOCAL, "captured", None)
    outer_step = summary_ops_v2.get_step()
    _LOCAL.captured = captured
    if outer_step is not None:
        summary_ops_v2.set_step(_HOST_STEP)
    try:
        yield
    finally:
        _LOCAL.captured = outer
        if outer_step is not None:
            summary_ops_v2.set_step(outer_step)


def carried(
    fn: Callable[..., Any],
) -> tuple[Callable[..., Any], Callable[[Callable[..., Any]], Callable[..., Any]]]:
    """`fn` as a program that also returns the summaries' tensors, and `around`, which
    makes of the program once compiled the call the step makes: it tells the program
    whether this step records summaries (`tf.summary.should_record_summaries()` outside
    it: inside, that is what the model_fn is told, and the facade's TF1 metrics update on
    the steps that record), writes the summaries from its outputs (the writes of the
    program's last trace) and returns what `fn` returned."""
    last = Captured()

    def program(*args: Any, record: Any, **kwargs: Any) -> Any:
        import tensorflow as tf

        nonlocal last
        captured = Captured()
        with capturing(captured), tf.summary.record_if(record):
            out = fn(*args, **kwargs)
        last = captured
        return out, list(captured.values)

    def write(values: Any) -> None:
        import tensorflow as tf

        values = list(values)
        for tag, metadata, has_step, lazy in last.writes:
            if lazy is None:
                value = values.pop(0)
            else:
                lazy_fn, traced = lazy
                value = Captured.lazy_with(lazy_fn, traced, [values.pop(0) for _ in traced])
            step = values.pop(0) if has_step else None
            tf.summary.write(tag, value, step=step, metadata=metadata)

    def around(compiled: Callable[..., Any]) -> Callable[..., Any]:
        def call(*args: Any) -> Any:
            import tensorflow as tf

            out, values = compiled(*args, record=tf.summary.should_record_summaries())
            write(values)
            return out

        return call

    return program, around

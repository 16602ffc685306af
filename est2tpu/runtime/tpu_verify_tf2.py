"""TPU semantics for the tf2 target's Estimator facade, for `est2tpu verify --tpu --target tf2`.

`est2tpu.runtime.verify_hook` applies `PATCHES` when the program imports the facade
(``est2tpu.runtime.tf2``), beside those of `est2tpu.runtime.tpu_verify`. The facade runs the
model_fn under `tf.distribute` with `tf.function`; on a TPU, XLA compiles its train step.
Here:

- each ``train()`` runs one step with ``jit_compile=True`` (XLA on CPU, the kernels XLA shares
  with TPU); a compile error becomes a finding at the line TensorFlow names ("The op is
  created at");
- the input of each ``train()``/``evaluate()`` is checked from its ``element_spec``: strings
  are errors (TPU102); dimensions unknown when the graph is built are warnings (TPU114),
  errors with ``--strict-shapes``, since TPUStrategy pads a partial last batch but XLA
  compiles each new shape again;
- ``evaluate()`` runs one batch; a second ``train()`` or ``evaluate()`` ends the program.
"""

from __future__ import annotations

import inspect
import os
import re
from collections.abc import Callable
from types import ModuleType
from typing import Any

from est2tpu.runtime import tpu_verify

STRICT_SHAPES_ENV = "EST2TPU_VERIFY_STRICT_SHAPES"

_UNSUPPORTED = re.compile(r"(\w+) \(No registered '(\w+)' OpKernel for XLA")
_FRAME = re.compile(r'File "([^"]+)", line (\d+)')
_STRING_OPS = re.compile(r"^(AsString|String|Substr|Regex|Unicode|DecodeCSV|ParseExample)")


def _frames(text: str) -> list[tuple[str, int]]:
    """The frames of one "The op is created at" trace; TensorFlow drops the leading '/'."""
    out = []
    for filename, line in _FRAME.findall(text):
        path = filename if os.path.isabs(filename) else os.sep + filename
        out.append((path if os.path.exists(path) else filename, int(line)))
    return out


def _kind(op_type: str) -> tuple[str, str]:
    """The finding ID and wording for an operation XLA has no kernel for."""
    if op_type in ("PyFunc", "EagerPyFunc", "PyFuncStateless"):
        return "TPU108", "a Python function (tf.py_function / tf.numpy_function) has"
    if _STRING_OPS.match(op_type):
        return "TPU107", f"a string operation ({op_type}) reaches the TPU; it has"
    if op_type.startswith(("HashTable", "LookupTable", "MutableHashTable", "InitializeTable")):
        return "TPU106", f"a lookup table ({op_type}) is used in the TPU step; it has"
    if "Summary" in op_type:
        return "TPU105", f"a summary ({op_type}) in the TPU step has"
    return "TPU108", f"operation {op_type} has"


def translate_xla(exc: BaseException, fallback: tuple[str, int] | None, before: int) -> None:
    """One finding per operation XLA could not compile, at the line TensorFlow names. A
    failure with no line of the project, after an error of the same call (``before``, the
    error count when it started), is that error's consequence."""
    consequence = tpu_verify.state["errors_reported"] > before
    text = str(exc)
    blocks = text.split("The op is created at:")
    found = False
    # The unsupported operations are named before the trace of the first; each later block
    # starts with the trace of the operation named at the end of the previous one.
    for i, block in enumerate(blocks[:-1]):
        names = _UNSUPPORTED.findall(block)
        if not names:
            continue
        op_type = names[-1][1]
        check_id, what = _kind(op_type)
        frames = _frames(blocks[i + 1])
        # An operation the facade itself made (its innermost frame is not the project's) has
        # no line of the user's: the train() call stands for it.
        own = bool(frames) and tpu_verify.in_project(frames[-1][0])
        where = tpu_verify.user_frame(frames) if own else None
        found = True
        if where is None and consequence:
            continue
        tpu_verify.report(
            check_id,
            f"{what} no XLA kernel, so XLA cannot compile the train step",
            where or fallback,
        )
    if not found and not consequence:
        frames = _frames(text)
        where = tpu_verify.user_frame(frames) or fallback
        first = " ".join(text.split())[:300]
        tpu_verify.report("TPU100", f"XLA compiling the train step fails: {first}", where)


def _input_site(input_fn: Callable[..., Any], kwargs: dict[str, Any]) -> Any:
    """input_fn called again inside a graph, so that its dataset operations carry the
    user's lines (eager datasets have no tracebacks); None when it cannot be."""
    import tensorflow as tf

    graph = tf.Graph()
    with graph.as_default():
        try:
            return input_fn(**kwargs)
        except Exception:  # noqa: BLE001 -- an input_fn that works only eagerly: no lines
            return None


def _check_input(estimator: Any, input_fn: Callable[..., Any], mode: str) -> None:
    import tensorflow as tf

    names = inspect.signature(input_fn).parameters
    kwargs: dict[str, Any] = {}
    if "params" in names:
        kwargs["params"] = estimator._params
    if "mode" in names:
        kwargs["mode"] = mode
    if "config" in names:
        kwargs["config"] = estimator._config
    graph_value = _input_site(input_fn, kwargs)
    site = tpu_verify.call_site()
    value = graph_value if graph_value is not None else input_fn(**kwargs)
    strict = os.environ.get(STRICT_SHAPES_ENV) == "1"
    if isinstance(value, tf.data.Dataset) or graph_value is not None:
        tpu_verify.check_input(
            value, site, unknown_dim="TPU114", severity="error" if strict else None
        )


def _checked(kind: str, method: Callable[..., Any]) -> Callable[..., Any]:
    def wrapper(self: Any, input_fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        calls: set[str] = self.__dict__.setdefault("_est2tpu_verify_calls", set())
        if kind in calls:
            tpu_verify.end(f"a second {kind}() of the same Estimator")
        calls.add(kind)
        site = tpu_verify.call_site()
        before = tpu_verify.state["errors_reported"]
        try:
            _check_input(self, input_fn, "train" if kind == "train" else "eval")
        except Exception as exc:  # noqa: BLE001 -- our check failed, not the program
            tpu_verify.internal(f"the check of {kind}()'s input", exc)
        if kind == "train":
            self._config.jit_compile = True
            self._config.steps_per_execution = 1
            self._functions.pop("train", None)
            self._functions.pop("train-infinite", None)
            kwargs = {"hooks": kwargs.get("hooks"), "steps": 1}
            args = ()
        else:
            kwargs = {**kwargs, "steps": 1}
            args = ()
        try:
            result = method(self, input_fn, *args, **kwargs)
        except Exception as exc:  # noqa: BLE001 -- reported as a finding
            translate_xla(exc, site, before)
            tpu_verify.state["checked"].append({"call": kind, "graph": False})
            if kind == "evaluate" or tpu_verify.state["errors_reported"] == before:
                tpu_verify.end(f"{kind}(), which failed under XLA")
            return self
        tpu_verify.state["checked"].append({"call": kind, "graph": True})
        return result

    return wrapper


def patch_facade(module: ModuleType) -> None:
    cls = module.Estimator
    for kind in ("train", "evaluate"):
        setattr(cls, kind, _checked(kind, cls.__dict__[kind]))


PATCHES: dict[str, Callable[[ModuleType], None]] = {
    "est2tpu.runtime.tf2._estimator": patch_facade,
}

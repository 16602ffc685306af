"""TPU semantics inside the user's program, for `est2tpu verify --tpu` (TensorFlow 2.15).

Loaded by `est2tpu.runtime.verify_hook` when ``$EST2TPU_VERIFY_TPU_CORES`` is set. It makes
the program's own ``TPUEstimator`` take its TPU path on a machine without a TPU:

- ``TPUEstimator(use_tpu=...)`` is built with ``use_tpu=True``;
- the estimator's context gets the TPU system metadata of N cores on one host, what it would
  hold after asking the TPU for its topology (the only thing it asks the TPU before it runs);
- ``train()`` and ``evaluate()`` then call ``input_fn`` and ``model_fn`` as for a TPU, and
  TensorFlow's own TPU checks run; when the graph is built (before any session touches a
  device) the checks of `tpu_verify_graph` run on the operations of the TPU cluster, and the
  call returns without training (``evaluate()`` returns zeros for every metric);
- a second ``train()`` or ``evaluate()`` of the same estimator, or a ``predict()`` or an
  export (they need the trained model), ends the program: what could be checked was.

Each problem is written to the verify record as ``path:line:col``, placed at the innermost
frame of its traceback that lies in the project (``$EST2TPU_VERIFY_PROJECT``).
"""

from __future__ import annotations

import inspect
import linecache
import os
import re
import sys
import traceback
from collections.abc import Callable, Sequence
from types import ModuleType
from typing import Any, NoReturn

from est2tpu.runtime import tpu_verify_graph as graph_checks
from est2tpu.runtime.tpu_verify_ids import CHECKS

CORES_ENV = "EST2TPU_VERIFY_TPU_CORES"
PROJECT_ENV = "EST2TPU_VERIFY_PROJECT"  # = verify_hook.PROJECT_ENV

# What other checks add (`tpu_verify_xla` registers its own when imported): patches of
# TPUEstimator's module, and calls made once a training graph is checked, with the estimator
# and its "checked" entry (None when the check of the graph failed).
MODULE_PATCHES: list[Callable[[ModuleType], None]] = []
AFTER_TRAIN_GRAPH: list[Callable[[Any, dict[str, Any] | None], None]] = []

state: dict[str, Any] = {
    "checked": [],
    "findings": [],
    "notes": [],
    "internal": [],
    "ended": None,
    "errors_reported": 0,  # every error reported, repeats included
}


class _Checked(BaseException):
    """The graph is built and checked: leave train()/evaluate() without running it.

    A BaseException, so that ``except Exception`` in TensorFlow and user code lets it pass."""

    def __init__(self, result: Any = None) -> None:
        super().__init__()
        self.result = result


def cores() -> int:
    return int(os.environ.get(CORES_ENV, "0") or 0)


def enabled() -> bool:
    return cores() > 0


# -- placing findings --------------------------------------------------------------------------


def _project() -> str:
    return os.path.realpath(os.environ.get(PROJECT_ENV, os.getcwd()))


def in_project(filename: str) -> bool:
    root = _project()
    path = os.path.realpath(filename)
    if not (path == root or path.startswith(root + os.sep)):
        return False
    return "site-packages" not in path.split(os.sep)


def user_frame(frames: Sequence[tuple[str, int]]) -> tuple[str, int] | None:
    """The innermost of ``frames`` (outermost first) in the project."""
    for filename, line in reversed(frames):
        if in_project(filename):
            return filename, line
    return None


def call_site() -> tuple[str, int] | None:
    return user_frame([(f.filename, f.lineno or 0) for f in traceback.extract_stack()])


def _column(filename: str, line: int, hint: str | None) -> int:
    text = linecache.getline(filename, line)
    if hint:
        found = text.find(hint)
        if found >= 0:
            return found + 1
    return len(text) - len(text.lstrip()) + 1 if text.strip() else 1


# An error that proves a warning at the same line: XLA refused what TPU112 warned about.
_SUPERSEDES = {"TPU115": "TPU112"}


def report(
    check_id: str,
    message: str,
    where: tuple[str, int] | None,
    *,
    hint: str | None = None,
    severity: str | None = None,
) -> bool:
    """Record a finding (once per ID and place). False when it was already recorded.
    ``severity`` overrides the ID's (a warning made an error by ``--strict-shapes``)."""
    check = CHECKS[check_id]
    severity = severity or check.severity
    if severity == "error":
        state["errors_reported"] += 1
    path, line = where if where is not None else ("", 0)
    column = _column(path, line, hint) if path else 0
    shown = os.path.relpath(os.path.realpath(path), _project()) if path else ""
    for known in state["findings"]:
        if (known["id"], known["path"], known["line"]) == (check_id, shown, line):
            return False
        if (known["path"], known["line"]) == (shown, line) and _SUPERSEDES.get(
            known["id"]
        ) == check_id:
            return False
    state["findings"][:] = [
        known
        for known in state["findings"]
        if not (
            _SUPERSEDES.get(check_id) == known["id"]
            and (known["path"], known["line"]) == (shown, line)
        )
    ]
    state["findings"].append(
        {
            "id": check_id,
            "severity": severity,
            "path": shown,
            "line": line,
            "column": column,
            "message": f"{message}; fix: {check.fix}",
        }
    )
    return True


def internal(what: str, exc: BaseException) -> None:
    """A failure of est2tpu's own checks: the run cannot tell, whatever else it found."""
    tail = traceback.format_exception_only(type(exc), exc)[-1].strip()
    state["internal"].append(f"{what}: {tail}")


def _report_problem(problem: graph_checks.Problem, fallback: tuple[str, int] | None) -> None:
    report(problem.id, problem.message, user_frame(problem.frames) or fallback)


# -- the input pipeline ------------------------------------------------------------------------


def _batch_site(dataset: Any) -> tuple[str, int] | None:
    """The user's line that batched ``dataset`` without drop_remainder, else its last line."""
    op = getattr(getattr(dataset, "_variant_tensor", None), "op", None)
    last = user_frame(graph_checks.frames_of(op)) if op is not None else None
    while op is not None:
        if op.type in ("BatchDatasetV2", "PaddedBatchDatasetV2"):
            drop = op.inputs[-1]
            from tensorflow.python.framework import tensor_util

            value = tensor_util.constant_value(drop)
            if value is not None and not bool(value):
                return user_frame(graph_checks.frames_of(op)) or last
        variants = [t for t in op.inputs if t.dtype.name == "variant"]
        op = variants[0].op if variants else None
    return last


def check_input(
    value: Any,
    site: tuple[str, int] | None,
    *,
    unknown_dim: str = "TPU103",
    severity: str | None = None,
) -> None:
    """input_fn's return value: only numeric tensors of static shape reach the infeed.
    ``unknown_dim``/``severity``: the finding for a dimension unknown at graph time."""
    import tensorflow as tf

    if isinstance(value, tf.data.Dataset):
        specs = value.element_spec
        where = _batch_site(value) or site
        last_op = getattr(getattr(value, "_variant_tensor", None), "op", None)
        last = (
            user_frame(graph_checks.frames_of(last_op)) if last_op is not None else None
        ) or site
    else:
        specs = tf.nest.map_structure(
            lambda t: tf.TensorSpec(t.shape, t.dtype) if isinstance(t, tf.Tensor) else None,
            value,
        )
        where = last = site
    from tensorflow.python.util import nest

    flat = nest.flatten_with_joined_string_paths(specs)
    for name, spec in flat:
        if not isinstance(spec, tf.TensorSpec):
            continue
        label = f"input '{name}'" if name else "the input"
        if spec.dtype == tf.string:
            report(
                "TPU102",
                f"{label} is a string tensor; the TPU infeed carries only numbers and bools",
                last,
            )
        elif spec.shape.rank is None or any(d is None for d in spec.shape.as_list()):
            report(
                unknown_dim,
                f"{label} has shape {spec.shape}, not static: the TPU needs every "
                "dimension known when the graph is built",
                where,
                hint="batch(",
                severity=severity,
            )


# -- what TensorFlow's own checks raise --------------------------------------------------------

_TRANSLATIONS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("TPU101", re.compile(r"batch size \d+ must be divisible by number of replicas")),
    ("TPU113", re.compile(r"eval_batch_size in TPUEstimator constructor cannot be `None`")),
    ("TPU102", re.compile(r"not a supported TPU infeed type")),
    (
        "TPU103",
        re.compile(
            r"must be statically known|as_list\(\) is not defined on an unknown"
            r"|must have a fixed size for dimension"
        ),
    ),
    ("TPU104", re.compile(r"must have a batch\s+dimension|got scalar")),
    ("TPU105", re.compile(r"must be from the same graph|while_body")),
)
# What a TensorFlow error may be the consequence of, besides its own ID.
_CAUSES = {"TPU105": ("TPU105", "TPU106", "TPU107", "TPU108")}


def translate(exc: BaseException, estimator: Any, before: int) -> None:
    """Report what TensorFlow raised while building the TPU graph, unless a finding made in
    the same call already names its cause."""
    errors_since = state["errors_reported"] > before
    text = f"{type(exc).__name__}: {exc}"
    tb_frames = [(f.filename, f.lineno or 0) for f in traceback.extract_tb(exc.__traceback__)]
    where = user_frame(tb_frames) or getattr(estimator, "_est2tpu_verify_call_site", None)
    for check_id, pattern in _TRANSLATIONS:
        if pattern.search(str(exc)):
            if check_id in ("TPU101", "TPU113"):  # the constructor's arguments
                where = getattr(estimator, "_est2tpu_verify_site", None) or where
            causes = _CAUSES.get(check_id, (check_id,))
            if not any(f["id"] in causes for f in state["findings"]):
                report(check_id, f"TensorFlow's TPU path: {_one_line(text)}", where)
            return
    if errors_since:
        return  # a consequence of what was already found
    report("TPU100", f"TensorFlow's TPU path fails: {_one_line(text)}", where)


def _one_line(text: str, limit: int = 300) -> str:
    line = " ".join(text.split())
    return line if len(line) <= limit else line[: limit - 3] + "..."


# -- the patches -------------------------------------------------------------------------------


def _system_metadata(self: Any) -> Any:
    """N TPU cores on one host, as the TPU would describe itself."""
    import tensorflow as tf

    master = self._get_master_address()
    metadata = self._lazy_tpu_system_metadata_dict.get(master)
    if metadata is None:
        metadata = tf.tpu.experimental.TPUSystemMetadata(
            num_cores=cores(),
            num_hosts=1,
            num_of_cores_per_host=cores(),
            topology=None,
            devices=[],
        )
        self._lazy_tpu_system_metadata_dict[master] = metadata
    return metadata


def patch_tpu_context(module: ModuleType) -> None:
    module._InternalTPUContext._get_tpu_system_metadata = _system_metadata


def end(reason: str) -> NoReturn:
    """End the program: everything that could be checked was."""
    state["ended"] = reason
    sys.stdout.flush()
    raise SystemExit(0)


def _tpu_init(init: Callable[..., None]) -> Callable[..., None]:
    signature = inspect.signature(init)

    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        self._est2tpu_verify_site = call_site()
        self._est2tpu_verify_calls = set()
        bound = signature.bind(self, *args, **kwargs)
        tpu_config = getattr(bound.arguments.get("config"), "tpu_config", None)
        if getattr(tpu_config, "num_cores_per_replica", None):
            state["notes"].append(
                "model parallelism (TPUConfig.num_cores_per_replica) needs the TPU's topology: "
                "that TPUEstimator is not checked"
            )
            init(self, *args, **kwargs)
            self._est2tpu_verify_tpu = False
            return
        bound.arguments["use_tpu"] = True
        init(*bound.args, **bound.kwargs)
        self._est2tpu_verify_tpu = True

    return __init__


def _checked_call(kind: str, method: Callable[..., Any]) -> Callable[..., Any]:
    """train()/evaluate(): once per estimator, returning when the graph is checked."""

    def wrapper(self: Any, *args: Any, **kwargs: Any) -> Any:
        if not getattr(self, "_est2tpu_verify_tpu", False):
            return method(self, *args, **kwargs)
        if kind in self._est2tpu_verify_calls:
            end(f"a second {kind}() of the same TPUEstimator")
        self._est2tpu_verify_calls.add(kind)
        self._est2tpu_verify_call_site = call_site()
        before = state["errors_reported"]
        try:
            return method(self, *args, **kwargs)
        except _Checked as done:
            return self if kind == "train" else done.result
        except Exception as exc:  # noqa: BLE001 -- reported as a finding
            translate(exc, self, before)
            state["checked"].append({"call": kind, "graph": False})
            if kind == "evaluate":
                end("evaluate(), which failed on the TPU path (the program needs its metrics)")
            return self  # train(): evaluate() is checked next

    return wrapper


def _ending(kind: str, method: Callable[..., Any]) -> Callable[..., Any]:
    def wrapper(self: Any, *args: Any, **kwargs: Any) -> Any:
        if getattr(self, "_est2tpu_verify_tpu", False):
            end(f"{kind}() of a TPUEstimator (it needs the trained model)")
        return method(self, *args, **kwargs)

    return wrapper


def _record_host_calls(record: Callable[..., Any]) -> Callable[..., Any]:
    """eval_metrics and host_call tensors leave the TPU through the outfeed: rank >= 1."""

    def wrapper(self: Any, host_calls: Any) -> Any:
        try:
            _check_host_calls(host_calls)
        except Exception as exc:  # noqa: BLE001 -- our check failed, not the program
            internal("the check of eval_metrics/host_call", exc)
        return record(self, host_calls)

    return wrapper


def _check_host_calls(host_calls: Any) -> None:
    for name, host_call in host_calls.items():
        tensors = host_call[1]
        items = tensors.items() if isinstance(tensors, dict) else enumerate(tensors)
        for key, tensor in items:
            shape = getattr(tensor, "shape", None)
            if shape is not None and shape.rank == 0:
                what = "eval_metrics" if name == "eval_metrics" else name
                op = getattr(tensor, "op", None)
                where = user_frame(graph_checks.frames_of(op)) if op is not None else None
                report(
                    "TPU104",
                    f"{what} gets a scalar ({key!r}: {tensor.name}); tensors leave the "
                    "TPU through the outfeed with a batch dimension",
                    where,
                )


def _from_input_fn(from_input_fn: Callable[..., Any]) -> Callable[..., Any]:
    def wrapper(return_values: Any) -> Any:
        try:
            check_input(return_values, call_site())
        except Exception as exc:  # noqa: BLE001 -- our check failed, not the program
            internal("the check of input_fn's value", exc)
        return from_input_fn(return_values)

    return wrapper


def patch_tpu_estimator(module: ModuleType) -> None:
    cls = module.TPUEstimator
    cls.__init__ = _tpu_init(cls.__init__)
    for kind in ("train", "evaluate"):
        setattr(cls, kind, _checked_call(kind, cls.__dict__[kind]))
    for kind in (
        "predict",
        "export_saved_model",
        "export_savedmodel",
        "experimental_export_all_saved_models",
    ):
        method = getattr(cls, kind, None)
        if method is not None:
            setattr(cls, kind, _ending(kind, method))
    host_call = module._OutfeedHostCall
    host_call.record = _record_host_calls(host_call.record)
    module._Inputs.from_input_fn = staticmethod(_from_input_fn(module._Inputs.from_input_fn))
    for extra in MODULE_PATCHES:
        extra(module)


def _check_graph(estimator: Any, mode: str) -> dict[str, Any] | None:
    import tensorflow as tf

    graph = tf.compat.v1.get_default_graph()
    site = getattr(estimator, "_est2tpu_verify_site", None)
    try:
        ops = graph_checks.cluster_ops(graph)
        for problem in graph_checks.check_ops(ops, mode=mode, cores=cores()):
            _report_problem(problem, site)
    except Exception as exc:  # noqa: BLE001 -- our check failed, not the program
        internal(f"the check of the {mode} graph", exc)
        return None
    call = "train" if mode == "train" else "evaluate"
    checked = {"call": call, "graph": True, "cluster_ops": len(ops)}
    state["checked"].append(checked)
    return checked


def _train_with_spec(original: Callable[..., Any]) -> Callable[..., Any]:
    def wrapper(self: Any, estimator_spec: Any, *args: Any, **kwargs: Any) -> Any:
        if not getattr(self, "_est2tpu_verify_tpu", False):
            return original(self, estimator_spec, *args, **kwargs)
        checked = _check_graph(self, "train")
        for hook in AFTER_TRAIN_GRAPH:
            hook(self, checked)
        # Scaffold.finalize is where summaries or table initializers of the loop fail.
        before = state["errors_reported"]
        try:
            estimator_spec.scaffold.finalize()
        except Exception as exc:  # noqa: BLE001 -- TensorFlow's own check: a finding
            translate(exc, self, before)
        raise _Checked(self)

    return wrapper


def _evaluate_run(original: Callable[..., Any]) -> Callable[..., Any]:
    def wrapper(
        self: Any,
        checkpoint_path: Any,
        scaffold: Any,
        update_op: Any,
        eval_dict: Any,
        *args: Any,
        **kwargs: Any,
    ) -> Any:
        if not getattr(self, "_est2tpu_verify_tpu", False):
            return original(self, checkpoint_path, scaffold, update_op, eval_dict, *args, **kwargs)
        _check_graph(self, "eval")
        before = state["errors_reported"]
        try:
            scaffold.finalize()
        except Exception as exc:  # noqa: BLE001 -- TensorFlow's own check: a finding
            translate(exc, self, before)
        zeros: dict[str, Any] = {str(k): 0.0 for k in eval_dict}
        zeros["global_step"] = 0
        raise _Checked(zeros)

    return wrapper


def patch_estimator(module: ModuleType) -> None:
    cls = module.Estimator
    cls._train_with_estimator_spec = _train_with_spec(cls._train_with_estimator_spec)
    cls._evaluate_run = _evaluate_run(cls._evaluate_run)


def _on_tpu(tpu: str | None = None) -> bool:
    """`est2tpu.runtime.use_tpu` under the check: the program runs as it would on a TPU."""
    return True


def patch_runtime(module: ModuleType) -> None:
    """The runtime's own answer to "is there a TPU?" is yes (``drop_remainder=use_tpu()``,
    ``iterations_per_loop``), as it is on a TPU; nothing connects to one."""
    module.use_tpu = _on_tpu  # type: ignore[attr-defined]
    package = sys.modules.get("est2tpu.runtime")
    if package is not None:
        package.use_tpu = _on_tpu  # type: ignore[attr-defined]


_ESTIMATOR = "tensorflow_estimator.python.estimator."
PATCHES: dict[str, Callable[[ModuleType], None]] = {
    _ESTIMATOR + "tpu.tpu_context": patch_tpu_context,
    _ESTIMATOR + "tpu.tpu_estimator": patch_tpu_estimator,
    _ESTIMATOR + "estimator": patch_estimator,
    "est2tpu.runtime._tpu": patch_runtime,
}


def record() -> dict[str, Any]:
    """What the run found, for the verify record."""
    return {
        "cores": cores(),
        "checked": state["checked"],
        "findings": state["findings"],
        "notes": state["notes"],
        "internal": state["internal"],
        "ended": state["ended"],
    }

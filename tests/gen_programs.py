"""Hypothesis strategies for small Estimator programs: one or two modules, as files."""

from __future__ import annotations

from dataclasses import dataclass

from hypothesis import strategies as st

# name -> (import lines, Estimator spelling, EstimatorSpec spelling, metrics module)
IMPORTS = {
    "tf": ("import tensorflow as tf\n", "tf.estimator.Estimator", "tf.estimator.EstimatorSpec",
           "tf.compat.v1.metrics"),
    "compat_v1": ("import tensorflow.compat.v1 as tf\n", "tf.estimator.Estimator",
                  "tf.estimator.EstimatorSpec", "tf.metrics"),
    "from_estimator": (
        "import tensorflow as tf\nfrom tensorflow import estimator as tf_estimator\n",
        "tf_estimator.Estimator", "tf_estimator.EstimatorSpec", "tf.compat.v1.metrics"),
    "spec_name": (
        "import tensorflow as tf\nfrom tensorflow.estimator import EstimatorSpec\n",
        "tf.estimator.Estimator", "EstimatorSpec", "tf.compat.v1.metrics"),
}  # fmt: skip

METRICS = ("none", "inline", "variable", "key_by_key")
BATCHES = ("literal", "constant", "lambda_arg", "factory_arg")
SPLITS = ("one_module", "model_module", "package")


@dataclass(frozen=True)
class Program:
    imports: str
    metrics: str
    batch: str
    split: str
    batch_size: int

    def files(self) -> dict[str, str]:
        """Relative path -> source."""
        head, est, spec, metrics_mod = IMPORTS[self.imports]
        model = head + "\n\n" + _model_fn(spec, metrics_mod, self.metrics)
        task = _task(est, self.batch, self.batch_size)
        if self.split == "one_module":
            return {"train.py": model + "\n\n" + task}
        if self.split == "model_module":
            return {
                "model.py": model,
                "task.py": head + "\nfrom model import model_fn\n\n\n" + task,
            }
        return {
            "trainer/__init__.py": "",
            "trainer/model.py": model,
            "trainer/task.py": head
            + "\nfrom trainer import model\n\n\n"
            + task.replace("model_fn=model_fn", "model_fn=model.model_fn"),
        }


def _model_fn(spec: str, metrics_mod: str, shape: str) -> str:
    body = [
        "def model_fn(features, labels, mode, params):",
        '    logits = tf.compat.v1.layers.dense(features["x"], 2)',
        "    predictions = tf.argmax(logits, 1)",
        "    loss = tf.compat.v1.losses.sparse_softmax_cross_entropy(labels, logits)",
        "    train_op = tf.compat.v1.train.AdamOptimizer(0.01).minimize(",
        "        loss, global_step=tf.compat.v1.train.get_global_step()",
        "    )",
    ]
    acc = f"{metrics_mod}.accuracy(labels, predictions)"
    extra = ""
    if shape == "inline":
        extra = f', eval_metric_ops={{"accuracy": {acc}}}'
    elif shape == "variable":
        body.append(f'    metrics = {{"accuracy": {acc}}}')
        extra = ", eval_metric_ops=metrics"
    elif shape == "key_by_key":
        body += ["    metrics = {}", f'    metrics["accuracy"] = {acc}']
        extra = ", eval_metric_ops=metrics"
    body.append(
        f"    return {spec}(mode=mode, predictions=predictions, loss=loss, "
        f"train_op=train_op{extra})"
    )
    return "\n".join(body) + "\n"


def _task(est: str, batch: str, size: int) -> str:
    data = "tf.data.Dataset.from_tensor_slices(({'x': [[1.0, 2.0]]}, [1]))"
    if batch == "literal":
        fn = f"def train_input_fn():\n    return {data}.repeat().batch({size})\n"
        call = "train_input_fn"
    elif batch == "constant":
        fn = (
            f"BATCH_SIZE = {size}\n\n\n"
            f"def train_input_fn():\n    return {data}.repeat().batch(BATCH_SIZE)\n"
        )
        call = "train_input_fn"
    elif batch == "lambda_arg":
        fn = f"def make_input(batch_size):\n    return {data}.repeat().batch(batch_size)\n"
        call = f"lambda: make_input({size})"
    else:
        fn = (
            "def make_input_fn(batch_size):\n"
            "    def input_fn():\n"
            f"        return {data}.repeat().batch(batch_size)\n\n"
            "    return input_fn\n"
        )
        call = f"make_input_fn({size})"
    return (
        fn
        + "\n\n"
        + "def main(model_dir):\n"
        + f'    estimator = {est}(model_fn=model_fn, model_dir=model_dir, params={{"lr": 0.1}})\n'
        + f"    estimator.train(input_fn={call}, max_steps=10)\n"
    )


programs = st.builds(
    Program,
    imports=st.sampled_from(sorted(IMPORTS)),
    metrics=st.sampled_from(METRICS),
    batch=st.sampled_from(BATCHES),
    split=st.sampled_from(SPLITS),
    batch_size=st.sampled_from([8, 32, 128]),
)

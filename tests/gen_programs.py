"""Hypothesis strategies for small Estimator programs: one or two modules, as files."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

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
# TF2's behaviour switched off at the top of the training module, as TF 1-era programs run on
# TF 2.x do: name -> the call, by import spelling ("compat_v1" binds tf to tf.compat.v1)
SWITCHES = {
    "none": ("", ""),
    "eager_off": ("tf.compat.v1.disable_eager_execution()\n", "tf.disable_eager_execution()\n"),
    "v2_off": ("tf.compat.v1.disable_v2_behavior()\n", "tf.disable_v2_behavior()\n"),
}
BATCHES = ("literal", "constant", "lambda_arg", "factory_arg")
SPLITS = ("one_module", "model_module", "package")


@dataclass(frozen=True)
class Program:
    imports: str
    metrics: str
    batch: str
    split: str
    batch_size: int
    switch: str = "none"

    def files(self) -> dict[str, str]:
        """Relative path -> source."""
        head, est, spec, metrics_mod = IMPORTS[self.imports]
        switch = SWITCHES[self.switch][self.imports == "compat_v1"]
        model = head + "\n\n" + _model_fn(spec, metrics_mod, self.metrics)
        task = _task(est, self.batch, self.batch_size)
        if self.split == "one_module":
            return {"train.py": head + switch + model[len(head) :] + "\n\n" + task}
        if self.split == "model_module":
            return {
                "model.py": model,
                "task.py": head + "\nfrom model import model_fn\n" + switch + "\n\n" + task,
            }
        return {
            "trainer/__init__.py": "",
            "trainer/model.py": model,
            "trainer/task.py": head
            + "\nfrom trainer import model\n"
            + switch
            + "\n\n"
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
    switch=st.sampled_from(sorted(SWITCHES)),
)


# -- Compositions: whole trainers, composed along the axes real programs vary on ---------
#
# [how the model_fn reaches the Estimator] x [where the batch size lives, and in which
# module] x [how input functions reach train/evaluate/specs] x [layout]. Each composition is
# a complete program that trains a small seeded regression for a few steps and writes its
# evaluation metrics as JSON (`--model_dir DIR --results FILE`, as tests/e2e/harness.py
# runs programs), so that the original and its migration can be trained and compared.

MODEL_SHAPES = (
    "direct",  # Estimator(model_fn=model_fn)
    "alias",  # model_function = model_fn
    "module_attr",  # fn = model.model_fn (model in its own module)
    "conditional",  # a if flag else b, both project functions
    "dict_literal",  # MODELS["dnn"]
    "dict_flag",  # MODELS[name], the name read at run time
    "partial",  # functools.partial(model_fn, hidden=8)
    "factory",  # get_model_fn(8) returns a nested def
    "method",  # Trainer().model_fn, self.model_fn
    "staticmethod",  # Models.model_fn
    "partial_of_pick",  # functools.partial(MODELS[hp.model], hidden=8), hp a SimpleNamespace
    # model_fn reached directly; it writes tf.compat.v1.summary scalars, a histogram and an
    # image, and trains at a learning rate it computes (exponential_decay of the global step)
    "summaries",
    # model_fn reached directly; its train op comes from a def of its module that builds the
    # TF1 optimizer and calls minimize itself (`train_op = make_train_op(loss)`)
    "train_op_helper",
    # model_fn reached directly; its train op comes from a def that calls another def of its
    # module, which builds the TF1 optimizer and minimizes (`make_train_op` -> `_optimize`)
    "train_op_chain",
    # model_fn reached directly; its train op comes from a method of an instance of a class
    # of its module (`Optimization(0.05).train_op(loss)`), which builds and minimizes
    "train_op_method",
    # model_fn reached directly (in the model module); its train op comes from a chain of defs
    # in a module of their own (`optimization.make_train_op(loss)` -> `_optimize`)
    "train_op_module",
)
BATCH_SOURCES = (
    "literal",  # 32
    "constant",  # BATCH_SIZE = 32
    "flags",  # absl FLAGS.batch_size
    "argparse",  # args.batch_size, parsed at import
    "hparams",  # an hparams object handed to the input function; it reads .batch_size
    "config_dict",  # CONFIG["batch_size"]
    "closure",  # a variable of main() the input function closes over
    # argparse parsed at import, params=vars(args) (batch_size among them) given to the
    # Estimator, and the model_fn reads params["batch_size"]
    "args_params",
)
BATCH_PLACES = ("same", "other")  # the task module, or a settings module it imports
INPUT_SHAPES = (
    "direct",  # est.train(train_input_fn)
    "lambda",  # lambda: make_input(x, y, batch)
    "partial",  # functools.partial(make_input, x, y, batch)
    "factory_other",  # inputs.get_input_fn(x, y, batch, train) in another module
    "spec_helper",  # that, through specs.get_train_spec(fn, steps), train_and_evaluate
    "numpy",  # a project factory returning numpy_input_fn(...)
    "direct_and_lambda",  # input_fn() called to look at the data, and lambda: input_fn()
    # Input functions that return a one-shot iterator's tensors, as TF1 programs wrote them:
    # "direct"'s, the train one `Dataset.make_one_shot_iterator().get_next()` (the method of
    # tf.compat.v1.data's Dataset), the eval one `tf.compat.v1.data.make_one_shot_iterator`
    # bound to a name first, its get_next() restructured
    "iterator",
    # "lambda"'s helper, returning `tf.compat.v1.data.make_one_shot_iterator(...).get_next()`
    "iterator_lambda",
    # "factory_other"'s factory, its nested input function binding the method's iterator and
    # returning its get_next()
    "iterator_factory",
    # "factory_other"'s factory as a method of a class of the inputs module, called on an
    # object main() builds (`maker = inputs.Inputs()` ... `maker.get_input_fn(...)`)
    "factory_method",
)
# An iterator shape -> the shape whose input functions, and main()'s use of them, it shares
ITERATOR_OF = {"iterator": "direct", "iterator_lambda": "lambda",
               "iterator_factory": "factory_other"}  # fmt: skip
LAYOUTS = ("one_module", "model_task", "package", "notebook")
# Where the Estimator lives: a local of main(), or the attribute of a trainer class that
# builds it in __init__ (which sets self.batch_size from its argument first) and trains and
# evaluates it in other methods, with methods as input functions; or the same class whose
# __init__ holds the Estimator a method of it builds and returns; or a trainer class given the
# model object (`Experiment(Trainer(), ...)`, `self.model = model`) whose method is the
# model_fn (`model_fn=self.model.model_fn`)
HOLDERS = ("local", "trainer_class", "trainer_method", "trainer_given_model")

# Each axis of a composition and its values
AXES = {"model": MODEL_SHAPES, "batch": BATCH_SOURCES, "place": BATCH_PLACES,
        "inputs": INPUT_SHAPES, "layout": LAYOUTS, "holder": HOLDERS}  # fmt: skip

TRAIN_STEPS = 20
SIZE = 32


@dataclass(frozen=True)
class Composition:
    model: str
    batch: str
    place: str
    inputs: str
    layout: str
    holder: str = "local"

    @property
    def name(self) -> str:
        name = f"{self.model}-{self.batch}-{self.place}-{self.inputs}-{self.layout}"
        return name if self.holder == "local" else f"{name}-{self.holder}"

    def valid(self) -> str | None:
        """Why this combination is not a program (None: it is one)."""
        if self.batch in ("literal", "closure") and self.place == "other":
            return "a literal or a closure variable lives where it is used"
        if self.model in ("module_attr", "train_op_module") and self.layout in (
            "one_module",
            "notebook",
        ):
            return "a model module needs a layout with one"
        if self.holder != "local" and self.shape not in ("direct", "lambda"):
            return "a trainer class's input functions are its methods"
        if (
            self.holder != "local"
            and self.batch == "args_params"
            and self.place == "other"
            and self.shape == "lambda"
        ):
            # Refused, with a true TPU007: the lambda hands `self` to the input method, which
            # batches by self.batch_size, and the Estimator's params are vars() of an `args`
            # bound in another module, whose keys est2tpu does not read there.
            return "refused: a trainer's lambda inputs and all the flags of another module"
        if self.holder == "trainer_given_model" and self.model != "method":
            return "the model object a trainer is given is the method shape's class"
        return None

    def findings(self, target: str = "tpu-estimator") -> set[str]:
        """The rules whose (true) findings the migration to `target` reports."""
        if self.model != "summaries" or target == "tf2":
            # under tf2 the facade writes the summaries and runs `exponential_decay`
            # (TensorFlow's own, over the facade's global step)
            return set()
        # the image summary stays in the model_fn (TF1 wrote one tag per image, which
        # tf.compat.v2.summary.image does not reproduce); the scalars and the histogram move
        # to host_call
        return {"TPU009"}

    @property
    def shape(self) -> str:
        """The input shape this one's input functions and their use follow."""
        return ITERATOR_OF.get(self.inputs, self.inputs)

    # -- the pieces -------------------------------------------------------------------

    def _pkg(self, module: str) -> str:
        """How the task module imports a sibling module."""
        return f"from trainer import {module}" if self.layout == "package" else f"import {module}"

    def _settings(self) -> str:
        """The settings module's text (for place == "other"), or the task module's lines."""
        lines = {
            "literal": [],
            "constant": [f"BATCH_SIZE = {SIZE}"],
            "flags": [
                "from absl import flags",
                "",
                f'flags.DEFINE_integer("batch_size", {SIZE}, "examples per batch")',
                "FLAGS = flags.FLAGS",
            ],
            "argparse": [
                "import argparse",
                "",
                "_parser = argparse.ArgumentParser()",
                f'_parser.add_argument("--batch_size", type=int, default={SIZE})',
                "args, _ = _parser.parse_known_args()",
            ],
            "args_params": [
                "import argparse",
                "",
                "_parser = argparse.ArgumentParser()",
                f'_parser.add_argument("--batch_size", type=int, default={SIZE})',
                '_parser.add_argument("--learning_rate", type=float, default=0.05)',
                "args, _ = _parser.parse_known_args()",
            ],
            "hparams": ["import argparse", "", f"HPARAMS = argparse.Namespace(batch_size={SIZE})"],
            "config_dict": [f'CONFIG = {{"batch_size": {SIZE}}}'],
            "closure": [],
        }[self.batch]
        return "\n".join(lines) + "\n" if lines else ""

    def _settings_names(self) -> list[str]:
        return {
            "constant": ["BATCH_SIZE"],
            "flags": ["FLAGS"],
            "argparse": ["args"],
            "args_params": ["args"],
            "hparams": ["HPARAMS"],
            "config_dict": ["CONFIG"],
        }.get(self.batch, [])

    def _batch_value(self) -> str:
        """The batch size (or, for hparams, the object holding it) where main() uses it."""
        return {
            "literal": str(SIZE),
            "constant": "BATCH_SIZE",
            "flags": "FLAGS.batch_size",
            "argparse": "args.batch_size",
            "args_params": "args.batch_size",
            "hparams": "hparams",
            "config_dict": 'CONFIG["batch_size"]',
            "closure": "batch_size",
        }[self.batch]

    def _read(self, holder: str) -> str:
        """What an input function taking `holder` as a parameter batches by."""
        return f"{holder}.batch_size" if self.batch == "hparams" else holder

    def _holder(self) -> str:
        return "hparams" if self.batch == "hparams" else "batch_size"

    def _model(self) -> str:
        """The model module: model_fn (and the variants the shapes name)."""
        hidden = "hidden" if self.model in ("partial", "factory", "partial_of_pick") else "8"
        x = 'features["x"]'
        if self.batch == "args_params":
            x = 'tf.reshape(features["x"], [params["batch_size"], 3])'
        body = [
            (f"    hidden_layer = tf.compat.v1.layers.dense({x}, {hidden}, activation=tf.nn.relu)"),
            "    output = tf.compat.v1.layers.dense(hidden_layer, 1)",
            "    loss = tf.compat.v1.losses.mean_squared_error(labels, output)",
            "    optimizer = tf.compat.v1.train.AdamOptimizer(0.05)",
            (
                "    train_op = optimizer.minimize(loss, global_step="
                "tf.compat.v1.train.get_or_create_global_step())"
            ),
            '    metrics = {"mae": tf.compat.v1.metrics.mean_absolute_error(labels, output)}',
            (
                "    return tf.estimator.EstimatorSpec(mode, loss=loss, train_op=train_op, "
                "eval_metric_ops=metrics)"
            ),
        ]
        if self.model == "summaries":
            body[3:4] = [
                '    tf.compat.v1.summary.scalar("mean_output", tf.reduce_mean(output))',
                '    tf.compat.v1.summary.histogram("hidden", hidden_layer)',
                "    tf.compat.v1.summary.image(",
                '        "inputs", tf.reshape(features["x"], [-1, 1, 3, 1]), max_outputs=2',
                "    )",
                "    learning_rate = tf.compat.v1.train.exponential_decay(",
                "        0.05, tf.compat.v1.train.get_or_create_global_step(), 10, 0.5",
                "    )",
                '    tf.compat.v1.summary.scalar("learning_rate", learning_rate)',
                "    optimizer = tf.compat.v1.train.AdamOptimizer(learning_rate)",
            ]
        text = "import functools\n\nimport tensorflow as tf\n\n\n"
        if self.model == "train_op_helper":
            body[3:5] = ["    train_op = make_train_op(loss)"]
            text += (
                "def make_train_op(loss):\n"
                "    optimizer = tf.compat.v1.train.AdamOptimizer(0.05)\n"
                "    return optimizer.minimize(\n"
                "        loss, global_step=tf.compat.v1.train.get_or_create_global_step()\n"
                "    )\n\n\n"
            )
        if self.model == "train_op_chain":
            body[3:5] = ["    train_op = make_train_op(loss)"]
            text += (
                "def _optimize(loss, learning_rate):\n"
                "    optimizer = tf.compat.v1.train.AdamOptimizer(learning_rate)\n"
                "    return optimizer.minimize(\n"
                "        loss, global_step=tf.compat.v1.train.get_or_create_global_step()\n"
                "    )\n\n\n"
                "def make_train_op(loss):\n"
                "    return _optimize(loss, 0.05)\n\n\n"
            )
        if self.model == "train_op_module":
            body[3:5] = ["    train_op = optimization.make_train_op(loss)"]
            text = text.replace(
                "import tensorflow as tf\n",
                f"import tensorflow as tf\n\n{self._pkg('optimization')}\n",
            )
        if self.model == "train_op_method":
            body[3:5] = ["    train_op = Optimization(0.05).train_op(loss)"]
            text += (
                "class Optimization:\n"
                "    def __init__(self, learning_rate):\n"
                "        self.learning_rate = learning_rate\n\n"
                "    def train_op(self, loss):\n"
                "        optimizer = tf.compat.v1.train.AdamOptimizer(self.learning_rate)\n"
                "        return optimizer.minimize(\n"
                "            loss, global_step=tf.compat.v1.train.get_or_create_global_step()\n"
                "        )\n\n\n"
            )
        if self.model == "partial_of_pick":
            return (
                text
                + "def model_fn(features, labels, mode, params, hidden):\n"
                + "\n".join(body)
                + "\n\n\ndef wide_model_fn(features, labels, mode, params, hidden):\n"
                + "\n".join(body).replace(", hidden,", ", hidden * 2,")
                + '\n\n\nMODELS = {"dnn": model_fn, "wide": wide_model_fn}\n'
            )
        if self.model == "partial":
            return (
                text
                + "def model_fn(features, labels, mode, params, hidden):\n"
                + "\n".join(body)
                + "\n"
            )
        if self.model == "factory":
            inner = ["    " + line for line in body]
            return (
                text
                + "def get_model_fn(hidden):\n"
                + "    def _model_fn(features, labels, mode, params):\n"
                + "\n".join(inner)
                + "\n\n    return _model_fn\n"
            )
        if self.model == "method":
            inner = ["    " + line for line in body]
            return (
                text
                + "class Trainer:\n"
                + "    def model_fn(self, features, labels, mode, params):\n"
                + "\n".join(inner)
                + "\n"
            )
        if self.model == "staticmethod":
            inner = ["    " + line for line in body]
            return (
                text
                + "class Models:\n"
                + "    @staticmethod\n"
                + "    def model_fn(features, labels, mode, params):\n"
                + "\n".join(inner)
                + "\n"
            )
        text += "def model_fn(features, labels, mode, params):\n" + "\n".join(body) + "\n"
        if self.model in ("conditional", "dict_flag"):
            text += (
                "\n\ndef wide_model_fn(features, labels, mode, params):\n"
                + "\n".join(body).replace(", 8,", ", 16,")
                + "\n"
            )
        if self.model == "dict_literal":
            # a literal key picks one: the dict holds what the program runs
            text += '\n\nMODELS = {"dnn": model_fn}\n'
        if self.model == "dict_flag":
            text += '\n\nMODELS = {"dnn": model_fn, "wide": wide_model_fn}\n'
        return text

    def _model_arg(self, prefix: str) -> tuple[list[str], str]:
        """Lines in main() before the Estimator, and its model_fn argument."""
        p = prefix
        return {
            "direct": ([], f"{p}model_fn"),
            "summaries": ([], f"{p}model_fn"),
            "train_op_helper": ([], f"{p}model_fn"),
            "train_op_chain": ([], f"{p}model_fn"),
            "train_op_method": ([], f"{p}model_fn"),
            "train_op_module": ([], f"{p}model_fn"),
            "alias": ([f"model_function = {p}model_fn"], "model_function"),
            "module_attr": ([f"chosen_fn = {p}model_fn"], "chosen_fn"),
            "conditional": (
                ["use_dnn = True", f"chosen_fn = {p}model_fn if use_dnn else {p}wide_model_fn"],
                "chosen_fn",
            ),
            "dict_literal": ([], f'{p}MODELS["dnn"]'),
            "dict_flag": (['model_name = "dnn"'], f"{p}MODELS[model_name]"),
            "partial": ([], f"functools.partial({p}model_fn, hidden=8)"),
            "factory": ([f"chosen_fn = {p}get_model_fn(8)"], "chosen_fn"),
            "method": ([f"trainer = {p}Trainer()"], "trainer.model_fn"),
            "staticmethod": ([], f"{p}Models.model_fn"),
            "partial_of_pick": (
                ['hp = types.SimpleNamespace(model="dnn", hidden=8)'],
                f"functools.partial({p}MODELS[hp.model], hidden=hp.hidden)",
            ),
        }[self.model]

    def _inputs_module(self) -> str:
        """The module of input factories and spec helpers (another module than main's):
        what the composition uses of them."""
        h = self._holder()
        read = self._read(h)
        text = "import tensorflow as tf\n"
        if self.inputs == "iterator_factory":
            text += (
                "\n\n"
                f"def get_input_fn(x, y, {h}, train):\n"
                "    def _input_fn():\n"
                '        data = tf.compat.v1.data.Dataset.from_tensor_slices(({"x": x}, y))\n'
                "        if train:\n"
                f"            data = data.shuffle({TRAIN_ROWS}, seed=7).repeat()\n"
                f"        iterator = data.batch({read}).make_one_shot_iterator()\n"
                "        return iterator.get_next()\n\n"
                "    return _input_fn\n"
            )
        elif self.inputs == "factory_method":
            text += (
                "\n\n"
                "class Inputs:\n"
                "    def __init__(self, rows=None):\n"
                "        self.rows = rows\n\n"
                f"    def get_input_fn(self, x, y, {h}, train):\n"
                "        def _input_fn():\n"
                '            data = tf.data.Dataset.from_tensor_slices(({"x": x[: self.rows]}, y[: self.rows]))\n'
                "            if train:\n"
                f"                data = data.shuffle({TRAIN_ROWS}, seed=7).repeat()\n"
                f"            return data.batch({read})\n\n"
                "        return _input_fn\n"
            )
        elif self.inputs in ("factory_other", "spec_helper"):
            text += (
                "\n\n"
                f"def get_input_fn(x, y, {h}, train):\n"
                "    def _input_fn():\n"
                '        data = tf.data.Dataset.from_tensor_slices(({"x": x}, y))\n'
                "        if train:\n"
                f"            data = data.shuffle({TRAIN_ROWS}, seed=7).repeat()\n"
                f"        return data.batch({read})\n\n"
                "    return _input_fn\n"
            )
        if self.inputs == "numpy":
            text += (
                "\n\n"
                f"def make_numpy_input(x, y, {h}, train):\n"
                "    return tf.compat.v1.estimator.inputs.numpy_input_fn(\n"
                f'        {{"x": x}}, y, batch_size={read}, num_epochs=None if train else 1, '
                "shuffle=False\n"
                "    )\n"
            )
        if self.inputs == "spec_helper":
            text += (
                "\n\n"
                "def get_train_spec(train_fn, steps):\n"
                "    return tf.estimator.TrainSpec(input_fn=train_fn, max_steps=steps)\n\n\n"
                "def get_eval_spec(eval_fn):\n"
                "    return tf.estimator.EvalSpec(input_fn=eval_fn, steps=2, throttle_secs=0)\n"
            )
        return text

    def _input_defs(self, indent: str) -> str:
        """Input functions defined beside main() (direct shapes), or inside it (closure)."""
        h = self._holder()
        if self.shape in ("direct", "direct_and_lambda"):
            if self.batch == "closure":
                read = "batch_size"
            elif self.batch == "hparams":
                read = "hparams.batch_size" if indent else "HPARAMS.batch_size"
            else:
                read = self._batch_value()
            lines = [
                "def train_input_fn():",
                '    data = tf.data.Dataset.from_tensor_slices(({"x": TRAIN_X}, TRAIN_Y))',
                f"    return data.shuffle({TRAIN_ROWS}, seed=7).repeat().batch({read})",
                "",
                "",
                "def eval_input_fn():",
                '    data = tf.data.Dataset.from_tensor_slices(({"x": EVAL_X}, EVAL_Y))',
                f"    return data.batch({read})",
            ]
            if self.inputs == "iterator":
                lines[1] = lines[1].replace("tf.data.", "tf.compat.v1.data.")
                lines[2] += ".make_one_shot_iterator().get_next()"
                lines[-2:] = [
                    '    data = tf.data.Dataset.from_tensor_slices(({"x": EVAL_X}, EVAL_Y))',
                    f"    batches = tf.compat.v1.data.make_one_shot_iterator(data.batch({read}))",
                    "    features, labels = batches.get_next()",
                    '    return {"x": features["x"]}, labels',
                ]
        else:
            lines = [
                f"def make_input(x, y, {h}, train=False):",
                '    data = tf.data.Dataset.from_tensor_slices(({"x": x}, y))',
                "    if train:",
                f"        data = data.shuffle({TRAIN_ROWS}, seed=7).repeat()",
                f"    return data.batch({self._read(h)})",
            ]
            if self.inputs == "iterator_lambda":
                lines[-1] = (
                    "    return tf.compat.v1.data.make_one_shot_iterator("
                    f"data.batch({self._read(h)})).get_next()"
                )
        return "\n".join(indent + line if line else "" for line in lines) + "\n"

    def _uses(self, inputs: str) -> list[str]:
        """main()'s lines from the input functions to the metrics."""
        b = self._batch_value()
        i = inputs
        run = {
            "direct": [
                f"estimator.train(train_input_fn, steps={TRAIN_STEPS})",
                "metrics = estimator.evaluate(eval_input_fn, steps=2)",
            ],
            "lambda": [
                (
                    f"estimator.train(lambda: make_input(TRAIN_X, TRAIN_Y, {b}, train=True), "
                    f"steps={TRAIN_STEPS})"
                ),
                f"metrics = estimator.evaluate(lambda: make_input(EVAL_X, EVAL_Y, {b}), steps=2)",
            ],
            "partial": [
                f"train_fn = functools.partial(make_input, TRAIN_X, TRAIN_Y, {b}, train=True)",
                f"eval_fn = functools.partial(make_input, EVAL_X, EVAL_Y, {b})",
                f"estimator.train(input_fn=train_fn, steps={TRAIN_STEPS})",
                "metrics = estimator.evaluate(input_fn=eval_fn, steps=2)",
            ],
            "factory_other": [
                f"train_fn = {i}.get_input_fn(TRAIN_X, TRAIN_Y, {b}, True)",
                f"eval_fn = {i}.get_input_fn(EVAL_X, EVAL_Y, {b}, False)",
                f"estimator.train(input_fn=train_fn, steps={TRAIN_STEPS})",
                "metrics = estimator.evaluate(input_fn=eval_fn, steps=2)",
            ],
            "factory_method": [
                f"maker = {i}.Inputs()",
                f"train_fn = maker.get_input_fn(TRAIN_X, TRAIN_Y, {b}, True)",
                f"eval_fn = maker.get_input_fn(EVAL_X, EVAL_Y, {b}, False)",
                f"estimator.train(input_fn=train_fn, steps={TRAIN_STEPS})",
                "metrics = estimator.evaluate(input_fn=eval_fn, steps=2)",
            ],
            "spec_helper": [
                f"train_fn = {i}.get_input_fn(TRAIN_X, TRAIN_Y, {b}, True)",
                f"eval_fn = {i}.get_input_fn(EVAL_X, EVAL_Y, {b}, False)",
                "tf.estimator.train_and_evaluate(",
                (
                    f"    estimator, {i}.get_train_spec(train_fn, {TRAIN_STEPS}), "
                    f"{i}.get_eval_spec(eval_fn)"
                ),
                ")",
                "metrics = estimator.evaluate(input_fn=eval_fn, steps=2)",
            ],
            "numpy": [
                (
                    f"estimator.train({i}.make_numpy_input(TRAIN_X, TRAIN_Y, {b}, True), "
                    f"steps={TRAIN_STEPS})"
                ),
                (
                    f"metrics = estimator.evaluate({i}.make_numpy_input(EVAL_X, EVAL_Y, {b}, False), "
                    "steps=2)"
                ),
            ],
            "direct_and_lambda": [
                "first_features, _ = next(iter(train_input_fn()))",
                'assert first_features["x"].shape[1] == 3',
                f"estimator.train(lambda: train_input_fn(), steps={TRAIN_STEPS})",
                "metrics = estimator.evaluate(input_fn=eval_input_fn, steps=2)",
            ],
        }[self.shape]
        return run

    def _task(self, model_prefix: str, inputs_name: str) -> str:
        """The task module's body after its imports: data, inputs, main()."""
        data = (
            f"SEED = 7\n\n\ndef make_data(n, seed):\n"
            "    rng = np.random.RandomState(seed)\n"
            "    x = rng.normal(size=(n, 3)).astype(np.float32)\n"
            "    y = (x @ np.array([[1.0], [-0.5], [2.0]], np.float32) + 0.3).astype(np.float32)\n"
            "    return x, y\n\n\n"
            f"TRAIN_X, TRAIN_Y = make_data({TRAIN_ROWS}, SEED)\n"
            "EVAL_X, EVAL_Y = make_data(64, SEED + 1)\n"
        )
        nested = self.batch in ("closure", "hparams") and self.shape in (
            "direct",
            "direct_and_lambda",
        )
        defs = "" if nested else self._input_defs("")
        factories = ("factory_other", "factory_method", "spec_helper", "numpy")
        if self.shape in factories or self.holder != "local":
            defs = ""
        before, model_arg = self._model_arg(model_prefix)
        params = ["        params=vars(args),"] if self.batch == "args_params" else []
        given = ""
        if self.holder == "trainer_given_model":
            # the model object passed in; the Estimator reads its method through self.model
            before, model_arg, given = [], "self.model.model_fn", f"{model_prefix}Trainer(), "
        if self.holder != "local":
            defs = self._trainer_class(before, model_arg, params)
        main = [
            "def main(argv=None):",
            "    parser = argparse.ArgumentParser()",
            '    parser.add_argument("--model_dir", required=True)',
            '    parser.add_argument("--results", required=True)',
            "    known, _ = parser.parse_known_args(argv)",
        ]
        if self.batch == "flags":
            main.append('    FLAGS(["train"], known_only=True)')
        if self.batch == "closure":
            main.append(f"    batch_size = {SIZE}")
        if self.batch == "hparams":
            main.append("    hparams = HPARAMS")
        if nested and self.holder == "local":
            main.append(self._input_defs("    ").rstrip("\n"))
        main.append("    tf.keras.utils.set_random_seed(SEED)")
        if self.holder != "local":
            size = "hparams.batch_size" if self.batch == "hparams" else self._batch_value()
            main += [
                f"    experiment = Experiment({given}known.model_dir, {size})",
                f"    experiment.train({TRAIN_STEPS})",
                "    metrics = experiment.evaluate()",
            ]
        else:
            main += [
                *("    " + line for line in before),
                "    estimator = tf.estimator.Estimator(",
                f"        model_fn={model_arg},",
                "        model_dir=known.model_dir,",
                "        config=tf.estimator.RunConfig(tf_random_seed=SEED),",
                *params,
                "    )",
                *("    " + line for line in self._uses(inputs_name)),
            ]
        main += [
            '    with open(known.results, "w") as f:',
            "        json.dump(",
            '            {"metrics": {k: float(v) for k, v in metrics.items()},',
            '             "loss": float(metrics["loss"]), "predictions": []},',
            "            f,",
            "        )",
        ]
        return data + ("\n\n" + defs if defs else "") + "\n\n" + "\n".join(main) + "\n"

    def _trainer_class(self, before: list[str], model_arg: str, params: list[str]) -> str:
        """The trainer class (holder == "trainer_class"): the Estimator an attribute of it,
        built in __init__ after self.batch_size; input functions are its methods."""
        ctor = [
            *("        " + line for line in before),
            "        self.estimator = tf.estimator.Estimator(",
            f"            model_fn={model_arg},",
            "            model_dir=model_dir,",
            "            config=tf.estimator.RunConfig(tf_random_seed=SEED),",
            *("    " + line for line in params),
            "        )",
        ]
        lines = [
            "class Experiment:",
            "    def __init__(self, model_dir, batch_size):",
            "        self.batch_size = batch_size",
        ]
        if self.holder == "trainer_given_model":
            lines[1:2] = [
                "    def __init__(self, model, model_dir, batch_size):",
                "        self.model = model",
            ]
        if self.holder == "trainer_method":
            lines += [
                "        self.estimator = self.create_estimator(model_dir)",
                "",
                "    def create_estimator(self, model_dir):",
                *ctor[: -len(params) - 5],
                *(
                    line.replace("self.estimator = ", "return ", 1)
                    for line in ctor[-len(params) - 5 :]
                ),
            ]
        else:
            lines += ctor
        lines.append("")
        data = '        data = tf.data.Dataset.from_tensor_slices(({"x": %s}, %s))'
        if self.shape == "direct":
            lines += [
                "    def train_input_fn(self):",
                data % ("TRAIN_X", "TRAIN_Y"),
                f"        return data.shuffle({TRAIN_ROWS}, seed=7).repeat().batch(self.batch_size)",
                "",
                "    def eval_input_fn(self):",
                data % ("EVAL_X", "EVAL_Y"),
                "        return data.batch(self.batch_size)",
                "",
                "    def train(self, steps):",
                "        self.estimator.train(self.train_input_fn, steps=steps)",
                "",
                "    def evaluate(self):",
                "        return self.estimator.evaluate(self.eval_input_fn, steps=2)",
            ]
        else:
            lines += [
                "    def input_fn(self, x, y, train=False):",
                data % ("x", "y"),
                "        if train:",
                f"            data = data.shuffle({TRAIN_ROWS}, seed=7).repeat()",
                "        return data.batch(self.batch_size)",
                "",
                "    def train(self, steps):",
                "        self.estimator.train(",
                "            lambda: self.input_fn(TRAIN_X, TRAIN_Y, train=True), steps=steps",
                "        )",
                "",
                "    def evaluate(self):",
                "        return self.estimator.evaluate(lambda: self.input_fn(EVAL_X, EVAL_Y), steps=2)",
            ]
        if self.inputs == "iterator":
            # the train method the Dataset method's iterator, the eval one the function's
            at = lines.index("    def train_input_fn(self):")
            lines[at + 1] = lines[at + 1].replace("tf.data.", "tf.compat.v1.data.")
            lines[at + 2] += ".make_one_shot_iterator().get_next()"
            lines[at + 6] = (
                "        return tf.compat.v1.data.make_one_shot_iterator("
                "data.batch(self.batch_size)).get_next()"
            )
        if self.inputs == "iterator_lambda":
            at = lines.index("        return data.batch(self.batch_size)")
            lines[at] = (
                "        return tf.compat.v1.data.make_one_shot_iterator("
                "data.batch(self.batch_size)).get_next()"
            )
        return "\n".join(lines) + "\n"

    def files(self) -> dict[str, str]:
        """Relative path -> source (a notebook as its .ipynb JSON)."""
        pkg = "trainer/" if self.layout == "package" else ""
        files: dict[str, str] = {}
        uses_inputs = self.shape in ("factory_other", "factory_method", "spec_helper", "numpy")
        heads = ["import argparse", "import functools", "import json", "", "import numpy as np",
                 "import tensorflow as tf"]  # fmt: skip
        if self.model == "partial_of_pick":
            heads.insert(3, "import types")
        imports: list[str] = []
        settings = self._settings()
        if self.place == "other" and settings:
            files[f"{pkg}settings.py"] = settings
            names = ", ".join(self._settings_names())
            where = "trainer.settings" if self.layout == "package" else "settings"
            imports.append(f"from {where} import {names}")
            settings = ""
        if uses_inputs:
            files[f"{pkg}inputs.py"] = self._inputs_module()
            imports.append(self._pkg("inputs"))
        model = self._model()
        if self.model == "train_op_module":
            files[f"{pkg}optimization.py"] = OPTIMIZATION_MODULE
        if self.layout in ("one_module", "notebook"):
            model_prefix = ""
            model_text = model.split("\n\n\n", 1)[1]
        else:
            files[f"{pkg}model.py"] = model
            imports.append(self._pkg("model"))
            model_prefix = "model."
            model_text = ""
        head = "\n".join(heads) + "\n" + ("\n".join(imports) + "\n" if imports else "")
        task = self._task(model_prefix, "inputs")
        if self.layout == "notebook":
            cells = [head, *([settings] if settings else []), model_text, task,
                     "main()"]  # fmt: skip
            files["train.ipynb"] = _notebook(cells)
            return files
        text = head + ("\n" + settings if settings else "")
        text += ("\n\n" + model_text if model_text else "") + "\n\n" + task
        text += '\n\nif __name__ == "__main__":\n    main()\n'
        if self.layout == "package":
            files["trainer/__init__.py"] = ""
            files["trainer/task.py"] = text
        else:
            files["train.py"] = text
        return files

    def entry(self) -> tuple[str, ...]:
        """How the program is started (argv after the interpreter)."""
        if self.layout == "package":
            return ("-m", "trainer.task")
        if self.layout == "notebook":
            return ("run_notebook.py",)
        return ("train.py",)

    def write(self, root: Path) -> None:
        """Write the program under `root`, with the runner that starts a notebook."""
        for rel, text in self.files().items():
            (root / rel).parent.mkdir(parents=True, exist_ok=True)
            (root / rel).write_text(text, encoding="utf-8")
        if self.layout == "notebook":
            (root / "run_notebook.py").write_text(NOTEBOOK_RUNNER, encoding="utf-8")

    def write_tf1_spelled(self, root: Path) -> None:
        """`write`, each module spelled as TF 1.x code spells it: plain `tf.layers`,
        `tf.losses`, `tf.train`, `tf.metrics`, ... for the `tf.compat.v1` names (TF 1.15's
        `tf.X` is TF 2.15's `tf.compat.v1.X`): the same program for TF 1.x, which runs the
        compositions' original on TF 2.15 as TF 1.x ran this one."""
        self.write(root)
        for path in root.rglob("*.py"):
            text = path.read_text(encoding="utf-8")
            path.write_text(text.replace("tf.compat.v1.", "tf."), encoding="utf-8")


TRAIN_ROWS = 256

# The "train_op_module" shape's module of train-op helpers: a chain of two defs, the second
# building the TF1 optimizer and minimizing (it names no Estimator: the byte pre-filter reads
# it for its `minimize(`).
OPTIMIZATION_MODULE = """\
import tensorflow as tf


def _optimize(loss, learning_rate):
    optimizer = tf.compat.v1.train.AdamOptimizer(learning_rate)
    return optimizer.minimize(
        loss, global_step=tf.compat.v1.train.get_or_create_global_step()
    )


def make_train_op(loss):
    return _optimize(loss, 0.05)
"""


def _notebook(cells: list[str]) -> str:
    import json

    def cell(source: str) -> dict[str, object]:
        lines = source.rstrip("\n").split("\n")
        return {
            "cell_type": "code",
            "execution_count": None,
            "metadata": {},
            "outputs": [],
            "source": [line + "\n" for line in lines[:-1]] + lines[-1:],
        }

    nb = {
        "cells": [cell(c) for c in cells],
        "metadata": {
            "kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}
        },
        "nbformat": 4,
        "nbformat_minor": 5,
    }
    return json.dumps(nb, indent=1) + "\n"


# Runs a notebook's code cells in order as one script (what "Run all" does), with the
# program's own argv: how the end-to-end tests train a notebook composition.
NOTEBOOK_RUNNER = """\
import json
import sys

cells = json.load(open("train.ipynb"))["cells"]
code = "\\n".join("".join(c["source"]) for c in cells if c["cell_type"] == "code")
sys.argv = ["train.ipynb", *sys.argv[1:]]
exec(compile(code, "train.ipynb", "exec"), {"__name__": "__main__"})
"""


# The axes' values before "partial_of_pick", "args_params", the trainer class, "summaries" and
# the iterator input shapes: the end-to-end sample trained since then is the covering of these.
FIRST_MODEL_SHAPES = MODEL_SHAPES[:10]
FIRST_BATCH_SOURCES = BATCH_SOURCES[:7]
FIRST_INPUT_SHAPES = INPUT_SHAPES[:7]


# The compositions that train the iterator input shapes and the "summaries" model_fn, under
# both targets (tests/e2e/test_e2e_compositions.py, tests/tf2/test_tf2_compositions.py): each
# is a composition of the end-to-end sample with its input shape made the iterator twin of
# it (and one's model_fn the summaries one), the three chosen to lose the fewest pairs of
# values the sample covered.
TWINS = {
    "direct-literal-same-direct-one_module": "summaries-literal-same-iterator-one_module",
    "method-flags-other-lambda-one_module": "method-flags-other-iterator_lambda-one_module",
    "module_attr-flags-same-factory_other-model_task": (
        "module_attr-flags-same-iterator_factory-model_task"
    ),
}


def compositions(first: bool = False) -> list[Composition]:
    """Every valid composition, in a fixed order (`first`: of the first axes' values)."""
    import itertools

    models = FIRST_MODEL_SHAPES if first else MODEL_SHAPES
    batches = FIRST_BATCH_SOURCES if first else BATCH_SOURCES
    holders = HOLDERS[:1] if first else HOLDERS
    inputs = FIRST_INPUT_SHAPES if first else INPUT_SHAPES
    found = [
        Composition(m, b, p, i, lay, h)
        for m, b, p, i, lay, h in itertools.product(
            models, batches, BATCH_PLACES, inputs, LAYOUTS, holders
        )
    ]
    return [c for c in found if c.valid() is None]


def covering(count_per_pair: int = 1, first: bool = False) -> list[Composition]:
    """A fixed subset in which every pair of values of two axes appears (greedy pairwise
    covering over the valid compositions, deterministic)."""
    import itertools

    every = compositions(first)
    axes: tuple[str, ...] = ("model", "batch", "place", "inputs", "layout")
    if not first:
        axes += ("holder",)

    def pairs(c: Composition) -> set[tuple[str, str, str, str]]:
        return {(a, getattr(c, a), b, getattr(c, b)) for a, b in itertools.combinations(axes, 2)}

    wanted: set[tuple[str, str, str, str]] = set().union(*(pairs(c) for c in every))
    chosen: list[Composition] = []
    while wanted:
        best = max(every, key=lambda c: len(pairs(c) & wanted))
        chosen.append(best)
        wanted -= pairs(best)
    return chosen

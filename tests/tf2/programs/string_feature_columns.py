"""Model_fns whose feature columns turn strings into ids: a vocabulary list, a vocabulary
file, hash buckets and a crossed column, read through `input_layer` (embedding and
indicator columns) and `linear_model`, built inside the model_fn and at module level.
``python string_feature_columns.py MODEL_DIR RESULTS``."""

import json
import os
import sys

import numpy as np
import tensorflow as tf

SEED = 7
STEPS = 80
rng = np.random.RandomState(SEED)
N = 512
CITIES = np.array(["paris", "rome", "oslo", "lima", "kyiv", "quito"])
COLORS = np.array(["red", "green", "blue", ""])  # "" is a missing value
X = rng.normal(size=(N, 2)).astype(np.float32)
CITY = CITIES[rng.randint(0, len(CITIES), size=(N, 1))]
COLOR = COLORS[rng.randint(0, len(COLORS), size=(N, 2))]
TAGS = np.array(["a", "b", "c"])[rng.randint(0, 3, size=(N, 2))]
WEIGHT = rng.uniform(0.5, 2.0, size=(N, 2)).astype(np.float32)
Y = (
    (X[:, 0] + np.isin(CITY[:, 0], ["paris", "oslo", "quito"]) - 0.5 * (COLOR[:, 0] == "red")) > 0.4
).astype(np.int64)

# Module-level columns, built once outside any model_fn.
CITY_HASHED = tf.feature_column.categorical_column_with_hash_bucket("city", 16)
CROSSED = tf.feature_column.crossed_column(["city", "color"], hash_bucket_size=32)


def input_fn(train):
    def fn():
        features = {"x": X, "city": CITY, "color": COLOR, "tag": TAGS, "weight": WEIGHT}
        ds = tf.data.Dataset.from_tensor_slices((features, Y))
        ds = ds.shuffle(N, seed=SEED).repeat() if train else ds
        return ds.batch(64)

    return fn


def spec(mode, logits, labels):
    loss = tf.compat.v1.losses.sparse_softmax_cross_entropy(labels=labels, logits=logits)
    if mode == tf.estimator.ModeKeys.EVAL:
        predicted = tf.argmax(logits, axis=1)
        return tf.estimator.EstimatorSpec(
            mode,
            loss=loss,
            eval_metric_ops={"accuracy": tf.compat.v1.metrics.accuracy(labels, predicted)},
        )
    optimizer = tf.compat.v1.train.AdagradOptimizer(0.1)
    train_op = optimizer.minimize(loss, global_step=tf.compat.v1.train.get_global_step())
    return tf.estimator.EstimatorSpec(mode, loss=loss, train_op=train_op)


def vocabulary_list_model_fn(features, labels, mode):
    city = tf.feature_column.categorical_column_with_vocabulary_list(
        "city", ["paris", "rome", "oslo", "lima"], num_oov_buckets=2
    )
    color = tf.feature_column.categorical_column_with_vocabulary_list(
        "color", ["red", "green"], default_value=-1
    )
    columns = [
        tf.feature_column.numeric_column("x", shape=(2,)),
        tf.feature_column.embedding_column(city, dimension=3),
        tf.feature_column.indicator_column(color),
    ]
    net = tf.compat.v1.feature_column.input_layer(features, columns)
    net = tf.compat.v1.layers.dense(net, 8, activation=tf.nn.relu)
    return spec(mode, tf.compat.v1.layers.dense(net, 2), labels)


def vocabulary_file_model_fn(features, labels, mode, params):
    city = tf.compat.v1.feature_column.categorical_column_with_vocabulary_file(
        "city", params["vocabulary"], num_oov_buckets=1
    )
    weighted = tf.feature_column.weighted_categorical_column(
        tf.feature_column.categorical_column_with_vocabulary_list("tag", ["a", "b"]),
        "weight",
    )
    with tf.compat.v1.variable_scope("deep"):
        net = tf.compat.v1.feature_column.input_layer(
            features,
            [
                tf.feature_column.numeric_column("x", shape=(2,)),
                tf.feature_column.embedding_column(city, dimension=2, combiner="sqrtn"),
                tf.feature_column.embedding_column(weighted, dimension=2),
            ],
        )
    return spec(mode, tf.compat.v1.layers.dense(net, 2), labels)


def hashed_and_crossed_model_fn(features, labels, mode):
    logits = tf.compat.v1.feature_column.linear_model(
        features,
        [tf.feature_column.numeric_column("x", shape=(2,)), CITY_HASHED, CROSSED],
        units=2,
    )
    net = tf.compat.v1.feature_column.input_layer(
        features, [tf.feature_column.indicator_column(CITY_HASHED)]
    )
    return spec(mode, logits + tf.compat.v1.layers.dense(net, 2), labels)


def run(estimator):
    estimator.train(input_fn(True), steps=STEPS)
    return {k: float(v) for k, v in estimator.evaluate(input_fn(False)).items()}


def main(model_dir, results):
    tf.keras.utils.set_random_seed(SEED)
    config = tf.estimator.RunConfig(tf_random_seed=SEED)
    vocabulary = os.path.join(model_dir, "cities.txt")
    os.makedirs(model_dir, exist_ok=True)
    with open(vocabulary, "w") as f:
        f.write("paris\nrome\noslo\n")
    out = {}
    out["vocabulary_list"] = run(
        tf.estimator.Estimator(vocabulary_list_model_fn, os.path.join(model_dir, "list"), config)
    )
    out["vocabulary_file"] = run(
        tf.estimator.Estimator(
            vocabulary_file_model_fn,
            os.path.join(model_dir, "file"),
            config,
            params={"vocabulary": vocabulary},
        )
    )
    out["hashed_and_crossed"] = run(
        tf.estimator.Estimator(
            hashed_and_crossed_model_fn, os.path.join(model_dir, "hashed"), config
        )
    )
    with open(results, "w") as f:
        json.dump(out, f)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])

"""A premade DNNClassifier whose feature columns look ids up from strings: a vocabulary
list with out-of-vocabulary buckets, hash buckets and a cross of two string features.
``python premade_string_columns.py MODEL_DIR RESULTS [facade]``: the TF 2.15 Estimator, or
with `facade` the est2tpu tf2 runtime's DNNClassifier, given the same arguments (its Keras 2
optimizer from tf-keras where Keras 3 is tf.keras)."""

import json
import sys

import numpy as np
import tensorflow as tf

SEED = 3
STEPS = 60
rng = np.random.RandomState(SEED)
N = 256
CITIES = np.array(["paris", "rome", "oslo", "lima", "kyiv"])
COLORS = np.array(["red", "green", "blue"])
X = rng.normal(size=(N, 2)).astype(np.float32)
CITY = CITIES[rng.randint(0, len(CITIES), size=(N, 1))]
COLOR = COLORS[rng.randint(0, len(COLORS), size=(N, 1))]
Y = (X[:, 0] + np.isin(CITY[:, 0], ["paris", "oslo"]) - 0.7 * (COLOR[:, 0] == "red")) > 0.3
Y = np.where(rng.uniform(size=N) < 0.1, ~Y, Y).astype(np.int64)  # 10% label noise
CITY_COLUMN = tf.feature_column.categorical_column_with_vocabulary_list(
    "city", ["paris", "rome", "oslo"], num_oov_buckets=2
)
COLUMNS = [
    tf.feature_column.numeric_column("x", shape=(2,)),
    tf.feature_column.embedding_column(CITY_COLUMN, dimension=3),
    tf.feature_column.indicator_column(
        tf.feature_column.categorical_column_with_hash_bucket("color", 8)
    ),
    tf.feature_column.embedding_column(
        tf.feature_column.crossed_column([CITY_COLUMN, "color"], hash_bucket_size=16), dimension=2
    ),
]


def input_fn(train):
    def fn():
        ds = tf.data.Dataset.from_tensor_slices(({"x": X, "city": CITY, "color": COLOR}, Y))
        ds = ds.shuffle(N, seed=SEED).repeat() if train else ds
        return ds.batch(32)

    return fn


def main(model_dir, results, facade=False):
    tf.keras.utils.set_random_seed(SEED)
    keras = tf.keras
    if facade:
        import est2tpu.runtime.tf2 as estimator_api

        try:  # the facade's premades take Keras 2's legacy optimizers
            import tf_keras as keras
        except ImportError:
            pass
    else:
        estimator_api = tf.estimator
    estimator = estimator_api.DNNClassifier(
        hidden_units=[16],
        feature_columns=COLUMNS,
        model_dir=model_dir,
        optimizer=keras.optimizers.legacy.Adam(learning_rate=0.05),
        config=estimator_api.RunConfig(tf_random_seed=SEED),
    )
    estimator.train(input_fn(True), steps=STEPS)
    metrics = estimator.evaluate(input_fn(False))
    with open(results, "w") as f:
        json.dump(
            {"premade": {k: float(metrics[k]) for k in ("accuracy", "loss", "global_step")}}, f
        )


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], facade=sys.argv[3:] == ["facade"])

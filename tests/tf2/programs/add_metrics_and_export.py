"""`tf.estimator.add_metrics`, the serving input receiver builders and model_fn summaries
beyond scalars, as public Estimator programs use them.
``python add_metrics_and_export.py MODEL_DIR RESULTS``."""

import json
import os
import sys

import numpy as np
import tensorflow as tf

SEED = 3
rng = np.random.RandomState(SEED)
X = rng.normal(size=(64, 3)).astype(np.float32)
Y = (X @ np.array([1.0, -2.0, 0.5], np.float32) + 0.1 * rng.normal(size=64)).astype(np.float32)


def train_input_fn():
    return tf.data.Dataset.from_tensor_slices(({"x": X}, Y)).repeat().batch(16)


def eval_input_fn():
    return tf.data.Dataset.from_tensor_slices(({"x": X}, Y)).batch(16)


def model_fn(features, labels, mode):
    predictions = tf.squeeze(tf.compat.v1.layers.dense(features["x"], 1), 1)
    outputs = {"y": predictions}
    if mode == tf.estimator.ModeKeys.PREDICT:
        return tf.estimator.EstimatorSpec(
            mode,
            predictions=outputs,
            export_outputs={"out": tf.estimator.export.PredictOutput(outputs)},
        )
    loss = tf.compat.v1.losses.mean_squared_error(labels, predictions)
    tf.compat.v1.summary.histogram("predictions", predictions)
    tf.compat.v1.summary.text("mode_name", tf.constant(mode))
    optimizer = tf.compat.v1.train.GradientDescentOptimizer(0.05)
    train_op = optimizer.minimize(loss, global_step=tf.compat.v1.train.get_global_step())
    rmse = tf.compat.v1.metrics.root_mean_squared_error(labels, predictions)
    return tf.estimator.EstimatorSpec(
        mode, predictions=outputs, loss=loss, train_op=train_op, eval_metric_ops={"rmse": rmse}
    )


def mae(labels, predictions):
    return {"mae": tf.compat.v1.metrics.mean_absolute_error(labels, predictions["y"])}


def feature_mean(features, config):
    assert config.save_summary_steps == 5
    return {"mean_x": tf.compat.v1.metrics.mean(features["x"])}


def tags(directory):
    found = set()
    for name in sorted(os.listdir(directory)):
        if "tfevents" in name:
            for event in tf.compat.v1.train.summary_iterator(os.path.join(directory, name)):
                found.update(value.tag for value in event.summary.value)
    return sorted(found)


def serve(export_dir, **inputs):
    signature = tf.saved_model.load(export_dir).signatures["serving_default"]
    return signature(**inputs)["y"].numpy().tolist()


def main(model_dir, results):
    tf.keras.utils.set_random_seed(SEED)
    config = tf.estimator.RunConfig(
        model_dir=model_dir, tf_random_seed=SEED, save_summary_steps=5, save_checkpoints_steps=10
    )
    estimator = tf.estimator.Estimator(model_fn=model_fn, config=config)
    estimator = tf.estimator.add_metrics(estimator, mae)
    estimator = tf.estimator.add_metrics(estimator, feature_mean)
    estimator.train(train_input_fn, max_steps=20)
    metrics = estimator.evaluate(eval_input_fn)
    raw_dir = estimator.export_saved_model(
        os.path.join(model_dir, "raw"),
        tf.estimator.export.build_raw_serving_input_receiver_fn({"x": tf.zeros([1, 3])}),
    )
    parsing_dir = estimator.export_saved_model(
        os.path.join(model_dir, "parsing"),
        tf.estimator.export.build_parsing_serving_input_receiver_fn(
            {"x": tf.io.FixedLenFeature([3], tf.float32)}
        ),
    )
    examples = [
        tf.train.Example(
            features=tf.train.Features(
                feature={"x": tf.train.Feature(float_list=tf.train.FloatList(value=row))}
            )
        ).SerializeToString()
        for row in X[:4]
    ]
    with open(results, "w") as f:
        json.dump(
            {
                "metrics": {k: float(v) for k, v in metrics.items()},
                "raw": serve(raw_dir.decode(), x=tf.constant(X[:4])),
                "parsing": serve(parsing_dir.decode(), examples=tf.constant(examples)),
                "tags": tags(model_dir),
            },
            f,
        )


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])

"""Model_fns over variable-length string features, read from serialized `tf.train.Example`s
with `tf.io.parse_example` (`VarLenFeature`: a `SparseTensor` of strings per batch):

- `sparse_tags_model_fn`: a vocabulary list over the sparse tags, as an embedding column
  (mean) and an indicator column in `input_layer`, and in `linear_model`;
- `sequence_model_fn`: sequence columns (a vocabulary list over the words, an identity
  column over their positions' buckets), each embedded, read through
  `tf.keras.experimental.SequenceFeatures` and pooled over the sequence length.

``python sparse_and_sequence_columns.py MODEL_DIR RESULTS``."""

import json
import os
import sys

import numpy as np
import tensorflow as tf

SEED = 11
STEPS = 120
BATCH = 32
N = 384
WORDS = ["good", "bad", "fine", "awful", "great", "meh", "ok"]
POSITIVE = {"good", "fine", "great", "ok"}
TAGS = ["news", "sport", "tech", "art"]


def make_examples():
    """Serialized examples: 1-6 words (and their shade ids), 0-3 tags, a number."""
    rng = np.random.RandomState(SEED)
    examples = []
    for _ in range(N):
        words = [str(w) for w in rng.choice(WORDS + ["unknown"], size=rng.randint(1, 7))]
        shades = [int(i) for i in rng.randint(0, 5, size=len(words))]
        tags = [str(t) for t in rng.choice(TAGS + ["other"], size=rng.randint(0, 4))]
        x = float(rng.normal())
        score = sum(1 if w in POSITIVE else -1 for w in words) / len(words)
        label = int(score + 0.6 * ("tech" in tags) + 0.3 * x > 0.1)
        feature = {
            "words": tf.train.Feature(
                bytes_list=tf.train.BytesList(value=[w.encode() for w in words])
            ),
            "shades": tf.train.Feature(int64_list=tf.train.Int64List(value=shades)),
            "tags": tf.train.Feature(
                bytes_list=tf.train.BytesList(value=[t.encode() for t in tags])
            ),
            "x": tf.train.Feature(float_list=tf.train.FloatList(value=[x])),
            "label": tf.train.Feature(int64_list=tf.train.Int64List(value=[label])),
        }
        example = tf.train.Example(features=tf.train.Features(feature=feature))
        examples.append(example.SerializeToString())
    return examples


FEATURE_SPEC = {
    "words": tf.io.VarLenFeature(tf.string),
    "shades": tf.io.VarLenFeature(tf.int64),
    "tags": tf.io.VarLenFeature(tf.string),
    "x": tf.io.FixedLenFeature([1], tf.float32),
    "label": tf.io.FixedLenFeature([1], tf.int64),
}


def input_fn(examples, train):
    def parse(serialized):
        features = tf.io.parse_example(serialized, FEATURE_SPEC)
        label = features.pop("label")
        return features, label

    def fn():
        ds = tf.data.Dataset.from_tensor_slices(examples)
        if train:
            ds = ds.shuffle(N, seed=SEED).repeat()
        return ds.batch(BATCH).map(parse)

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
    optimizer = tf.compat.v1.train.AdagradOptimizer(0.2)
    train_op = optimizer.minimize(loss, global_step=tf.compat.v1.train.get_global_step())
    return tf.estimator.EstimatorSpec(mode, loss=loss, train_op=train_op)


def sparse_tags_model_fn(features, labels, mode, params):
    tags = tf.feature_column.categorical_column_with_vocabulary_list(
        "tags", params["tags"], num_oov_buckets=1
    )
    x = tf.feature_column.numeric_column("x")
    net = tf.compat.v1.feature_column.input_layer(
        features,
        [
            x,
            tf.feature_column.embedding_column(tags, dimension=3, combiner="mean"),
            tf.feature_column.indicator_column(tags),
        ],
    )
    net = tf.compat.v1.layers.dense(net, 8, activation=tf.nn.relu)
    wide = tf.compat.v1.feature_column.linear_model(features, [x, tags], units=2)
    return spec(mode, tf.compat.v1.layers.dense(net, 2) + wide, labels)


def sequence_model_fn(features, labels, mode, params):
    words = tf.feature_column.sequence_categorical_column_with_vocabulary_list(
        "words", params["words"], num_oov_buckets=1
    )
    shades = tf.feature_column.sequence_categorical_column_with_identity("shades", num_buckets=5)
    sequence_input, sequence_length = tf.keras.experimental.SequenceFeatures(
        [
            tf.feature_column.embedding_column(words, dimension=4),
            tf.feature_column.embedding_column(shades, dimension=2),
        ]
    )(features)
    mask = tf.sequence_mask(sequence_length, tf.shape(sequence_input)[1], dtype=tf.float32)
    pooled = tf.reduce_sum(sequence_input * mask[:, :, None], axis=1) / tf.maximum(
        tf.reduce_sum(mask, axis=1, keepdims=True), 1.0
    )
    net = tf.compat.v1.layers.dense(pooled, 8, activation=tf.nn.relu)
    return spec(mode, tf.compat.v1.layers.dense(net, 2), labels)


def run(estimator, examples):
    estimator.train(input_fn(examples, True), steps=STEPS)
    return {k: float(v) for k, v in estimator.evaluate(input_fn(examples, False)).items()}


def main(model_dir, results):
    tf.keras.utils.set_random_seed(SEED)
    examples = make_examples()
    config = tf.estimator.RunConfig(tf_random_seed=SEED)
    params = {"tags": TAGS, "words": WORDS}
    out = {}
    out["sparse_tags"] = run(
        tf.estimator.Estimator(
            sparse_tags_model_fn, os.path.join(model_dir, "tags"), config, params=params
        ),
        examples,
    )
    out["sequence"] = run(
        tf.estimator.Estimator(
            sequence_model_fn, os.path.join(model_dir, "sequence"), config, params=params
        ),
        examples,
    )
    with open(results, "w") as f:
        json.dump(out, f)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])

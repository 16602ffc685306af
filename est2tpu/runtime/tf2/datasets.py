"""`tf.contrib.learn.datasets.base`'s CSV loaders, which current TensorFlow no longer has.

Plain NumPy over a file TensorFlow's `tf.io.gfile` opens (local paths and `gs://`, as TF1's
`gfile.Open`); the same rows, dtypes and `Dataset(data, target)` namedtuple as TensorFlow
1.15's `contrib/learn/python/learn/datasets/base.py`.
"""

from __future__ import annotations

import collections
import csv
from typing import Any

Dataset = collections.namedtuple("Dataset", ["data", "target"])


def _open(filename: Any) -> Any:
    import tensorflow as tf

    return tf.io.gfile.GFile(filename, "r")


def load_csv_with_header(
    filename: Any, target_dtype: Any, features_dtype: Any, target_column: int = -1
) -> Dataset:
    """A CSV whose first row starts with the number of samples and of features."""
    import numpy as np

    with _open(filename) as csv_file:
        data_file = csv.reader(csv_file)
        header = next(data_file)
        n_samples = int(header[0])
        n_features = int(header[1])
        data = np.zeros((n_samples, n_features), dtype=features_dtype)
        target = np.zeros((n_samples,), dtype=target_dtype)
        for i, row in enumerate(data_file):
            target[i] = np.asarray(row.pop(target_column), dtype=target_dtype)
            data[i] = np.asarray(row, dtype=features_dtype)
    return Dataset(data=data, target=target)


def load_csv_without_header(
    filename: Any, target_dtype: Any, features_dtype: Any, target_column: int = -1
) -> Dataset:
    """A CSV of rows only; `data` keeps NumPy's dtype for the stacked rows."""
    import numpy as np

    with _open(filename) as csv_file:
        data_file = csv.reader(csv_file)
        rows, targets = [], []
        for row in data_file:
            targets.append(row.pop(target_column))
            rows.append(np.asarray(row, dtype=features_dtype))
    return Dataset(data=np.array(rows), target=np.array(targets, dtype=target_dtype))

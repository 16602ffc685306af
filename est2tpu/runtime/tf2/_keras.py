"""The Keras the facade builds layers with: tf-keras (Keras 2) when installed, else tf.keras."""

from __future__ import annotations

from typing import Any


def keras() -> Any:
    try:
        import tf_keras

        return tf_keras
    except ImportError:  # TensorFlow <= 2.15, where tf.keras is Keras 2
        import tensorflow as tf

        return tf.keras

"""`tf.estimator.export` pieces the facade's `export_saved_model` understands."""

from __future__ import annotations

import os
import time
from typing import Any


def timestamped_dir(export_dir_base: Any) -> str:
    """`<base>/<seconds since the epoch>`, as TF1's `get_timestamped_export_dir`: a name
    already taken waits for the next second (two exports in one second must not collide:
    train_and_evaluate exports after every evaluation)."""
    for _ in range(10):
        path = os.path.join(os.fspath(export_dir_base), str(int(time.time())))
        if not os.path.exists(path):
            return path
        time.sleep(1)
    raise RuntimeError(f"Failed to obtain a unique export directory name under {export_dir_base}")


class PredictOutput:
    """`tf.estimator.export.PredictOutput`: the tensors a predict signature returns."""

    def __init__(self, outputs: Any) -> None:
        self.outputs = outputs if isinstance(outputs, dict) else {"output": outputs}


class ServingInputReceiver:
    """`tf.estimator.export.ServingInputReceiver` (built in TF1 style, with placeholders)."""

    def __init__(
        self,
        features: Any,
        receiver_tensors: Any,
        receiver_tensors_alternatives: Any = None,
    ) -> None:
        if receiver_tensors_alternatives:
            raise NotImplementedError(
                "est2tpu tf2 facade: receiver_tensors_alternatives is not supported"
            )
        self.features = features
        self.receiver_tensors = (
            receiver_tensors if isinstance(receiver_tensors, dict) else {"input": receiver_tensors}
        )

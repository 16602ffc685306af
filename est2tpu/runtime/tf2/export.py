"""`tf.estimator.export` pieces the facade's `export_saved_model` understands."""

from __future__ import annotations

from typing import Any


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

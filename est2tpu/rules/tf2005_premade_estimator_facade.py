"""TF2005: premade estimators -> the tf2 facade's (`est2tpu.runtime.tf2.DNNClassifier` & co.,
TF 2.15's V2 classes rebuilt on tf.distribute) when every argument maps exactly, with the TF1
optimizers and TF 1.x V1 arguments they are given translated; a finding for the rest."""

from __future__ import annotations

from est2tpu.rules._tf2005_facade import PremadeFacadeBase


class PremadeFacade(PremadeFacadeBase):
    """Premade calls whose every argument maps exactly become the facade's; TF2001 leaves
    them (and, unless this rule maps them, their arguments) alone. The decisions and their
    messages: `_tf2005_facade`, `_tf2005_premade`, `_tf2005_optimizers`."""

"""The abstention model: features (per-request evidence), model (load/predict: the frozen
selection's `search.abstention` block, read and applied by the engine) and train (fit on dev
judgements, called by stages/tune.py)."""

__all__: list[str] = []

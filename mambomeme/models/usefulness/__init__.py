"""The per-item usefulness model: features, model (load/predict: the JSON trees the engine
applies), train and fit (called by stages/tune.py)."""

__all__: list[str] = []

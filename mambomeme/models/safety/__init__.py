"""The learned safety classifier: features (the item's text, rule one-hots, template prior),
signals (extra per-item signals), model (load/predict: the verified JSON model applied at
ingest) and train (fit from frozen labels, called by stages/safety_model.py). The rules, the
labels, the review and the unseen-family report stay in mambomeme/moderation/."""

__all__: list[str] = []

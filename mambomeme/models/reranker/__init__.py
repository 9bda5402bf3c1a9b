"""The cross-encoder reranker: features (the item text it reads), manifest (the artifact
format), model (load/predict: the verified ONNX model served), data, negatives and train (the
training pairs and the fine-tuning, called by stages/train_reranker.py)."""

__all__: list[str] = []

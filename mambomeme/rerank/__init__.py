"""The reranker's acceptance rule against its baselines (acceptance.py: evaluation code). The
reranker itself (features, training, the served ONNX model) lives in mambomeme/models/reranker/."""

__all__: list[str] = []

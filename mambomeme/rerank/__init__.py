"""The trained cross-encoder reranker: training pairs, training, and the ONNX model served."""

from mambomeme.rerank.model import RERANKER_DIR, Reranker, open_reranker

__all__ = ["RERANKER_DIR", "Reranker", "open_reranker"]

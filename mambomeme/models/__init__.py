"""The learned pieces of search, one package each: features, train (called by its stage; may
use evaluation), load/predict (called by serving; never imports evaluation)."""

__all__: list[str] = []

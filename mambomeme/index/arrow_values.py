"""Arrow <-> NumPy for the engine's mask columns, without pandas.

pyarrow imports pandas (0.3 s, a third of a `mambomeme search` start) the first time a Python
value is converted to Arrow (`pa.array([...])`, `pa.scalar("safe")`, a Python scalar passed to a
compute function) or a column is converted to NumPy with `to_numpy()`: it checks whether the
value is a pandas object. Arrow-native compute does not. So the few constants the mask needs
are built from raw buffers, and boolean and index columns are read from their buffers.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pyarrow as pa


def strings(values: Sequence[str]) -> pa.Array:
    """A pa.string() array of `values` (for `pc.is_in` value sets; `strings([v])[0]` is a
    scalar for `pc.equal`)."""
    encoded = [v.encode("utf-8") for v in values]
    offsets = np.zeros(len(encoded) + 1, dtype=np.int32)
    offsets[1:] = np.cumsum([len(b) for b in encoded], dtype=np.int64)
    buffers = [None, pa.py_buffer(offsets.tobytes()), pa.py_buffer(b"".join(encoded))]
    return pa.Array.from_buffers(pa.string(), len(encoded), buffers)


def string(value: str) -> pa.Scalar:
    return strings([value])[0]


def _chunks(values: pa.ChunkedArray | pa.Array) -> list[pa.Array]:
    return list(values.chunks) if isinstance(values, pa.ChunkedArray) else [values]


def _bits(buffer: pa.Buffer, offset: int, length: int) -> np.ndarray:
    raw = np.frombuffer(buffer, dtype=np.uint8)
    return np.unpackbits(raw, bitorder="little")[offset : offset + length].astype(bool)


def bools(values: pa.ChunkedArray | pa.Array) -> np.ndarray:
    """A boolean column as a NumPy bool array; a null counts as False."""
    parts = []
    for chunk in _chunks(values):
        if chunk.type != pa.bool_():
            raise TypeError(f"expected a boolean column, got {chunk.type}")
        validity, data = chunk.buffers()
        bits = (
            _bits(data, chunk.offset, len(chunk))
            if data is not None
            else np.zeros(len(chunk), dtype=bool)
        )
        if validity is not None and chunk.null_count:
            bits &= _bits(validity, chunk.offset, len(chunk))
        parts.append(bits)
    return np.concatenate(parts) if parts else np.zeros(0, dtype=bool)


def int32s(values: pa.Array) -> np.ndarray:
    """A null-free int32 array (dictionary indices) as NumPy, zero-copy."""
    if values.type != pa.int32() or values.null_count:
        raise TypeError(f"expected null-free int32 values, got {values.type}")
    data = np.frombuffer(values.buffers()[1], dtype=np.int32)
    return data[values.offset : values.offset + len(values)]


def indices(rows: Sequence[int]) -> pa.Array:
    """Row numbers as a pa.int64() array (for `take`)."""
    data = np.asarray(rows, dtype=np.int64)
    return pa.Array.from_buffers(pa.int64(), len(data), [None, pa.py_buffer(data.tobytes())])

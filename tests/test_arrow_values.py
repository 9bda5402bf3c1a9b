"""Arrow <-> NumPy without pandas: the same values as pyarrow's own conversions, and a lexical
search process that never imports pandas (0.3 s of its start)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from mambomeme.index import arrow_values


def test_strings_and_scalars_compare_like_python_values() -> None:
    column = pa.chunked_array([pa.array(["safe", "unsafe", None]), pa.array(["é", "safe"])])
    assert arrow_values.strings(["é", "", "safe"]).to_pylist() == ["é", "", "safe"]
    equal = pc.equal(column, arrow_values.string("safe"))
    assert equal.to_pylist() == pc.equal(column, "safe").to_pylist()
    found = pc.is_in(column, value_set=arrow_values.strings(["é", "unsafe"]))
    assert found.to_pylist() == [False, True, False, True, False]


def test_bools_reads_offsets_and_counts_a_null_as_false() -> None:
    values = pa.array([True, None, False, True, True, None, True, False, True, True])
    sliced = pa.chunked_array([values.slice(1, 7), values.slice(3)])
    expected = np.asarray(pc.fill_null(sliced, False).to_numpy(zero_copy_only=False), dtype=bool)
    assert arrow_values.bools(sliced).tolist() == expected.tolist()
    assert arrow_values.bools(pa.chunked_array([], type=pa.bool_())).tolist() == []


def test_int32s_and_indices_round_trip() -> None:
    encoded = pc.dictionary_encode(pa.array(["b", "a", "b", "c"])).indices.slice(1)
    assert arrow_values.int32s(encoded).tolist() == encoded.to_pylist()
    table = pa.table({"x": list(range(10))})
    assert table.take(arrow_values.indices([7, 2, 2])).column("x").to_pylist() == [7, 2, 2]


def test_a_lexical_search_process_never_imports_pandas(fixture_build: Path, engine: Any) -> None:
    """After the first open (the `engine` fixture: the content check, which reads the table
    through pyarrow.dataset, ran and was remembered) a search process stays pandas-free."""
    code = (
        "import sys\n"
        "from mambomeme.cli import main\n"
        f"main(['search', 'john cena', '--system', 'bm25', '--build', {str(fixture_build)!r}])\n"
        "print('pandas' in sys.modules, file=sys.stderr)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert "John Cena" in done.stdout
    assert done.stderr.strip().splitlines()[-1] == "False"

"""The search worker: queued jobs are superseded; errors and dense state are delivered."""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence

from mambomeme.search.results import Filters, SearchResponse
from mambomeme.tui.worker import Job, SearchWorker


def job(seq: int, text: str) -> Job:
    return Job(seq, (text,), Filters(), "bm25", 0.0, 0.0)


def wait(predicate, timeout: float = 5.0) -> None:  # type: ignore[no-untyped-def]
    deadline = time.time() + timeout
    while not predicate():
        assert time.time() < deadline
        time.sleep(0.005)


def test_a_job_not_started_is_replaced_by_a_newer_one() -> None:
    gate = threading.Event()
    ran: list[str] = []

    def search(cues: Sequence[str], limit: int, filters: Filters, system: str) -> SearchResponse:
        ran.append(cues[0])
        if cues[0] == "first":
            gate.wait(5)
        return SearchResponse(cues[0], system, tuple(cues), ())

    wakes: list[bytes] = []
    worker = SearchWorker(search, 10, wakes.append)
    worker.start()
    worker.submit(job(1, "first"))
    wait(lambda: ran == ["first"])
    worker.submit(job(2, "second"))  # queued behind the running first job ...
    worker.submit(job(3, "third"))  # ... and replaced before it starts
    gate.set()
    wait(lambda: len(ran) == 2 and len(wakes) == 2)
    worker.stop()
    assert ran == ["first", "third"]
    assert [o.job.seq for o in worker.take().outcomes] == [1, 3]


def test_errors_become_outcomes_and_dense_state_is_delivered() -> None:
    def search(cues: Sequence[str], limit: int, filters: Filters, system: str) -> SearchResponse:
        raise ValueError("bad index")

    def load_dense() -> None:
        raise OSError("no model")

    wakes: list[bytes] = []
    worker = SearchWorker(
        search, 10, wakes.append, open_backend=lambda: None, load_dense=load_dense
    )
    assert worker.take().dense_state == "loading"
    worker.start()
    worker.submit(job(1, "x"))
    wait(lambda: b"r" in wakes and b"d" in wakes)
    worker.stop()
    delivery = worker.take()
    assert delivery.outcomes[0].error == "ValueError: bad index"
    assert delivery.outcomes[0].response is None
    assert delivery.dense_state == "failed (OSError: no model)"


def test_backend_open_failure_is_reported() -> None:
    def open_backend() -> None:
        raise FileNotFoundError("build/x/items.parquet")

    wakes: list[bytes] = []
    worker = SearchWorker(
        lambda *a: SearchResponse("r", "bm25", (), ()), 10, wakes.append, open_backend=open_backend
    )
    worker.start()
    wait(lambda: b"e" in wakes)
    worker.stop()
    assert worker.take().backend_error.startswith("cannot open the index: FileNotFoundError")

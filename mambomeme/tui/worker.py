"""The TUI's background threads: one search worker and one dense-model loader.

The controller hands a `Job` to `submit`; a job not yet started is replaced by a newer one (so a
burst of submits runs only the last), and every finished job becomes an `Outcome`. After each
change the threads call `wake` (a write to the main loop's watch_pipe); the main loop then calls
`take` and drops outcomes whose sequence number is no longer the latest. The worker opens the
backend first, on its own thread, so a large corpus never delays the first draw. On exit `stop`
asks both threads to end and `join` waits for them (not daemons: see `start`).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from mambomeme.search.results import Filters, SearchResponse

SearchFn = Callable[[Sequence[str], int, Filters, str], SearchResponse]


@dataclass(frozen=True)
class Job:
    seq: int
    cues: tuple[str, ...]
    filters: Filters
    system: str
    t0: float  # perf_counter when the submit key was accepted
    t0_epoch: float  # the same moment in wall-clock seconds (cross-checked by the harness)


@dataclass(frozen=True)
class Outcome:
    job: Job
    response: SearchResponse | None
    error: str  # "" on success


@dataclass(frozen=True)
class Delivery:
    outcomes: list[Outcome]
    dense_state: str  # "loading", "off", "ready" or "failed (<reason>)"
    backend_error: str


class SearchWorker:
    def __init__(
        self,
        search: SearchFn,
        limit: int,
        wake: Callable[[bytes], None],
        open_backend: Callable[[], object] | None = None,
        load_dense: Callable[[], None] | None = None,
    ) -> None:
        self.search = search
        self.limit = limit
        self.wake = wake
        self.open_backend = open_backend
        self.load_dense = load_dense
        self._opened = threading.Event()
        self._lock = threading.Condition()  # guards everything below
        self._job: Job | None = None
        self._outcomes: list[Outcome] = []
        self._dense_state = "loading" if load_dense else "off"
        self._backend_error = ""
        self._stopping = False
        self._threads: list[threading.Thread] = []

    def start(self) -> None:
        # not daemons: a daemon killed at interpreter exit inside the ONNX or Arrow runtime can
        # abort the process (exit 134); `join` waits for them instead (module docstring)
        self._threads = [threading.Thread(target=self._search_loop, name="search")]
        if self.load_dense is not None:
            self._threads.append(threading.Thread(target=self._dense, name="dense"))
        for thread in self._threads:
            thread.start()

    def stop(self) -> None:
        """Ask the threads to end: the search loop after the search in flight, the dense
        loader when its load returns."""
        with self._lock:
            self._stopping = True
            self._lock.notify_all()

    def join(self) -> None:
        """Wait for the threads `stop` asked to end (a dense load still running finishes)."""
        for thread in self._threads:
            thread.join()

    def submit(self, job: Job) -> None:
        with self._lock:
            self._job = job  # replaces a job the worker has not started yet
            self._lock.notify()

    def has_outcomes(self) -> bool:
        with self._lock:
            return bool(self._outcomes)

    def dense_state(self) -> str:
        with self._lock:
            return self._dense_state

    def take(self) -> Delivery:
        with self._lock:
            delivery = Delivery(self._outcomes, self._dense_state, self._backend_error)
            self._outcomes, self._backend_error = [], ""
        return delivery

    def _search_loop(self) -> None:
        if self.open_backend is not None:
            try:
                self.open_backend()
            except Exception as exc:  # shown in the status bar; each search will retry
                with self._lock:
                    self._backend_error = f"cannot open the index: {type(exc).__name__}: {exc}"
                self.wake(b"e")
        self._opened.set()
        while True:
            with self._lock:
                while self._job is None and not self._stopping:
                    self._lock.wait()
                if self._stopping or self._job is None:
                    return
                job, self._job = self._job, None
            try:
                outcome = Outcome(
                    job, self.search(job.cues, self.limit, job.filters, job.system), ""
                )
            except Exception as exc:  # shown in the status bar; the UI keeps working
                outcome = Outcome(job, None, f"{type(exc).__name__}: {exc}")
            with self._lock:
                self._outcomes.append(outcome)
            self.wake(b"r")

    def _dense(self) -> None:
        assert self.load_dense is not None
        self._opened.wait()
        with self._lock:
            if self._stopping:  # quit before the model was needed: do not load it
                return
        try:
            self.load_dense()
            state = "ready"
        except Exception as exc:
            state = f"failed ({type(exc).__name__}: {exc})"
        with self._lock:
            self._dense_state = state
        self.wake(b"d")

"""Our nDCG@10, MRR@10, Recall@10 and Hit@k agree with ir_measures (pytrec_eval) to 1e-9.

ir_measures averages only over the queries it sees, so every comparison here is per query, with
the queries ir_measures leaves out (missing from the run or the qrels) filled with 0, and means
taken over every benchmark query, as our scorer does.

Ties: trec_eval ranks tied scores by document id descending. ir_measures' default provider for
RR@10 (msmarco) breaks ties another way, and pytrec_eval ignores RR's cutoff, so for RR the
reference is pytrec_eval on the run cut to its trec_eval top 10.
"""

from __future__ import annotations

import random
from pathlib import Path

import ir_measures
import pytest
from ir_measures import RR, Qrel, R, ScoredDoc, Success, nDCG
from test_eval_support import GOOD, make_run, tiny

from mambomeme.evaluation import metrics
from mambomeme.evaluation.runs import read_run, write_run
from mambomeme.evaluation.score import evaluate_run

MEASURES = {
    "ndcg": nDCG(gains={0: 0, 1: 1, 2: 3, 3: 7}) @ 10,
    "rr": RR(rel=2) @ 10,
    "recall": R(rel=2) @ 10,
    "hit1": Success(rel=2) @ 1,
    "hit5": Success(rel=2) @ 5,
    "hit10": Success(rel=2) @ 10,
}


def ours(name: str, ranking: list[str], qrels: dict[str, int]) -> float:
    if name == "ndcg":
        return metrics.ndcg(ranking, qrels)
    if name == "rr":
        return metrics.reciprocal_rank(ranking, qrels)
    if name == "recall":
        return metrics.recall(ranking, qrels)
    return metrics.hit(ranking, qrels, int(name[3:]))


def top10(run: list[ScoredDoc]) -> list[ScoredDoc]:
    """Each query's first 10 documents in trec_eval order (score desc, then doc id desc)."""
    by_query: dict[str, list[ScoredDoc]] = {}
    for row in run:
        by_query.setdefault(row.query_id, []).append(row)
    rows = []
    for docs in by_query.values():
        rows += sorted(docs, key=lambda d: (d.score, d.doc_id), reverse=True)[:10]
    return rows


def theirs(qrels: list[Qrel], run: list[ScoredDoc]) -> dict[tuple[str, str], float]:
    by_measure = {m: name for name, m in MEASURES.items()}
    provider = ir_measures.pytrec_eval
    others = [m for name, m in MEASURES.items() if name != "rr"]
    values = {
        (by_measure[m.measure], m.query_id): m.value for m in provider.iter_calc(others, qrels, run)
    }
    for m in provider.iter_calc([MEASURES["rr"]], qrels, top10(run)):
        values[("rr", m.query_id)] = m.value
    return values


def synthetic(
    seed: int,
) -> tuple[list[str], dict[str, dict[str, int]], dict[str, dict[str, float]]]:
    """40 queries: ties (few distinct scores), empty and missing run entries, lists longer than
    10, queries with no relevant item, and queries with no qrels at all."""
    rng = random.Random(seed)
    docs = [f"d{i:02d}" for i in range(30)]
    qids = [f"q{i:02d}" for i in range(40)]
    qrels: dict[str, dict[str, int]] = {}
    runs: dict[str, dict[str, float]] = {}
    for n, qid in enumerate(qids):
        kind = n % 5
        if kind != 4:  # kind 4: no qrels rows at all
            judged = rng.sample(docs, rng.randint(1, 12))
            top = 1 if kind == 3 else 3  # kind 3: nothing with grade >= 2
            qrels[qid] = {d: rng.randint(0, top) for d in judged}
        if kind == 2 and n % 10 == 2:
            continue  # missing from the run
        if kind == 2:
            runs[qid] = {}  # an empty list
            continue
        shown = rng.sample(docs, rng.randint(1, 15))
        runs[qid] = {d: float(rng.randint(1, 4)) for d in shown}  # many ties
    return qids, qrels, runs


@pytest.mark.parametrize("seed", [1, 2, 3, 4, 5])
def test_per_query_and_mean_agree_with_ir_measures(seed: int) -> None:
    qids, qrels, runs = synthetic(seed)
    qrel_rows = [Qrel(q, d, g) for q, judged in qrels.items() for d, g in judged.items()]
    run_rows = [ScoredDoc(q, d, s) for q, scored in runs.items() for d, s in scored.items()]
    reference = theirs(qrel_rows, run_rows)
    assert any(q not in runs for q in qids) and any(runs.get(q) == {} for q in qids)
    for name in MEASURES:
        values = []
        for qid in qids:
            mine = ours(name, metrics.trec_order(runs.get(qid, {})), qrels.get(qid, {}))
            other = reference.get((name, qid), 0.0)  # not reported by ir_measures -> 0
            assert mine == pytest.approx(other, abs=1e-9), (name, qid)
            values.append(mine)
        # means over every query, including those ir_measures never reports
        filled = [reference.get((name, q), 0.0) for q in qids]
        assert sum(values) / len(qids) == pytest.approx(sum(filled) / len(qids), abs=1e-9)


def test_our_run_files_score_the_same_in_ir_measures(tmp_path: Path) -> None:
    benchmark = tiny(tmp_path)
    answers = {**GOOD, "john cena": RuntimeError("boom"), "wrestling": ["fx:7", "fx:99", "fx:6"]}
    path = tmp_path / "runs" / "bm25.trec"
    write_run(path, make_run(benchmark, answers))
    run = read_run(path, benchmark)
    outcomes = {o.qid: o for o in evaluate_run(benchmark, run)}
    reference = theirs(
        list(ir_measures.read_trec_qrels(str(benchmark.path / "qrels.txt"))),
        list(ir_measures.read_trec_run(str(path))),
    )
    answerable = [q.qid for q in benchmark.queries if q.answerable]
    for name, field in [
        ("ndcg", "ndcg"),
        ("rr", "rr10"),
        ("recall", "recall10"),
        ("hit1", "hit1"),
        ("hit5", "hit5"),
        ("hit10", "hit10"),
    ]:
        for qid in answerable:
            assert getattr(outcomes[qid], field) == pytest.approx(
                reference.get((name, qid), 0.0), abs=1e-9
            ), (name, qid)
    # the errored query is absent from the run file: ir_measures scores it 0 as well, or not at all
    assert reference.get(("ndcg", "q-entity"), 0.0) == 0.0
    # tie-free run files: the default providers (msmarco for RR@10) agree too
    default = {
        (m.measure, m.query_id): m.value
        for m in ir_measures.iter_calc(
            [MEASURES["rr"]],
            list(ir_measures.read_trec_qrels(str(benchmark.path / "qrels.txt"))),
            list(ir_measures.read_trec_run(str(path))),
        )
    }
    for qid in answerable:
        assert outcomes[qid].rr10 == pytest.approx(
            default.get((MEASURES["rr"], qid), 0.0), abs=1e-9
        )

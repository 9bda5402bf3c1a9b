"""Pooling, blind export, import, queue and freezing on the fixture corpus (real engine)."""

from __future__ import annotations

import csv
import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from mambomeme.errors import AnnotationsPendingError, BenchmarkError
from mambomeme.evaluation import annotation_workflow as ac
from mambomeme.evaluation import annotations as sheets
from mambomeme.evaluation import pooling
from mambomeme.evaluation.benchmark import load_benchmark

ROOT = Path(__file__).resolve().parents[1]
QIDS = ("fx-entity-02", "fx-quote-04", "fx-topic-03", "fx-noisy-01", "fx-entity-07")
SYSTEMS = ("bm25", "bm25+typo")


def _benchmark(tmp: Path) -> Path:
    bench = tmp / "bench"
    bench.mkdir()
    lines = [
        line
        for line in (ROOT / "benchmarks/fixture/queries.jsonl").read_text().splitlines()
        if json.loads(line)["qid"] in QIDS
    ]
    (bench / "queries.jsonl").write_text("\n".join(lines) + "\n")
    (bench / "benchmark.json").write_text(
        json.dumps(
            {
                "name": "pooltest",
                "version": "v1",
                "partition": "dev",
                "corpus": "fixture@v1",
                "judgement_set": "none",
                "provisional": True,
                "exposed": False,
            },
            indent=2,
        )
        + "\n"
    )
    (bench / "exact-targets.jsonl").write_text(
        '{"qid": "fx-entity-02", "groups": [["fx:tpl-disaster-girl"]]}\n'
        '{"qid": "fx-quote-04", "groups": [["fx:change-my-mind-01"]]}\n'
    )
    (bench / "pool.yaml").write_text(  # john cena gold keeps fx-noisy-01 answerable
        "systems: [bm25, bm25+typo]\ndepth: 10\n"
        "annotators: {annotator-a: 11, annotator-b: 22}\n"
        "exact_targets: exact-targets.jsonl\n"
        "gold: {fx-topic-03: [fx:grumpy-cat-01], fx-noisy-01: [fx:john-cena-01]}\n"
        "hard_negatives: {fx-entity-02: [fx:evil-kermit-01]}\n"
    )
    return bench


@pytest.fixture()
def pooled(tmp_path: Path, lexical_engine: Any, fixture_build: Path) -> tuple[Path, Path, Any]:
    from mambomeme.search.results import Filters

    bench = _benchmark(tmp_path)

    def search(query: Any, system: str) -> list[str]:
        found = lexical_engine.search(query.all_cues, 10, Filters(**query.filter_dict), system)
        return [r.item_id for r in found.results]

    out = tmp_path / "pools" / "t"
    ac.make_pool(bench, bench / "pool.yaml", out, search, lexical_engine.items, fixture_build)
    return bench, out, search


def test_pool_is_union_of_top10_plus_gold_deduplicated(pooled: Any) -> None:
    bench, out, search = pooled
    pool = pooling.read_pool(out)
    queries = {q.qid: q for q in pooling.read_queries(bench / "queries.jsonl")}
    for qid, query in queries.items():
        expected = {i for s in SYSTEMS for i in search(query, s)[:10]}
        expected |= {
            "fx-entity-02": {"fx:tpl-disaster-girl", "fx:evil-kermit-01"},
            "fx-quote-04": {"fx:change-my-mind-01"},
            "fx-topic-03": {"fx:grumpy-cat-01"},
            "fx-noisy-01": {"fx:john-cena-01"},
        }.get(qid, set())
        got = [c.item_id for c in pool if c.qid == qid]
        assert len(got) == len(set(got))
        assert set(got) == expected
    sources = {(c.qid, c.item_id): c.sources for c in pool}
    assert "hard_negative" in sources[("fx-entity-02", "fx:evil-kermit-01")]
    manifest = pooling.read_manifest(out)
    assert manifest["pairs"] == len(pool)


def test_exports_are_blind_shuffled_and_carry_the_scale(pooled: Any) -> None:
    _, out, _ = pooled
    pairs = {name: sheets.assigned_pairs(out, name) for name in ("annotator-a", "annotator-b")}
    assert sorted(pairs["annotator-a"]) == sorted(pairs["annotator-b"])
    assert pairs["annotator-a"] != pairs["annotator-b"]
    pool = pooling.read_pool(out)
    again = [[c.qid, c.item_id] for c in pooling.annotator_order(pool, 11)]
    assert [list(p) for p in pairs["annotator-a"]] == again  # reproducible from the seed
    for name in ("annotator-a", "annotator-b"):
        for file in ("sheet.csv", "sheet.html", "labelstudio.json", "labelstudio.xml"):
            text = (out / name / file).read_text()
            for leak in (*SYSTEMS, "hard_negative", "gold", "@1"):
                assert leak not in text, (file, leak)
            assert "related but not useful" in text
            assert "unsafe" in text
    html = (out / "annotator-a" / "sheet.html").read_text()
    assert "data:image/jpeg;base64," in html
    assert "<script" not in html


def _fill(sheet: Path, dest: Path, grade_of: Any, safety_of: Any = lambda i: "safe") -> None:
    rows = list(csv.reader(sheet.read_text().splitlines()))
    with dest.open("w", newline="") as handle:
        writer = csv.writer(handle)
        header: list[str] | None = None
        for row in rows:
            if header is None:
                writer.writerow(row)
                if row and row[0] == "row":
                    header = row
                continue
            record = dict(zip(header, row, strict=False))
            record["grade"] = str(grade_of(record["qid"], record["item_id"]))
            record["safety"] = safety_of(record["item_id"])
            writer.writerow([record[c] for c in header])


def _grade(qid: str, item: str) -> int:
    if qid == "fx-entity-07":
        return 0
    wanted = ("disaster-girl", "change-my-mind", "grumpy", "john-cena")
    return 3 if any(w in item for w in wanted) else 1


def _snapshot(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in folder.rglob("*") if p.is_file()}


def test_stage_round_trip_queue_third_frozen_set_no_op_and_new_version(
    pooled: Any, tmp_path: Path, lexical_engine: Any, fixture_build: Path
) -> None:
    """pool -> two annotator files -> queue -> third -> frozen set -> rerun is a verified
    no-op -> a changed annotator file gives a new version and never overwrites the old one."""
    bench, out, search = pooled
    judgements, sets, scored = tmp_path / "judgements", tmp_path / "sets", tmp_path / "scored"
    filled_a, filled_b = tmp_path / "a.csv", tmp_path / "b.csv"
    _fill(out / "annotator-a" / "sheet.csv", filled_a, _grade)
    # b: one grade off by 1 on every third-grade item, far off on grumpy, unsafe on evil kermit
    _fill(
        out / "annotator-b" / "sheet.csv",
        filled_b,
        lambda q, i: 0 if "grumpy" in i else (2 if _grade(q, i) == 3 else _grade(q, i)),
        lambda i: "unsafe" if i == "fx:evil-kermit-01" else "safe",
    )
    ac_pairs = sheets.assigned_pairs(out, "annotator-a")
    sheets.import_labels(filled_a, judgements / "annotator-a.csv", ac_pairs)
    sheets.import_labels(
        filled_b, judgements / "annotator-b.csv", sheets.assigned_pairs(out, "annotator-b")
    )

    def adjudicate(pool_dir: Path = out) -> ac.Adjudication:
        return ac.adjudicate_run(
            bench,
            bench / "pool.yaml",
            pool_dir,
            judgements,
            sets,
            tmp_path / "queue",
            scored,
            lexical_engine.items,
            fixture_build,
        )

    with pytest.raises(AnnotationsPendingError) as waiting:
        adjudicate()
    message = str(waiting.value)
    assert "queue/annotator-c" in message and "nothing is frozen" in message
    queue = sorted(map(tuple, sheets.assigned_pairs(tmp_path / "queue", "annotator-c")))
    expected = sorted(
        {(q, i) for q, i in ac_pairs if "grumpy" in i and _grade(q, i) == 3}
        | {(q, i) for q, i in ac_pairs if i == "fx:evil-kermit-01"}
    )
    assert queue == expected
    assert not sets.exists() and not scored.exists()  # nothing frozen, nothing to score
    _fill(
        tmp_path / "queue" / "annotator-c" / "sheet.csv",
        judgements / "annotator-c.csv",
        lambda q, i: 2,
        lambda i: "unsafe",
    )
    done = adjudicate()
    assert done.created and "frozen (new version)" in done.summary(), done.summary()
    assert sorted(p.name for p in sets.iterdir()) == ["pooltest-j1"]
    loaded = load_benchmark(scored)
    assert loaded.info.judgement_set == "pooltest-j1"
    qrels = loaded.qrels
    assert qrels["fx-entity-02"]["fx:tpl-disaster-girl"] == (3 + 2) // 2  # half rounds down
    assert qrels["fx-entity-02"]["fx:evil-kermit-01"] == 2  # adjudicated
    assert loaded.safety["fx:evil-kermit-01"] == "unsafe"
    for q, i in queue:
        assert qrels[q][i] == 2
    assert loaded.exact["fx-quote-04"] == (("fx:change-my-mind-01",),)
    for name in ("qrels.txt", "safety.tsv", "exact.jsonl", "agreement.json"):
        assert (scored / name).read_bytes() == (sets / "pooltest-j1" / name).read_bytes()
    grades = (sets / "pooltest-j1" / "grades.tsv").read_text().splitlines()
    row = next(r.split("\t") for r in grades if "\tfx:tpl-disaster-girl\t" in r)
    assert row[2:6] == ["3", "2", "", "2.5"]
    report = json.loads((sets / "pooltest-j1" / "agreement.json").read_text())
    assert report["queue"] == len(queue)
    assert set(report["slices"]) == {"entity", "quote", "topic", "noisy"}
    record = json.loads((scored / "judgement-set.json").read_text())
    assert record["judgement_set"] == "pooltest-j1"
    assert record["coverage"]["pool_unjudged"] == 0
    assert record["coverage"]["judged_pairs"] == len(ac_pairs)

    # rerun: the set is regenerated, found identical, nothing is written
    frozen, scored_before = _snapshot(sets), _snapshot(scored)
    message = adjudicate().summary()
    assert "verified" in message, message
    assert _snapshot(sets) == frozen and _snapshot(scored) == scored_before

    # the pool again, now knowing the judgements: nothing new to ask, the same candidates
    names = ["annotator-a", "annotator-b"]
    repooled = tmp_path / "pools" / "again"
    judged = ac.judged_by_all(judgements, names)
    manifest = ac.make_pool(
        bench, bench / "pool.yaml", repooled, search, lexical_engine.items, fixture_build, judged
    )
    assert (manifest["pairs"], manifest["already_judged"], manifest["to_annotate"]) == (
        len(ac_pairs),
        len(ac_pairs),
        0,
    )
    assert sheets.assigned_pairs(repooled, "annotator-a") == []
    assert [c.item_id for c in pooling.read_pool(repooled)] == [
        c.item_id for c in pooling.read_pool(out)
    ]  # deterministic
    # a new candidate (the engine or config changed): a new round, reported, not blocking
    grown = bench / "pool-grown.yaml"
    grown.write_text(
        (bench / "pool.yaml")
        .read_text()
        .replace("fx:evil-kermit-01]", "fx:evil-kermit-01, fx:two-buttons-01]")
    )
    manifest = ac.make_pool(
        bench,
        grown,
        tmp_path / "pools" / "grown",
        search,
        lexical_engine.items,
        fixture_build,
        judged,
    )
    assert manifest["to_annotate"] == 1
    assert sheets.assigned_pairs(tmp_path / "pools" / "grown", "annotator-b") == [
        ("fx-entity-02", "fx:two-buttons-01")
    ]
    message = adjudicate(tmp_path / "pools" / "grown").summary()
    assert "verified" in message, message
    coverage = json.loads((scored / "judgement-set.json").read_text())["coverage"]
    assert coverage["pool_unjudged"] == 1
    assert coverage["pool_unjudged_sample"] == [["fx-entity-02", "fx:two-buttons-01"]]
    assert _snapshot(sets) == frozen

    # a malformed annotator file is refused, naming file and row; nothing is lost or written
    b_file = judgements / "annotator-b.csv"
    good_b = b_file.read_bytes()
    lines = good_b.decode().splitlines()
    lines[1] = lines[1].rsplit(",", 2)[0] + ",5,safe"
    b_file.write_text("\n".join(lines) + "\n")
    with pytest.raises(BenchmarkError, match=r"annotator-b.csv:2: .*grade must be"):
        adjudicate()
    assert _snapshot(sets) == frozen

    # a corrected annotator file (b's 2 -> 3 where a gave 3): a new version j2
    lines = good_b.decode().splitlines()
    at = lines.index("fx-quote-04,fx:change-my-mind-01,2,safe")
    lines[at] = "fx-quote-04,fx:change-my-mind-01,3,safe"
    b_file.write_text("\n".join(lines) + "\n")
    message = adjudicate().summary()
    assert "frozen (new version)" in message, message
    assert sorted(p.name for p in sets.iterdir()) == ["pooltest-j1", "pooltest-j2"]
    assert {k: v for k, v in _snapshot(sets).items() if k.startswith("pooltest-j1")} == frozen
    rescored = load_benchmark(scored)
    assert rescored.info.judgement_set == "pooltest-j2"
    assert rescored.sha256 != loaded.sha256  # every compared system is rerun and rescored
    assert rescored.qrels["fx-quote-04"]["fx:change-my-mind-01"] == 3
    assert loaded.qrels["fx-quote-04"]["fx:change-my-mind-01"] == 2
    # the first version is still there, untouched, and still verifies
    b_file.write_bytes(good_b)
    message = adjudicate().summary()
    assert "pooltest-j1: verified" in message, message
    assert load_benchmark(scored).info.judgement_set == "pooltest-j1"


def test_dev_v1_latest_set_is_reproduced_from_its_annotator_files(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The committed dev-v1 annotator files regenerate the latest set, dev-v1-j2 (rounds 1-3),
    byte for byte (no new version; dev-v1-j1 untouched), against a pool that differs from the
    rounds: judged pairs outside it stay judgements, pool pairs nobody judged are counted."""
    monkeypatch.chdir(ROOT)  # the stage runs at the repository root (inputs are named so)
    dev = ROOT / "benchmarks" / "dev-v1"
    sets = tmp_path / "judgement-sets" / "dev-v1"
    shutil.copytree(ROOT / "judgement-sets" / "dev-v1", sets)
    judged = sorted(sheets.read_labels(ROOT / "judgements" / "dev-v1" / "annotator-a.csv"))
    pool = [pooling.Candidate(q, i, ("bm25@1",)) for q, i in judged[5:]]
    pool.append(pooling.Candidate(judged[0][0], "memegen:not-judged-yet", ("dense@9",)))
    pooling.write_pool(tmp_path / "pool", pool, {"pairs": len(pool)})
    done = ac.adjudicate_run(
        dev,
        dev / "pool.yaml",
        tmp_path / "pool",
        Path("judgements") / "dev-v1",
        sets,
        tmp_path / "queue",
        tmp_path / "scored",
        {},
        tmp_path,
    )
    assert not done.created and "dev-v1-j2: verified" in done.summary(), done.summary()
    assert _snapshot(sets) == _snapshot(ROOT / "judgement-sets" / "dev-v1")
    coverage = json.loads((tmp_path / "scored" / "judgement-set.json").read_text())["coverage"]
    assert coverage["judged_outside_pool"] == 5
    assert coverage["pool_unjudged"] == 1
    latest = ROOT / "judgement-sets" / "dev-v1" / "dev-v1-j2"
    for name in ("qrels.txt", "safety.tsv", "exact.jsonl"):
        assert (tmp_path / "scored" / name).read_bytes() == (latest / name).read_bytes(), name
    assert (tmp_path / "scored" / "queries.jsonl").read_bytes() == (
        dev / "queries.jsonl"
    ).read_bytes()
    info = json.loads((tmp_path / "scored" / "benchmark.json").read_text())
    assert info["judgement_set"] == "dev-v1-j2"


def test_malformed_annotator_file_is_refused_and_nothing_is_lost(
    pooled: Any, tmp_path: Path
) -> None:
    _, out, _ = pooled
    pairs = sheets.assigned_pairs(out, "annotator-a")
    good = tmp_path / "good.csv"
    _fill(out / "annotator-a" / "sheet.csv", good, _grade)
    dest = tmp_path / "judgements" / "annotator-a.csv"
    sheets.import_labels(good, dest, pairs)
    kept = dest.read_bytes()

    bad = tmp_path / "bad.csv"
    text = good.read_text().splitlines()
    header_at = next(n for n, line in enumerate(text) if line.startswith("row,"))
    cells = next(csv.reader([text[header_at + 3]]))
    cells[-3] = "4"  # grade column
    text[header_at + 3] = ",".join(f'"{c}"' for c in cells)
    bad.write_text("\n".join(text) + "\n")
    with pytest.raises(BenchmarkError, match=rf"bad.csv:{header_at + 4}: .*grade must be"):
        sheets.read_labels(bad, pairs)
    with pytest.raises(BenchmarkError, match="never overwritten"):
        sheets.import_labels(bad, dest, pairs)
    other = tmp_path / "judgements" / "annotator-b.csv"
    with pytest.raises(BenchmarkError, match="grade must be"):
        sheets.import_labels(bad, other, pairs)
    assert dest.read_bytes() == kept
    assert not other.exists()
    assert sorted(p.name for p in dest.parent.iterdir()) == ["annotator-a.csv"]

    short = tmp_path / "short.csv"
    short.write_text("\n".join(good.read_text().splitlines()[:-1]) + "\n")
    with pytest.raises(BenchmarkError, match="1 assigned pairs have no row"):
        sheets.read_labels(short, pairs)
    nosafety = tmp_path / "nosafety.csv"
    nosafety.write_text(good.read_text().replace(",safe,", ",,", 1))
    with pytest.raises(BenchmarkError, match=r"nosafety.csv:\d+: .*safety must be"):
        sheets.read_labels(nosafety, pairs)


def test_an_item_has_one_safety_class_per_annotator(tmp_path: Path) -> None:
    path = tmp_path / "x.csv"
    path.write_text("qid,item_id,grade,safety\nq1,i1,2,safe\nq2,i1,1,unsafe\n")
    with pytest.raises(
        BenchmarkError, match=r"x.csv:3: item i1 is unsafe here but safe at .*x.csv:2"
    ):
        sheets.read_labels(path)


def test_labelstudio_export_is_read(tmp_path: Path) -> None:
    path = tmp_path / "ls.json"
    result = [
        {"from_name": "grade", "value": {"choices": ["2 useful"]}},
        {"from_name": "safety", "value": {"choices": ["safe"]}},
    ]
    path.write_text(
        json.dumps(
            [
                {"data": {"qid": "q1", "item_id": "i1"}, "annotations": [{"result": result}]},
                {"data": {"qid": "q1", "item_id": "i2"}, "annotations": []},
            ]
        )
    )
    with pytest.raises(BenchmarkError, match=r"ls.json:task 2: .*grade must be"):
        sheets.read_labels(path)
    path.write_text(
        json.dumps([{"data": {"qid": "q1", "item_id": "i1"}, "annotations": [{"result": result}]}])
    )
    labels = sheets.read_labels(path, [("q1", "i1")])
    assert labels[("q1", "i1")].grade == 2


def test_only_the_pooled_partition_is_asked(
    tmp_path: Path, lexical_engine: Any, fixture_build: Path
) -> None:
    from mambomeme.search.results import Filters

    bench = _benchmark(tmp_path)
    items = lexical_engine.items
    families = sorted({pooling.item_family(items[i].template_group) for i in items})
    hidden = pooling.item_family(items["fx:grumpy-cat-01"].template_group)
    with (tmp_path / "families.csv").open("w") as handle:
        handle.write("family,source,source_key,partition\n")
        for fam in families:
            handle.write(f"{fam},fixture,{fam},{'hidden' if fam == hidden else 'dev'}\n")
    config = (bench / "pool.yaml").read_text().replace("fx:grumpy-cat-01", "fx:disaster-girl-01")
    (bench / "pool.yaml").write_text(
        config + f"families: {tmp_path / 'families.csv'}\npartition: dev\n"
    )

    def search(query: Any, system: str) -> list[str]:
        found = lexical_engine.search(query.all_cues, 10, Filters(**query.filter_dict), system)
        return [r.item_id for r in found.results]

    manifest = ac.make_pool(
        bench, bench / "pool.yaml", tmp_path / "p", search, items, fixture_build
    )
    pool = pooling.read_pool(tmp_path / "p")
    assert pool and not [
        c for c in pool if pooling.item_family(items[c.item_id].template_group) == hidden
    ]
    assert manifest["left_out_other_partition"] > 0  # "cat memes" finds grumpy cat items
    (bench / "pool.yaml").write_text(
        config.replace("fx:disaster-girl-01", "fx:grumpy-cat-01")
        + f"families: {tmp_path / 'families.csv'}\npartition: dev\n"
    )
    with pytest.raises(BenchmarkError, match="not in the pooled partition"):
        ac.make_pool(bench, bench / "pool.yaml", tmp_path / "q", search, items, fixture_build)

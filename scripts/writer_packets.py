"""Write one blind packet per query writer (QUERY-WRITING.md, issue 31), outside the repository.

    python scripts/writer_packets.py --out /work/writers --writers writer-a writer-b writer-c

Each folder gets: corpus-targets.jsonl (the dev-family items of memes-10k as the public data
presents them), corpus.jsonl (every item, for no-match audits, with its partition),
queries-to-avoid.txt (dev-v1 and dev-v2 query texts and cues), families-used-before.txt, the
guide, the format, the safety policy and check_queries.py. Never knowledge/, built documents or
search output. The packet holds corpus text, so it never goes into the repository.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
from pathlib import Path

from mambomeme.corpus.sources import shared
from mambomeme.evaluation.pooling import read_partitions
from mambomeme.evaluation.writing import render, to_json

ROOT = Path(__file__).resolve().parents[1]
BENCHMARK = ROOT.parent / "shared" / "benchmark"
EARLIER = ("dev-v1", "dev-v2")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--writers", nargs="+", required=True)
    parser.add_argument("--corpora", type=Path, default=ROOT.parent / "shared" / "corpora")
    args = parser.parse_args()
    if args.out.resolve().is_relative_to(ROOT):
        print("packets hold corpus text: write them outside the repository", file=sys.stderr)
        return 2
    partitions = read_partitions(BENCHMARK / "families.csv")
    records = shared.read_records({"selection": "memes-10k", "root": str(args.corpora)})
    items = list(render(records, partitions))
    avoid: list[str] = []
    used: set[str] = set()
    for version in EARLIER:
        for line in (ROOT / "benchmarks" / version / "queries.jsonl").read_text().splitlines():
            if line.strip():
                query = json.loads(line)
                avoid += [query["text"], *query.get("cues", [])]
                used.add(query["family"])
    for writer in args.writers:
        folder = args.out / writer
        folder.mkdir(parents=True, exist_ok=False)
        with (folder / "corpus-targets.jsonl").open("w", encoding="utf-8") as out:
            out.writelines(to_json(i) + "\n" for i in items if i.partition == "dev")
        with (folder / "corpus.jsonl").open("w", encoding="utf-8") as out:
            out.writelines(to_json(i) + "\n" for i in items)
        (folder / "queries-to-avoid.txt").write_text("\n".join(avoid) + "\n", encoding="utf-8")
        (folder / "families-used-before.txt").write_text("\n".join(sorted(used)) + "\n")
        for name in ("QUERY-WRITING.md", "FORMAT.md", "SAFETY-POLICY.md"):
            shutil.copy(BENCHMARK / name, folder / name)
        shutil.copy(ROOT / "scripts" / "check_queries.py", folder / "check_queries.py")
    dev = sum(i.partition == "dev" for i in items)
    print(f"{len(args.writers)} packets in {args.out}: {dev} dev items of {len(items)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Check a query writer's queries.jsonl (QUERY-WRITING.md's validation rule, issue 31).

    /work/main/.venv/bin/python check_queries.py queries.jsonl [--targets corpus-targets.jsonl]

Prints every problem (line, qid, field) and the counts per slice; exit 1 while any problem is
left. Concept queries are checked for shared content words with their gold items' title,
template name and caption.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from mambomeme.evaluation.writing import check_file, counts, read_rendered


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("queries", type=Path)
    here = Path(__file__).resolve().parent
    parser.add_argument("--targets", type=Path, default=here / "corpus-targets.jsonl")
    parser.add_argument("--avoid", type=Path, default=here / "queries-to-avoid.txt")
    args = parser.parse_args()
    targets = read_rendered(args.targets)
    avoid = args.avoid.read_text(encoding="utf-8").splitlines() if args.avoid.exists() else []
    problems = check_file(args.queries, targets, avoid)
    for problem in problems:
        print(problem)
    for slice_name, tally in sorted(counts(args.queries).items()):
        print(slice_name, dict(tally))
    print(f"{len(problems)} problem(s)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())

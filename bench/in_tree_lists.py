"""A backend's sweep against PyTorch's in-tree expectation lists for that backend, op by op.

    python bench/in_tree_lists.py RESULTS [RESULTS ...] \
        --lists sweep-results/backends/in-tree-inductor-expectations.json --device cpu

RESULTS are results files or journals of one backend's sweep (float32); the lists are the entries
of the in-tree test's dictionaries (``inductor_skips``, ``inductor_expected_failures_single_sample``,
...) for float32, one a row, as ``sweep-results/backends/in-tree-inductor-expectations.json``
holds those of ``test/inductor/test_torchinductor_opinfo.py``. Entries of another device, or under
a condition (a platform, a config flag), are left out. Prints, per op (``NAME`` or
``NAME.VARIANT``, its transforms' samples left out):

- ``ours only``: ops with failed samples that no list names, with the stages and a message;
- ``both``: ops with failed samples that a list names, and how;
- ``theirs only``: ops a list skips or expects to fail whose samples all pass here;
- ``not run``: ops a list names that the results do not hold.
"""

from __future__ import annotations

import argparse
import json
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from optests import Outcome
from optests._key import op_id
from optests._results import SampleResult, merge_files

#: The kinds of list entry that say an op fails (or is not run) in the in-tree test.
FAILING_KINDS = ("skip", "xfail", "grad_xfail", "intentionally_not_handled")


def listed(entries: Iterable[dict[str, Any]], device: str) -> dict[str, set[str]]:
    """Op id -> the kinds of the unconditional entries in :data:`FAILING_KINDS` for ``device``
    (or for any device)."""
    found: dict[str, set[str]] = defaultdict(set)
    for e in entries:
        if e["kind"] in FAILING_KINDS and e["device"] in (device, "any") and not e.get("condition"):
            found[op_id(e["op"], e["variant"])].add(e["kind"])
    return dict(found)


def compare(records: Iterable[SampleResult], lists: dict[str, set[str]]) -> list[str]:
    """The report's lines (see the module's docstring)."""
    failed: dict[str, list[SampleResult]] = defaultdict(list)
    seen: set[str] = set()
    for r in records:
        if r.key.transform:
            continue
        seen.add(r.key.op_id)
        if r.outcome is Outcome.FAILED:
            failed[r.key.op_id].append(r)

    def stages(rs: Sequence[SampleResult]) -> str:
        counted = Counter(r.stage.value if r.stage else "?" for r in rs)
        return ", ".join(f"{stage} {n}" for stage, n in sorted(counted.items()))

    ours = sorted(op for op in failed if op not in lists)
    both = sorted(op for op in failed if op in lists)
    theirs = sorted(op for op in lists if op in seen and op not in failed)
    unseen = sorted(op for op in lists if op not in seen)
    lines = [
        f"{len(seen)} ops in the results, {len(failed)} with failed samples; the lists name {len(lists)}: "
        f"ours only {len(ours)}, both {len(both)}, theirs only {len(theirs)}, not run {len(unseen)}"
    ]
    for op in ours:
        rs = failed[op]
        lines.append(f"ours only: {op}: {len(rs)} samples ({stages(rs)}): {rs[0].message[:200]}")
    for op in both:
        lines.append(f"both: {op}: {len(failed[op])} samples ({stages(failed[op])}); listed: {', '.join(sorted(lists[op]))}")
    lines.extend(f"theirs only: {op}: listed {', '.join(sorted(lists[op]))}, passes here" for op in theirs)
    lines.extend(f"not run: {op}: listed {', '.join(sorted(lists[op]))}" for op in unseen)
    return lines


def main(argv: Sequence[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("results", nargs="+", type=Path)
    p.add_argument("--lists", type=Path, required=True, help="the in-tree entries, as JSON: {'entries': [...]}")
    p.add_argument("--device", default="cpu")
    a = p.parse_args(argv)
    _, records, _ = merge_files(a.results)
    entries = json.loads(a.lists.read_text())["entries"]
    print("\n".join(compare(records, listed(entries, a.device))))


if __name__ == "__main__":
    main()

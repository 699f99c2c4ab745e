"""Run our check and the in-tree check on the same OpInfo samples and report where they disagree.

    python bench/compare_in_tree.py --first 150 --shard 0/2 --out a.json
    python bench/compare_in_tree.py --merge a.json b.json

Both checks get the same arguments (static mode, randomized rerun on, gradients where the
OpInfo supports autograd). A sample "agrees" when both pass or both fail.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import warnings
from collections import Counter


def run(first: int, shard: int, shards: int, out: str) -> None:
    import torch
    from torch.testing._internal.optests import aot_autograd_check as in_tree

    from optests import _opinfo
    from optests._api import run_check

    warnings.filterwarnings("ignore")
    refs = [r for r in _opinfo.all_ops(("op_db",))[:first] if _opinfo.applicable(r, "cpu", torch.float32)]
    rows = []
    for n, ref in enumerate(refs):
        if n % shards != shard:
            continue
        for i, s in enumerate(_opinfo.samples(ref, "cpu", torch.float32)):
            kw = dict(
                check_gradients=s.check_gradients,
                try_check_data_specialization=True,
                skip_correctness_check=s.skip_correctness_check,
            )
            ours = run_check(s.func, s.args, s.kwargs, False, **kw)
            start = time.perf_counter()
            try:
                in_tree(s.func, s.args, s.kwargs, False, **kw)
                theirs, theirs_msg = "passed", ""
            except Exception as e:  # the in-tree check raises whatever it meets
                theirs, theirs_msg = (
                    "failed",
                    f"{type(e).__name__}: {str(e).strip().splitlines()[0][:300] if str(e).strip() else ''}",
                )
            rows.append(
                {
                    "op": ref.id,
                    "sample": i,
                    "ours": ours.outcome.value,
                    "stage": ours.stage.value if ours.stage else None,
                    "ours_msg": ours.message[:400],
                    "theirs": theirs,
                    "theirs_msg": theirs_msg,
                    "ours_s": round(ours.duration, 4),
                    "theirs_s": round(time.perf_counter() - start, 4),
                }
            )
        print(f"{ref.id}: {sum(1 for r in rows if r['op'] == ref.id)} samples", file=sys.stderr, flush=True)
    with open(out, "w") as f:
        json.dump(rows, f, indent=1)


def merge(paths: list[str]) -> None:
    rows = [r for p in paths for r in json.load(open(p))]
    agree = [r for r in rows if r["ours"] == r["theirs"]]
    extra = [r for r in rows if r["ours"] == "failed" and r["theirs"] == "passed"]
    missed = [r for r in rows if r["ours"] == "passed" and r["theirs"] == "failed"]
    print(f"samples: {len(rows)}  agree: {len(agree)}  ours-only findings: {len(extra)}  in-tree-only failures: {len(missed)}")
    print("ours-only by stage:", dict(Counter(r["stage"] for r in extra)))
    print("both-failed by our stage:", dict(Counter(r["stage"] for r in agree if r["ours"] == "failed")))
    print(f"check time: ours {sum(r['ours_s'] for r in rows):.1f}s, in-tree {sum(r['theirs_s'] for r in rows):.1f}s")
    for title, group in (("ours-only", extra), ("in-tree-only", missed)):
        by_op: dict[str, list[dict]] = {}
        for r in group:
            by_op.setdefault(r["op"], []).append(r)
        for op, rs in sorted(by_op.items()):
            r = rs[0]
            print(
                f"  {title} {op} samples {[x['sample'] for x in rs]}: ours=[{r['stage']}] {r['ours_msg'][:220]} | in-tree: {r['theirs_msg'][:160]}"
            )


if __name__ == "__main__":
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--first", type=int, default=150)
    p.add_argument("--shard", default="0/1")
    p.add_argument("--out")
    p.add_argument("--merge", nargs="+")
    a = p.parse_args()
    if a.merge:
        merge(a.merge)
    else:
        i, n = (int(x) for x in a.shard.split("/"))
        run(a.first, i, n, a.out)

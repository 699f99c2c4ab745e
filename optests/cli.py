"""The ``optests`` command. Every error is one line on stderr and a non-zero exit status."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from . import __version__, _registry, _results


class CommandError(Exception):
    """A user-facing error: printed as one line, exit status 2."""


def _accept(args: argparse.Namespace) -> int:
    loaded = []
    torch_versions = set()
    for path in args.results:
        try:
            env, records = _results.read(Path(path))
        except _results.ResultsError as e:
            raise CommandError(str(e)) from None
        torch_versions.add(env.get("torch", ""))
        loaded.append(records)
    if len(torch_versions) > 1:
        raise CommandError(
            f"the results come from different torch versions ({', '.join(sorted(torch_versions))}); accept them one version at a time"
        )
    try:
        entries = _registry.load(args.registry)
        merged = _registry.merge(loaded)
    except _registry.RegistryError as e:
        raise CommandError(str(e)) from None
    new = _registry.accept(entries, merged.values(), torch_versions.pop())
    _registry.dump(args.registry, new)
    before, after = set(entries), set(new)
    print(
        f"{args.registry}: {len(merged)} samples from {len(args.results)} file(s); {len(after - before)} entries added or changed, {len(before - after)} removed or changed, {len(after)} in all"
    )
    return 0


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="optests", description="Conformance harness for PyTorch operators under AOTAutograd.")
    p.add_argument("--version", action="version", version=f"optests {__version__}")
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")
    a = sub.add_parser(
        "accept",
        help="rewrite the expected-failures registry from results files (e.g. one per shard)",
        description="Merge results files (from shards or runs with --optests-results) and rewrite the registry from them: "
        "failing samples are recorded by stage, samples that now pass are removed, scopes not in the results are left alone.",
    )
    a.add_argument("results", nargs="+", help="results files written with --optests-results")
    a.add_argument(
        "--registry", type=Path, default=Path(_registry.DEFAULT_PATH), help="registry to rewrite (default: %(default)s)"
    )
    a.set_defaults(run=_accept)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    try:
        return int(args.run(args))
    except CommandError as e:
        print(f"optests {args.command}: error: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())

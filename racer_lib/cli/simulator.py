"""``racer simulator check|generate``: the simulator of judge records calibrated to the paper
(:mod:`racer_lib.records.simulate`)."""

from __future__ import annotations

import argparse
from pathlib import Path

from racer_lib.cli.common import Noun, Verb


def cmd_simulator_check(args: argparse.Namespace) -> int:
    """``racer simulator check``: the simulator's aggregates next to the paper's targets."""
    import pandas as pd

    from racer_lib.records.simulate import TOL_ACC, TOL_RATIO, TOL_SELF_ROUTE, check

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


def _add_check(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--scale", type=float, default=1.0, help="share of each record set to draw (default 1.0)"
    )
    parser.set_defaults(handler=cmd_simulator_check)


def cmd_simulator_generate(args: argparse.Namespace) -> int:
    """``racer simulator generate``: write simulated records and their embeddings."""
    from racer_lib.records.simulate import write_simulated

    rpath, epath = write_simulated(
        args.out, args.judge, args.recipe, seed=args.seed, dim=args.dim, scale=args.scale
    )
    print(f"wrote {rpath}")
    if epath is not None:
        print(f"wrote {epath}")
    return 0


def _add_generate(parser: argparse.ArgumentParser) -> None:
    from racer_lib.records.simulate import JUDGES, RECIPES

    parser.add_argument("--judge", required=True, choices=list(JUDGES))
    parser.add_argument(
        "--recipe",
        nargs="+",
        default=["training_mix"],
        choices=list(RECIPES),
        help="set(s) of pairs to draw (default training_mix: the paper's 40k)",
    )
    parser.add_argument("--out", required=True, type=Path, help="records file (.parquet or .csv)")
    parser.add_argument(
        "--dim",
        type=int,
        default=64,
        help="embedding dimension (the paper: 7680; 0 = no embeddings)",
    )
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--scale", type=float, default=1.0)
    parser.set_defaults(handler=cmd_simulator_generate)


SIMULATOR = Noun(
    "simulator",
    "simulated judge records calibrated to the paper: check the calibration, write records",
    "Simulated judge records (racer_lib.records.simulate): check the calibration against the "
    "paper's aggregates, or write records and embeddings to disk.",
    (
        Verb(
            "check",
            "print simulated aggregates next to the paper's targets; exit 1 if one is out of "
            "tolerance",
            "racer simulator check --seed 0",
            _add_check,
        ),
        Verb(
            "generate",
            "write simulated records (+ embeddings beside)",
            "racer simulator generate --judge qwen3-4b --recipe judgebench --dim 64 --out "
            "records/qwen3-4b.parquet",
            _add_generate,
        ),
    ),
)

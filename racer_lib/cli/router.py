"""``racer router train|evaluate|info``: a router made from a judge's records, measured on
held-out pairs, and described from its file (:class:`racer_lib.routing.RacerRouter`).

The records (``racer records import``, ``racer judge merge`` or ``racer simulator generate``)
hold both modes' correctness and tokens per pair; the embeddings beside them
(``RECORDS_STEM.embeddings.parquet``, ``racer pairs embed``) are what the router reads. A budget
is in the paper's unit, the training rows' mean instruct tokens (All-Instruct costs 1.0), or in
mean tokens per pair with ``--budget-tokens``: RACER trains against it directly, so there is
no threshold to calibrate afterwards.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from racer_lib.cli.common import Noun, Verb, positive_int, refuse_overwrite
from racer_lib.errors import InputError, MissingFileError

#: The records' ``split`` values ``racer router train`` trains and selects on.
TRAIN, VALID = "train", "valid"


def _records_and_embeddings(path: Path, encoder: str | None = None, quiet: bool = False):
    """The records of ``path`` and their embeddings (aligned by id, with the file), embedding
    the pairs first with ``encoder`` (the embeddings cache) when it is named."""
    from racer_lib.records import files
    from racer_lib.records import io as rio

    records = rio.read_records(path)
    epath = rio.embeddings_path(path)
    if encoder is not None:
        from racer_lib.records.embed import embed_file
        from racer_lib.records.encoders import load_encoder

        print(embed_file(path, epath, encoder=load_encoder(encoder), progress=not quiet).summary())
    if not files.present(epath):  # a folder or a loop there is named by the reader
        raise MissingFileError(
            f"{epath}: no embeddings beside {path}; embed the pairs first (racer pairs embed "
            f"{path}) or name an encoder (--encoder all-MiniLM-L6-v2)"
        )
    emb = rio.read_embeddings(epath)
    return records, rio.align_embeddings(records, emb, epath, path), emb, epath


def _train_and_valid(records, validation_fraction: float, seed: int):
    """Row masks of the training and the validation pairs: the records' ``train`` and ``valid``
    splits when both are there; otherwise ``validation_fraction`` of the training candidates
    (the ``train`` split, or every pair when there is none) held out at random (seeded)."""
    import numpy as np

    split = records["split"].to_numpy()
    train, valid = split == TRAIN, split == VALID
    if train.any() and valid.any():
        return train, valid
    if not 0 < validation_fraction < 1:
        raise InputError(f"--validation-fraction must lie in (0, 1) (got {validation_fraction})")
    candidates = np.flatnonzero(train if train.any() else split != "test")
    held = np.random.default_rng(seed).permutation(candidates)
    n_valid = max(1, int(round(validation_fraction * len(held))))
    if len(held) - n_valid < 2:
        raise InputError(f"too few pairs to train on ({len(held)}), with {n_valid} held out")
    train, valid = np.zeros(len(split), bool), np.zeros(len(split), bool)
    valid[held[:n_valid]], train[held[n_valid:]] = True, True
    return train, valid


def _estimator(args: argparse.Namespace, budget: float, embedder: str | None):
    """The :class:`RacerRouter` ``router train``'s options describe."""
    from racer_lib.routing import RacerRouter

    return RacerRouter(
        budget,
        variant=args.variant,
        tau_r=args.tau_r,
        tau_c=args.tau_c,
        beta=args.beta,
        epochs=args.epochs,
        lr=args.lr,
        dual_step=args.dual_step,
        batch_size=args.batch_size,
        arch=args.arch,
        n_seeds=args.seeds,
        random_state=args.seed,
        device=args.device,
        precision=args.precision,
        embedder=embedder,
        progress=not args.quiet,
        rule=args.rule,
        rule_seed=args.rule_seed,
    )


def _report_trained(router, ruled: dict, budget: float) -> None:
    """What ``router train`` says of the router it kept: an inactive budget, a degenerate
    router (:func:`racer_lib.routing.decision.degenerate`), the validation figures by its rule
    beside the selection rule's expectations."""
    from racer_lib.routing.decision import degenerate

    realized = ruled["methods"][0]
    if router.router_.budget < budget:
        print(
            f"note: budget C = {budget:.4g} is above the dearest routing's cost (every pair's "
            f"dearer mode): the constraint is inactive; trained and saved at C = "
            f"{router.router_.budget:.4g}"
        )
        budget = router.router_.budget
    endpoints = {m["method"]: m for m in ruled["methods"][1:3]}
    note = degenerate(realized["reasoning_rate"], budget, endpoints)
    if note:
        print(f"warning: {note}")
    within = "within" if realized["cost"] <= budget else "over"
    print(
        f"kept seed {router.seed_}, epoch {router.best_epoch_} (lambda {router.lam_:.4g}); on "
        f"the validation pairs, by its rule {router.decision_rule().describe()}: accuracy "
        f"{realized['accuracy']:.2f} %, realized cost {realized['cost']:.3f} ({within} budget "
        f"{budget:.4g}), reasoning on {realized['reasoning_rate']:.1%} (expectation over the "
        f"policy, the selection rule: accuracy {100 * router.valid_accuracy_:.2f} %, cost "
        f"{router.valid_cost_:.3f})"
    )


def cmd_router_train(args: argparse.Namespace) -> int:
    """``racer router train``: a router for a budget, saved as a checked router file."""
    from racer_lib.evaluation.metrics import held_out_report
    from racer_lib.records import io as rio
    from racer_lib.records import schema as rec
    from racer_lib.records.sources import sha256sum
    from racer_lib.routing.logistic import NAME, LogisticRouter, baseline_path

    refuse_overwrite(
        [("--out", args.out), ("the baseline beside --out", baseline_path(args.out))],
        [("records file", args.records), ("embeddings file", rio.embeddings_path(args.records))],
    )
    records, x, emb, epath = _records_and_embeddings(args.records, args.encoder, args.quiet)
    train, valid = _train_and_valid(records, args.validation_fraction, args.seed)
    unit = rec.CostUnit.from_records(records[train])
    budget = args.budget if args.budget is not None else args.budget_tokens / unit.tokens_per_unit
    rec.check_budget(budget, records[train], unit, file=args.records)
    if args.out.is_dir():
        raise InputError(f"{args.out}: --out is a folder; give the router file to write")
    r, t = rec.correct_matrix(records), rec.token_matrix(records)
    per_pair = budget * unit.tokens_per_unit
    per_pair = f"{per_pair:.1f}" if per_pair < 1e15 else "unlimited"
    print(
        f"training on {int(train.sum()):,} pairs of {args.records} ({records['judge'].iloc[0]}), "
        f"selecting on {int(valid.sum()):,}; embeddings {emb.dim}-d "
        f"({emb.embedder or 'unnamed embedder'}); budget C = {budget:.4g} "
        f"(1 unit = {unit.tokens_per_unit:.1f} instruct tokens: {per_pair} tokens per pair); "
        f"{args.variant}, {args.seeds} seed(s), {args.epochs} epochs"
    )
    router = _estimator(args, budget, emb.embedder or None)
    started = time.perf_counter()
    router.fit(x[train], r[train], t[train], x[valid], r[valid], t[valid])
    seconds = [time.perf_counter() - started]
    base = LogisticRouter(min(budget, router.router_.budget))
    base.fit(x[train], r[train], t[train], x[valid], r[valid], t[valid])
    seconds.append(time.perf_counter() - started - seconds[0])
    ids = records["id"].to_numpy()
    ruled = held_out_report(records[valid], router.predict(x[valid], ids[valid]), unit, budget)
    realized = ruled["methods"][0]
    trained_on = {
        "records": str(args.records),
        "records_sha256": sha256sum(args.records),
        "embeddings_sha256": sha256sum(epath),
        "judge": str(records["judge"].iloc[0]),
        "train_pairs": int(train.sum()),
        "valid_pairs": int(valid.sum()),
        "valid_rule_accuracy": realized["accuracy"],
        "valid_rule_cost": realized["cost"],
        "valid_rule_reasoning_rate": realized["reasoning_rate"],
    }
    router.save(args.out, trained_on=trained_on)
    _report_trained(router, ruled, budget)
    point = held_out_report(records[valid], base.predict(x[valid]), unit, budget)["methods"][0]
    print(
        f"baseline beside it, {NAME} on the same embeddings, its threshold set on the "
        f"validation pairs: accuracy {point['accuracy']:.2f} %, realized cost "
        f"{point['cost']:.3f}, reasoning on {point['reasoning_rate']:.1%}; fitted in "
        f"{seconds[1]:.2f} s (the router: {seconds[0]:.1f} s); wrote "
        f"{base.save(baseline_path(args.out))}"
    )
    print(f"wrote {args.out}")
    return 0


def _add_train(parser: argparse.ArgumentParser) -> None:
    from racer_lib.routing.train import VARIANTS, PolicyConfig

    parser.description = (
        "Train a router on a judge's records (both modes' correctness and tokens per pair) and "
        "the embeddings beside them, for a budget: Algorithm 1 of the paper, the best "
        "validation checkpoint kept (among those within budget, the most accurate). Trains on "
        "the records' 'train' split and selects on 'valid' when both are there, else holds out "
        "--validation-fraction of the pairs (seeded); pairs of split 'test' are never used. "
        "Defaults: the paper's settings, measured on small sets (make bench: results/bench/"
        "router_defaults.json): on 2,000 simulated pairs as good as --epochs 100 --lr 1e-3 "
        "--dual-step 1e-4 --seeds 3; on a few hundred pairs neither beats Random."
    )
    parser.add_argument("records", type=Path, help="records file (.parquet or .csv)")
    budget = parser.add_mutually_exclusive_group(required=True)
    budget.add_argument(
        "--budget",
        type=float,
        metavar="C",
        help="budget in the paper's unit: mean instruct tokens of the training pairs "
        "(All-Instruct = 1.0)",
    )
    budget.add_argument(
        "--budget-tokens", type=float, metavar="T", help="budget in mean tokens per pair"
    )
    parser.add_argument("--out", type=Path, required=True, help="router file to write")
    parser.add_argument(
        "--variant",
        type=str.upper,
        choices=tuple(VARIANTS),
        default=PolicyConfig.variant,
        help=f"ACER, RACER-R, RACER-C or RACER (any case; default {PolicyConfig.variant}, the "
        "paper's benchmark runs)",
    )
    _add_training_options(parser)
    parser.add_argument(
        "--seeds",
        "--n-seeds",
        type=positive_int,
        default=1,
        metavar="N",
        help="train N routers, keep the best validation checkpoint among them (default 1)",
    )
    parser.add_argument(
        "--seed",
        type=int,
        default=0,
        help="seed of the hold-out and the routers (default 0)",
    )
    parser.add_argument(
        "--validation-fraction",
        type=float,
        default=0.2,
        help="pairs held out for selection when the records have no 'valid' split (default 0.2)",
    )
    parser.add_argument(
        "--encoder",
        metavar="NAME",
        help="embed the pairs first with this encoder (racer pairs embed; cached), writing the "
        "embeddings beside the records",
    )
    parser.add_argument(
        "--rule",
        choices=("argmax", "sampled"),
        default="argmax",
        help="the decision rule saved in the router file, which every routing command applies: "
        "argmax (reasoning iff p_reasoning > 1/2; default) or sampled (a draw per pair)",
    )
    parser.add_argument(
        "--rule-seed", type=int, default=0, help="seed of the sampled rule's draws (default 0)"
    )
    parser.add_argument("-q", "--quiet", action="store_true", help="no progress bar")
    parser.set_defaults(handler=cmd_router_train)


def _add_training_options(parser: argparse.ArgumentParser) -> None:
    """The objective's and the trainer's settings, each defaulting to the library's
    (:class:`~racer_lib.routing.train.PolicyConfig`,
    :class:`~racer_lib.routing.train.TrainSettings`)."""
    from racer_lib.routing.policy import ARCHS
    from racer_lib.routing.train import PRECISIONS, PolicyConfig, TrainSettings

    for source, name, kind, help_ in (
        (PolicyConfig, "tau_r", float, "temperature of the reward's worst case (RACER-R, RACER)"),
        (PolicyConfig, "tau_c", float, "temperature of the cost's worst case (RACER-C, RACER)"),
        (PolicyConfig, "beta", float, "weight of the entropy term"),
        (TrainSettings, "epochs", positive_int, "training epochs"),
        (TrainSettings, "lr", float, "AdamW learning rate"),
        (TrainSettings, "dual_step", float, "step of the multiplier lambda"),
        (TrainSettings, "batch_size", positive_int, "pairs per step"),
    ):
        default = getattr(source, name)
        flag = f"--{name.replace('_', '-')}"
        parser.add_argument(flag, type=kind, default=default, help=f"{help_} (default {default:g})")
    for name, choices, help_ in (
        ("arch", tuple(ARCHS), "router architecture"),
        ("device", None, "torch device"),
        ("precision", PRECISIONS, "matrix products in float32 or bfloat16"),
    ):
        default = getattr(TrainSettings, name)
        parser.add_argument(f"--{name}", choices=choices, default=default, help=help_)


def routed_report(router, path: Path, split: str | None = None, baseline=None) -> dict:
    """The router's decisions by its own rule (:func:`racer_lib.routing.decision.route`) on the
    pairs of ``path`` (those of ``split``), as :func:`held_out_report` reports them, with the
    rule: what ``router evaluate``, ``router info --records`` and ``records route`` print;
    with a ``baseline`` (:class:`racer_lib.routing.logistic.LogisticRouter`), its row too."""
    from racer_lib.evaluation.metrics import held_out_report
    from racer_lib.records import schema as rec
    from racer_lib.routing.decision import route

    records, x, emb, epath = _records_and_embeddings(path)
    router.check(emb.dim, emb.embedder or None, file=str(epath))
    if split is not None:
        keep = (records["split"] == split).to_numpy()
        if not keep.any():
            found = ", ".join(sorted(records["split"].unique()))
            raise InputError(f"{path}: no pairs of split {split!r} (splits: {found})")
        records, x = records[keep], x[keep]
    p, decisions, rule = route(router, records["id"].to_numpy(), x)
    unit = rec.CostUnit(router.tokens_per_unit)
    from racer_lib.paper.effects import OVERSPEND, SELECTION_GAIN  # the book's SESOIs

    sesoi = {"gain_sesoi": SELECTION_GAIN.sesoi, "overspend": OVERSPEND.sesoi}
    report = held_out_report(records, decisions, unit, router.budget, **sesoi)
    if baseline is not None:
        from racer_lib.routing.logistic import NAME

        row = held_out_report(records, baseline.predict(x), unit, router.budget)["methods"][0]
        report["methods"].append({**row, "method": NAME})
    return {"rule": rule.config(), "rule_text": rule.describe(), **report,
            "ids": records["id"].tolist(), "p_reasoning": p.tolist(),
            "decisions": decisions.tolist()}  # fmt: skip


def cmd_router_evaluate(args: argparse.Namespace) -> int:
    """``racer router evaluate``: a saved router on held-out pairs, beside the baselines."""
    from racer_lib.evaluation.metrics import held_out_lines
    from racer_lib.routing.logistic import LogisticRouter, baseline_path
    from racer_lib.routing.policy import Router

    router = Router.load(args.router)
    beside = baseline_path(args.router)
    baseline = LogisticRouter.load(beside) if beside.exists() else None
    report = {"records": str(args.records), "split": args.split, "router": str(args.router),
              **routed_report(router, args.records, args.split, baseline)}  # fmt: skip
    for key in ("ids", "p_reasoning", "decisions"):
        report.pop(key)
    if args.json:
        print(json.dumps(report, indent=2))
        return 0
    where = f"split {args.split!r} of " if args.split else ""
    print(
        f"{report['pairs']:,} pairs ({where}{args.records}), budget C = {router.budget:g} "
        f"(1 unit = {router.tokens_per_unit:.1f} instruct tokens); {100 * report['level']:g} % "
        f"intervals over pairs; decision rule {report['rule_text']}"
    )
    print("\n".join(held_out_lines(report)))
    if not report["budget_met"]:
        from racer_lib.routing.decision import over_budget

        print(f"warning: {over_budget(report['methods'][0]['cost'], router.budget)}")
    return 0


def _add_evaluate(parser: argparse.ArgumentParser) -> None:
    parser.description = (
        "Route the pairs of a record file with a saved router (by the decision rule its file "
        "states: argmax or sampled) and report accuracy, realized cost (the router's unit) "
        "and reasoning rate beside All-Instruct, All-Reasoning and Random at the router's "
        "reasoning rate, with intervals over pairs, and whether the budget was met."
    )
    parser.add_argument("records", type=Path, help="records file; embeddings beside it")
    parser.add_argument("--router", required=True, type=Path, help="router file")
    parser.add_argument("--split", help="only the pairs of this split (e.g. test)")
    parser.add_argument("--json", action="store_true", help="print the report as JSON")
    parser.set_defaults(handler=cmd_router_evaluate)


def _sweep_rows(args: argparse.Namespace, data, budgets: list[float]) -> list[dict]:
    """For each budget: RACER (``router train``'s options) and the logistic baseline trained
    on the train split, both routed on the held-out pairs (their rules), accuracy and cost."""
    from racer_lib.evaluation.metrics import held_out_report
    from racer_lib.records import schema as rec
    from racer_lib.routing.logistic import LogisticRouter

    records, x, emb, train, valid, held = data
    r, t = rec.correct_matrix(records), rec.token_matrix(records)
    unit = rec.CostUnit.from_records(records[train])
    ids, rows = records["id"].to_numpy(), []
    for budget in budgets:
        router = _estimator(args, budget, emb.embedder or None)
        router.fit(x[train], r[train], t[train], x[valid], r[valid], t[valid])
        base = LogisticRouter(min(budget, router.router_.budget))
        base.fit(x[train], r[train], t[train], x[valid], r[valid], t[valid])
        for name, d in (
            ("RACER", router.predict(x[held], ids[held])),
            ("logistic", base.predict(x[held])),
        ):
            m = held_out_report(records[held], d, unit, budget)["methods"][0]
            rows.append(
                {
                    "budget": budget,
                    "router": name,
                    **{k: m[k] for k in ("accuracy", "cost", "reasoning_rate")},
                }
            )
    return rows


def cmd_router_sweep(args: argparse.Namespace) -> int:
    """``racer router sweep``: RACER and the logistic baseline over budgets, held out."""
    import pandas as pd

    try:
        budgets = sorted(float(b) for b in args.budgets.split(","))
    except ValueError:
        raise InputError(f"--budgets: {args.budgets!r} is not a list of numbers") from None
    records, x, emb, _ = _records_and_embeddings(args.records, args.encoder, args.quiet)
    held = (records["split"] == args.split).to_numpy()
    if args.held_out is not None:  # another file's pairs, embedded by the same encoder
        import numpy as np

        other, x_other, emb_other, _ = _records_and_embeddings(args.held_out)
        if (emb_other.dim, emb_other.embedder) != (emb.dim, emb.embedder):
            raise InputError(f"{args.held_out}: embedded otherwise than {args.records}")
        records = pd.concat([records[~held], other], ignore_index=True)
        x, held = np.concatenate([x[~held], x_other]), np.arange(len(records)) >= (~held).sum()
    if not held.any():
        raise InputError(
            f"{args.records}: no pairs of split {args.split!r} to hold out (racer records split)"
        )
    train, valid = _train_and_valid(records[~held], args.validation_fraction, args.seed)
    train, valid = (_expand(m, ~held) for m in (train, valid))
    table = pd.DataFrame(_sweep_rows(args, (records, x, emb, train, valid, held), budgets))
    table["within_budget"] = table["cost"] <= table["budget"]
    where = args.held_out or f"split {args.split!r} of {args.records}"
    print(f"{int(held.sum()):,} held-out pairs ({where}):")
    print(table.to_string(index=False, float_format=lambda v: f"{v:.3f}"))
    if args.plot is not None:
        _plot_sweep(table, args.plot)
        print(f"wrote {args.plot}")
    return 0


def _expand(mask, where):
    """``mask`` over the rows ``where`` holds, as a mask over every row."""
    import numpy as np

    out = np.zeros(len(where), bool)
    out[np.flatnonzero(where)[mask]] = True
    return out


def _plot_sweep(table, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(5, 3.5))
    for name, rows in table.groupby("router", sort=False):
        ax.plot(rows["cost"], rows["accuracy"], marker="o", label=name)
    ax.set_xlabel("realized cost on held-out pairs (training unit)")
    ax.set_ylabel("accuracy (%)")
    ax.legend()
    fig.savefig(path, bbox_inches="tight")
    plt.close(fig)


def _add_sweep(parser: argparse.ArgumentParser) -> None:
    parser.description = (
        "Train RACER and the logistic-regression baseline at each budget (train split, "
        "validation split for selection and the baseline's threshold) and print both "
        "accuracy-cost frontiers on the held-out split, each routed by its rule."
    )
    parser.add_argument("records", type=Path, help="records file; embeddings beside it")
    parser.add_argument(
        "--budgets", default="1.5,2,3,4,6", help="comma-separated budgets C (default 1.5,2,3,4,6)"
    )
    parser.add_argument("--split", default="test", help="the held-out split (default test)")
    parser.add_argument(
        "--held-out", type=Path, help="hold out this records file's pairs instead (embedded alike)"
    )
    parser.add_argument("--plot", type=Path, help="also draw both frontiers to this PNG")
    parser.add_argument("--variant", type=str.upper, default="RACER-R", help="RACER variant")
    _add_training_options(parser)
    parser.add_argument(
        "--seeds", "--n-seeds", type=positive_int, default=1, help="routers per budget"
    )
    parser.add_argument("--seed", type=int, default=0, help="seed (default 0)")
    parser.add_argument("--validation-fraction", type=float, default=0.2)
    parser.add_argument("--rule", choices=("argmax", "sampled"), default="argmax")
    parser.add_argument("--rule-seed", type=int, default=0)
    parser.add_argument("--encoder", metavar="NAME", help="embed the pairs first")
    parser.add_argument("-q", "--quiet", action="store_true", help="no progress bar")
    parser.set_defaults(handler=cmd_router_sweep)


def cmd_router_info(args: argparse.Namespace) -> int:
    """``racer router info``: what a router file says about itself."""
    from racer_lib.routing.decision import DecisionRule
    from racer_lib.routing.policy import Router

    router = Router.load(args.router)
    meta = router.config.get("estimator", {})
    rule = DecisionRule.of(router)
    info = {
        "router": str(args.router),
        "budget": router.budget,
        "tokens_per_unit": router.tokens_per_unit,
        "variant": router.config.get("variant"),
        "tau_r": router.config.get("tau_r"),
        "tau_c": router.config.get("tau_c"),
        "beta": router.config.get("beta"),
        "encoder": router.embedder,
        "in_dim": router.in_dim,
        "arch": router.arch,
        "epochs": router.config.get("epochs"),
        "best_epoch": router.config.get("best_epoch"),
        "version": router.version,
        "rule": rule.config(),
        "rule_text": rule.describe(),
        **{k: meta.get(k) for k in ("valid_accuracy_", "valid_cost_", "lam_", "seed_")},
        "trained_on": meta.get("trained_on"),
    }
    if args.records is not None:
        report = routed_report(router, args.records, args.split)
        info["routed"] = {
            "records": str(args.records),
            "split": args.split,
            "pairs": report["pairs"],
            **{k: report["methods"][0][k] for k in ("accuracy", "cost", "reasoning_rate")},
            "budget_met": report["budget_met"],
        }
    if args.json:
        print(json.dumps(info, indent=2))
        return 0
    for key, value in info.items():
        if isinstance(value, dict):
            for k, v in value.items():
                print(f"{key}.{k}: {v}")
        elif value is not None:
            print(f"{key.rstrip('_')}: {value}")
    if not meta:
        print("(saved by the book's trainer, not `racer router train`: no validation figures)")
    else:
        print(
            "(valid_accuracy and valid_cost: expectations over the policy, the selection rule; "
            "trained_on.valid_rule_*: the pairs routed by the file's rule)"
        )
    return 0


def _add_info(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("router", type=Path, help="router file")
    parser.add_argument(
        "--records",
        type=Path,
        help="also route this records file's pairs by the router's rule and print the realized "
        "accuracy and cost (as router evaluate and records route report them)",
    )
    parser.add_argument("--split", help="with --records: only the pairs of this split")
    parser.add_argument("--json", action="store_true", help="print as JSON")
    parser.set_defaults(handler=cmd_router_info)


ROUTER = Noun(
    "router",
    "routers: train one on a judge's records under a budget, evaluate it, describe its file",
    "Routers (racer_lib.routing.RacerRouter) from judge records: both modes' correctness and "
    "tokens per pair, and the embeddings beside them (racer pairs embed). A budget is in the "
    "paper's unit, the training pairs' mean instruct tokens (All-Instruct costs 1.0), or in mean "
    "tokens per pair (--budget-tokens): RACER trains against it directly, with no threshold to "
    "calibrate afterwards.",
    (
        Verb(
            "train",
            "train a router on records and their embeddings for a budget (RacerRouter)",
            "racer router train records/gpt4.parquet --budget 3 --out gpt4.router.pt",
            _add_train,
        ),
        Verb(
            "evaluate",
            "a saved router on held-out pairs, beside All-Instruct, All-Reasoning and Random",
            "racer router evaluate records/gpt4.parquet --router gpt4.router.pt --split test",
            _add_evaluate,
        ),
        Verb(
            "sweep",
            "RACER and the logistic baseline over budgets: both frontiers on held-out pairs",
            "racer router sweep records/gpt4.parquet --budgets 1.5,2,3,4 --plot sweep.png",
            _add_sweep,
        ),
        Verb(
            "info",
            "what a router file holds: budget, variant, temperatures, encoder, training data",
            "racer router info gpt4.router.pt",
            _add_info,
        ),
    ),
)

"""``racer records validate|import|route``: judge record files (:mod:`racer_lib.records`):
check them, make them from other tools' judge outputs, route their pairs with a saved router."""

from __future__ import annotations

import argparse
import shutil
import sys
from pathlib import Path

from racer_lib.cli.common import Noun, Verb, add_pace_options, refuse_overwrite
from racer_lib.errors import InputError, MissingFileError


def cmd_records_validate(args: argparse.Namespace) -> int:
    """``racer records validate``: check record files (and embeddings beside them)."""
    from racer_lib.records import files
    from racer_lib.records import io as rio
    from racer_lib.records import schema as rec
    from racer_lib.records.summary import mode_summary

    for path in args.files:
        records = rio.read_records(path)
        s = mode_summary(records).iloc[0]
        kind = rec.provenance(records, path)
        line = (
            f"{path}: {len(records):,} valid records ({kind}); "
            f"accuracy instruct {s['acc_instruct']:.2f} %, reasoning "
            f"{s['acc_reasoning']:.2f} %, cost ratio {s['cost_ratio']:.2f}"
        )
        epath = rio.embeddings_path(path)
        if files.present(epath):  # a folder or a loop there is named by the reader
            emb = rio.read_embeddings(epath)
            rio.align_embeddings(records, emb, epath, path)
            line += f"; embeddings {emb.dim}-d ({emb.embedder or 'unnamed embedder'})"
        print(line)
    return 0


def _add_validate(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("files", nargs="+", type=Path)
    parser.set_defaults(handler=cmd_records_validate)


def cmd_records_import(args: argparse.Namespace) -> int:
    """``racer records import``: other tools' judge outputs -> judge records."""
    from racer_lib.judging import outputs
    from racer_lib.records.summary import mode_summary

    if args.format == "table":
        return _import_table(args)
    if args.table is not None:
        raise InputError("--table is for --format table")
    if args.format == "judgebench" and args.order is not None:
        raise InputError("--order is for --format llmbar (JudgeBench outputs hold both orders)")
    if args.format == "judgebench":  # llmbar's --instruct and --reasoning name evaluators
        refuse_overwrite(
            [("--out", args.out)],
            [("instruct outputs file", args.instruct), ("reasoning outputs file", args.reasoning)],
        )
    spec = outputs.ImportSpec(
        args.format,
        args.out,
        instruct=args.instruct,
        reasoning=args.reasoning,
        llmbar_dir=args.llmbar_dir,
        judge=args.judge,
        subsets=args.subset,
        order=args.order or "original",
    )
    records = outputs.import_records(spec)
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


def _table_map(args: argparse.Namespace):
    """The map of ``--map-file`` with ``--map``, ``--label-map``, ``--verdict-map``,
    ``--prices`` and ``--judge`` on top (:class:`racer_lib.records.table.TableMap`)."""
    from racer_lib.records import table as tb

    base = tb.read_map_file(args.map_file) if args.map_file else tb.TableMap()
    given = tb.TableMap(
        columns=tb.parse_pairs(args.map or "", "--map"),
        labels=tb.parse_pairs(args.label_map or "", "--label-map"),
        verdicts=tb.parse_pairs(args.verdict_map or "", "--verdict-map"),
        prices=tb.parse_prices(args.prices or ""),
        judge=args.judge,
    )
    tmap = base.merged(given)
    tmap.check(str(args.map_file) if args.map_file and not args.map else "the column map")
    return tmap


def _import_table(args: argparse.Namespace) -> int:
    """``racer records import --format table``: a table in the engineer's own columns."""
    from racer_lib.records import io as rio
    from racer_lib.records import table as tb
    from racer_lib.records.summary import mode_summary

    if args.table is None:
        raise InputError("--format table needs --table FILE (.csv, .jsonl or .parquet)")
    for flag in ("instruct", "reasoning", "llmbar_dir", "subset", "order"):
        if getattr(args, flag) is not None:
            raise InputError(f"--{flag.replace('_', '-')} is not for --format table")
    refuse_overwrite([("--out", args.out)], [("table", args.table), ("map file", args.map_file)])
    tmap = _table_map(args)
    records = tb.table_records(tb.read_table(args.table), tmap, args.table)
    rio.write_records(records, args.out)
    records = rio.read_records(args.out)
    s = mode_summary(records).iloc[0]
    cost = "priced cost (instruct output-token equivalents)" if tmap.prices else "output tokens"
    print(
        f"wrote {args.out}: {len(records):,} judge records of {records['judge'].iloc[0]} from "
        f"{args.table}; accuracy instruct {s['acc_instruct']:.2f} %, reasoning "
        f"{s['acc_reasoning']:.2f} %, cost ratio {s['cost_ratio']:.2f} ({cost}); split "
        f"'all': give them train/valid/test with racer records split {args.out} --out FILE"
    )
    return 0


#: racer_lib.records.table's FIELDS and PRICE_KEYS, for the help (which imports no pandas);
#: tests/test_table_import.py checks that they agree.
TABLE_FIELDS = (
    "label, verdict_instruct, verdict_reasoning, tokens_instruct, tokens_reasoning, id, dataset, "
    "subset, domain, split, judge, prompt, response_a, response_b, input_tokens_instruct, "
    "input_tokens_reasoning, thinking_tokens_instruct, thinking_tokens_reasoning"
)
PRICE_KEYS = "instruct_input, instruct_output, reasoning_input, reasoning_output"


def _add_table_options(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group(
        "--format table",
        "A CSV, JSONL or parquet table in your own column names (racer_lib.records.table). "
        "Cost: output tokens by default; with --prices, input x input price + output x "
        "output price per mode, in instruct output-token equivalents.",
    )
    group.add_argument("--table", type=Path, help="the table (.csv, .jsonl or .parquet)")
    group.add_argument(
        "--map",
        metavar="FIELD=COLUMN,...",
        help=f"which of your columns holds each field (fields: {TABLE_FIELDS}); a field "
        "whose column bears its name needs no entry",
    )
    group.add_argument(
        "--map-file",
        type=Path,
        help="a YAML file with columns:, labels:, verdicts:, prices: and judge: (the flags "
        "override it)",
    )
    group.add_argument(
        "--label-map",
        metavar="VALUE=A|B,...",
        help="your label values as the preferred response (e.g. 1=A,2=B; A and B need none)",
    )
    group.add_argument(
        "--verdict-map",
        metavar="VALUE=A|B|unparseable,...",
        help="your verdict values (e.g. first=A,second=B,*=unparseable; * is every other value)",
    )
    group.add_argument(
        "--prices",
        metavar="KEY=PRICE,...",
        help=f"price per token (keys {PRICE_KEYS}; default 0 per input and 1 per "
        "output token, i.e. the cost is the output tokens)",
    )


def _add_import(parser: argparse.ArgumentParser) -> None:
    parser.description = (
        "Judge outputs made by other tools as judge records (racer_lib.judging.outputs), one "
        "source per mode (the instruct and the reasoning mode), tokens counted with a named "
        "tokenizer. LLMBar's records keep the pair texts (prompt, response_a, response_b), so "
        "`racer pairs embed` embeds the records file itself."
    )
    parser.epilog = (
        "examples: racer records import --format judgebench --instruct haiku.jsonl "
        "--reasoning o1-mini.jsonl --out records/jb.parquet; racer records import --format "
        "llmbar --llmbar-dir LLMBar --judge GPT-4 --out records/llmbar-gpt4.parquet"
    )
    parser.add_argument("--format", required=True, choices=("judgebench", "llmbar", "table"))
    for mode, default in (("instruct", "Vanilla"), ("reasoning", "CoT")):
        parser.add_argument(
            f"--{mode}",
            help=f"judgebench: the {mode} mode's JudgeBench outputs file (.jsonl); llmbar: "
            f"its evaluator JUDGE/METHOD (default: <--judge>/{default})",
        )
    parser.add_argument(
        "--llmbar-dir",
        type=Path,
        help="llmbar: any folder in LLMBar's layout (subsets: folders holding a dataset.json, "
        "at any depth)",
    )
    parser.add_argument(
        "--judge", help="the records' judge name (llmbar: also the evaluator of both modes)"
    )
    parser.add_argument(
        "--subset",
        action="append",
        help="llmbar: a subset (repeat; default all the folder's): natural, neighbor, gptinst, "
        "gptout, manual, or another's path below Dataset/LLMBar (e.g. Adversarial/Fresh)",
    )
    parser.add_argument("--order", choices=("original", "swapped"), help="llmbar: the game order")
    parser.add_argument("--out", required=True, type=Path, help="records file (.parquet or .csv)")
    _add_table_options(parser)
    parser.set_defaults(handler=cmd_records_import)


def cmd_records_split(args: argparse.Namespace) -> int:
    """``racer records split``: train/valid/test, stratified by label, seeded."""
    from racer_lib.records import io as rio
    from racer_lib.records.table import SPLITS, assign_splits

    refuse_overwrite(
        [("--out", args.out), ("embeddings beside --out", rio.embeddings_path(args.out))],
        [("records file", args.records), ("embeddings file", rio.embeddings_path(args.records))],
    )
    try:
        fractions = [float(f) for f in args.fractions.split(",")]
    except ValueError:
        raise InputError(f"--fractions: {args.fractions!r} is not three numbers") from None
    records = assign_splits(rio.read_records(args.records), fractions, args.seed)
    rio.write_records(records, args.out)
    embeddings = rio.embeddings_path(args.records)
    if embeddings.is_file():  # the same pairs: their embeddings go beside the new file
        emb = rio.read_embeddings(embeddings)
        rio.align_embeddings(records, emb, embeddings, args.records)
        shutil.copyfile(embeddings, rio.embeddings_path(args.out))
    counts = records["split"].value_counts()
    print(
        f"wrote {args.out}: "
        + ", ".join(f"{counts.get(s, 0):,} {s}" for s in SPLITS)
        + f" (stratified by label, seed {args.seed}); embed it with racer pairs embed {args.out}"
    )
    return 0


def _add_split(parser: argparse.ArgumentParser) -> None:
    parser.description = (
        "Give every record a split (train, valid, test) in the given fractions, within each "
        "label (stratified), the rows shuffled by a seeded generator; writes a new file."
    )
    parser.add_argument("records", type=Path, help="records file (.parquet or .csv)")
    parser.add_argument("--out", type=Path, required=True, help="records file to write")
    parser.add_argument(
        "--fractions",
        default="0.6,0.2,0.2",
        metavar="TRAIN,VALID,TEST",
        help="the three splits' shares (default 0.6,0.2,0.2)",
    )
    parser.add_argument("--seed", type=int, default=0, help="seed of the shuffle (default 0)")
    parser.set_defaults(handler=cmd_records_split)


def routes_path(records_path: Path) -> Path:
    """``train.parquet`` -> ``train.routes.csv`` (``racer records route``'s default output)."""
    return records_path.with_name(
        records_path.name.removesuffix(records_path.suffix) + ".routes.csv"
    )


def _check_route_out(args: argparse.Namespace, out: Path, epath: Path) -> None:
    """Refuse an ``--out`` that is one of the inputs (it would be overwritten) or a folder."""
    refuse_overwrite(
        [("--out", out)],
        [("records file", args.records), ("embeddings file", epath), ("router file", args.router)],
        hint=f" (default: {routes_path(args.records)})",
    )
    if out.is_dir():
        raise InputError(f"{out}: --out is a folder; give the path of a CSV file to write")


def cmd_records_route(args: argparse.Namespace) -> int:
    """``racer records route``: a saved router's decisions for every pair of a record file, by
    the decision rule its file states (:mod:`racer_lib.routing.decision`)."""
    import pandas as pd

    from racer_lib.evaluation.metrics import held_out_report
    from racer_lib.records import files
    from racer_lib.records import io as rio
    from racer_lib.records import schema as rec
    from racer_lib.routing.decision import route
    from racer_lib.routing.policy import Router

    if args.pace == "off" and (args.resume or args.limit is not None):
        raise InputError("--resume and --limit are for a paced run (--pace dual or cap)")
    if args.seed is not None:
        raise InputError(
            "--seed: a router's decisions follow the rule its file states (racer router info "
            "ROUTER); train with --rule sampled --rule-seed S for seeded draws"
        )
    epath = rio.embeddings_path(args.records)
    out = args.out or routes_path(args.records)
    _check_route_out(args, out, epath)
    records = rio.read_records(args.records)
    rec.provenance(records, args.records)  # an unknown source kind is refused
    if not files.present(epath):
        raise MissingFileError(
            f"{epath}: no embeddings beside {args.records}; the router needs each pair's embedding"
        )
    emb = rio.read_embeddings(epath)
    router = Router.load(args.router)  # refuses what is not a router, naming the file
    router.check(emb.dim, emb.embedder or None, file=str(epath))
    if not emb.embedder:
        print(
            f"warning: {epath} does not name its embedder; cannot check it against the "
            f"router's ({router.embedder!r})",
            file=sys.stderr,
        )
    x = rio.align_embeddings(records, emb, epath, args.records)
    p, decision, rule = route(router, records["id"].to_numpy(), x)
    unit = rec.CostUnit(router.tokens_per_unit)
    if args.pace != "off":
        return _route_paced(args, records, (p, decision, rule), router, out)
    routes = pd.DataFrame({"id": records["id"], "p_reasoning": p, "decision": decision})
    rio.atomic_write(out, lambda tmp: routes.to_csv(tmp, index=False))
    point = held_out_report(records, decision, unit, router.budget)["methods"][0]
    print(
        f"wrote {out}: {len(records):,} pairs routed by the router's rule {rule.describe()}, "
        f"reasoning on {point['reasoning_rate']:.1%}"
    )
    met = "within" if point["cost"] <= router.budget else "OVER"
    print(
        f"accuracy {point['accuracy']:.2f} %, realized cost {point['cost']:.3f} cost units "
        f"({met} the router's budget C = {router.budget:g}; 1 unit = "
        f"{router.tokens_per_unit:.1f} instruct tokens of its training set)"
    )
    if point["cost"] > router.budget:
        from racer_lib.routing.decision import over_budget

        print(f"warning: {over_budget(point['cost'], router.budget)}")
    return 0


def _add_route(parser: argparse.ArgumentParser) -> None:
    parser.description = (
        "Apply a saved router (routing.policy.Router) to every pair of a record file, using "
        "the embeddings beside it (which must come from the router's embedder, at its "
        "dimension). Writes a CSV with columns id, p_reasoning, decision (1 = reasoning, by "
        "the decision rule the router file states: argmax or sampled, racer router info) and "
        "prints the accuracy and realized cost of those decisions in the router's cost unit, "
        "as racer router evaluate reports them."
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
        help="no longer taken: the router file's rule decides (racer router train --rule "
        "sampled --rule-seed S)",
    )
    _add_pace_options(parser)
    parser.set_defaults(handler=cmd_records_route)


def pacer_path(out: Path) -> Path:
    """``x.routes.csv`` -> ``x.routes.pacer.json``: the pacer's state beside its decisions."""
    return out.with_name(out.name.removesuffix(out.suffix) + ".pacer.json")


def _pacer(args: argparse.Namespace, router, threshold: float, costs, out: Path):
    """The pacer of ``--pace`` (fresh, or with ``--resume`` the state saved beside ``out``,
    its settings checked against these) and the rows already routed (a frame, or None)."""
    import json

    import pandas as pd

    from racer_lib.routing.pacing import BudgetPacer, PacerState

    cap_cost = args.cap_cost if args.cap_cost is not None else float(costs[:, 1].max())
    settings = {
        "budget": float(router.budget),
        "threshold": float(threshold),
        "eta": float(args.eta),
        "mode": args.pace,
        "slack": float(args.slack),
        "cap_cost": cap_cost if args.pace == "cap" else None,
    }
    state_path = pacer_path(out)
    if not args.resume:
        return BudgetPacer(**settings), None
    if not (state_path.is_file() and out.is_file()):
        raise InputError(f"{state_path}: no paced run to resume (route with --pace first)")
    saved = json.loads(state_path.read_text(encoding="utf-8"))
    if saved.get("settings") != settings:
        raise InputError(
            f"{state_path}: the saved run was paced with {saved.get('settings')}, not "
            f"{settings}; resume with the same router and options"
        )
    done = pd.read_csv(out, dtype={"id": str})
    state = PacerState.from_dict(saved.get("state", {}), str(state_path))
    if state.t != len(done):
        raise InputError(f"{state_path}: state at pair {state.t}, {out} holds {len(done)} rows")
    return BudgetPacer(**settings, state=state), done


def _route_paced(args: argparse.Namespace, records, routed, router, out: Path) -> int:
    """``records route --pace``: the rule's scores paced online (:class:`BudgetPacer`), the
    pairs in file order, each observing its chosen mode's cost; the state saved beside."""
    import json

    import numpy as np
    import pandas as pd

    from racer_lib.records import io as rio
    from racer_lib.records import schema as rec

    p, unpaced, rule = routed
    ids = records["id"].to_numpy()
    scores, threshold = rule.scores(ids, p)
    costs = rec.CostUnit(router.tokens_per_unit).cost(records)
    pacer, done = _pacer(args, router, threshold, costs, out)
    start = 0 if done is None else len(done)
    if done is not None and done["id"].tolist() != [str(i) for i in ids[:start]]:
        raise InputError(f"{out}: its ids are not the first {start} pairs of {args.records}")
    stop = len(ids) if args.limit is None else min(len(ids), start + args.limit)
    every = max(1, (stop - start) // 10)
    rows = []
    for i in range(start, stop):
        mu = pacer.state.mu
        d = pacer.decide(scores[i])
        pacer.observe(d, costs[i, d])
        rows.append((ids[i], p[i], d, mu, pacer.state.spent))
        if (i + 1 - start) % every == 0 or i + 1 == stop:
            print(
                f"pair {i + 1:,}: mean cost {pacer.mean_cost():.3f} (budget "
                f"{router.budget:g}), price mu {pacer.state.mu:.3f}, reasoning on "
                f"{pacer.state.reasoned / pacer.state.t:.1%}"
            )
    new = pd.DataFrame(rows, columns=["id", "p_reasoning", "decision", "mu", "cumulative_cost"])
    routes = new if done is None else pd.concat([done, new], ignore_index=True)
    rio.atomic_write(out, lambda tmp: routes.to_csv(tmp, index=False))
    blob = {"settings": pacer.settings(), "state": pacer.state.to_dict()}
    rio.atomic_write(pacer_path(out), lambda tmp: Path(tmp).write_text(json.dumps(blob)))
    n = len(routes)
    rows_ = np.arange(n)
    unpaced_cost = float(costs[rows_, unpaced[:n]].mean())
    met = "within" if pacer.mean_cost() <= router.budget else "OVER"
    print(
        f"wrote {out} and {pacer_path(out)}: {n:,} of {len(ids):,} pairs routed, paced "
        f"({args.pace}) around the rule {rule.describe()}: realized mean cost "
        f"{pacer.mean_cost():.3f} ({met} budget C = {router.budget:g}), accuracy "
        f"{100 * rec.correct_matrix(records)[rows_, routes['decision']].mean():.2f} %; the rule "
        f"alone: cost {unpaced_cost:.3f}" + ("; resume with --resume" if n < len(ids) else "")
    )
    return 0


def _add_pace_options(parser: argparse.ArgumentParser) -> None:
    group = add_pace_options(
        parser, "its chosen mode's tokens in the records", "the records' largest"
    )
    group.add_argument("--limit", type=int, help="route only the next N pairs (then --resume)")
    group.add_argument(
        "--resume",
        action="store_true",
        help="continue the paced run in --out from the state saved beside it",
    )


RECORDS = Noun(
    "records",
    "judge record files: validate them, import other tools' judge outputs, route their pairs",
    "Judge records (racer_lib.records.schema): one row per pair, both modes' verdicts, "
    "correctness and tokens.",
    (
        Verb(
            "validate",
            "validate record files; errors name the file, row and field",
            "racer records validate records/qwen3-4b.parquet",
            _add_validate,
        ),
        Verb(
            "import",
            "JudgeBench or LLMBar judge outputs, or a table in your own columns -> judge records",
            "racer records import --format judgebench --instruct haiku.jsonl --reasoning "
            "o1-mini.jsonl --out records/jb.parquet",
            _add_import,
        ),
        Verb(
            "split",
            "give records train/valid/test splits, stratified by label, seeded",
            "racer records split records/mine.parquet --out records/mine-split.parquet",
            _add_split,
        ),
        Verb(
            "route",
            "route the pairs of a record file with a saved router",
            "racer records route records/qwen3-4b.parquet --router router.pt",
            _add_route,
        ),
    ),
)

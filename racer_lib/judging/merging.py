"""Merging a finished run into judge records (:mod:`racer_lib.records.schema`), one row per pair.

:func:`merge` checks completeness first (every shard folder is there, and every pair has every
item once: both modes, each order, the self-routing answer when asked; a missing shard or
missing items raise :class:`racer_lib.judging.spec.JudgingError` naming the shard and the ids),
then writes per mode the verdict, its correctness and the tokens.

**Both orders** (``both_orders=True``): each pair is also judged with the responses swapped;
the swapped verdict is mapped back (A <-> B) and the two are combined by JudgeBench's rule
(:func:`combine_orders`): +1 for each order naming A, -1 for each naming B, 0 for unparseable;
a positive sum is A, a negative one B, zero (A vs B, or both unparseable) is a tie, recorded as
``unparseable`` (incorrect, as JudgeBench counts a tie). One unparseable order does not veto
the other (JudgeBench's rule; ``rule="strict"`` needs both orders to agree). Tokens add up over
the orders (the cost of judging both).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from racer_lib.errors import ConfigError
from racer_lib.judging.spec import ORDER_RULES, ORDERS, TASKS, JudgingError, shard_dir, shard_of
from racer_lib.judging.store import (
    check_shard_pairs,
    duplicates_error,
    read_shards,
    shard_folders,
)
from racer_lib.records import io as rio
from racer_lib.records import schema as rec
from racer_lib.records.pairs import load_pairs, validate_pairs


def combine_orders(original: str, swapped_mapped: str, rule: str = "judgebench") -> str:
    """One verdict from the two orders (the swapped one already mapped back to the pair's order).

    ``judgebench`` (JudgeBench's ``compute_final_metrics`` with ``reverse_order``): +1 per
    order naming A, -1 per order naming B, 0 for unparseable; the sign decides, 0 (A vs B, or
    nothing) is a tie, returned as ``unparseable``. ``strict``: a verdict only when both orders
    name it.
    """
    if rule not in ORDER_RULES:
        raise ConfigError(f"unknown order rule {rule!r}; rules are {', '.join(ORDER_RULES)}")
    if rule == "strict":
        return (
            original if original == swapped_mapped and original in ("A", "B") else rec.UNPARSEABLE
        )
    score = sum({"A": 1, "B": -1}.get(v, 0) for v in (original, swapped_mapped))
    return "A" if score > 0 else "B" if score < 0 else rec.UNPARSEABLE


def _ids_text(ids: Sequence[str], k: int = 5) -> str:
    ids = list(ids)
    return ", ".join(ids[:k]) + (f" and {len(ids) - k} more" if len(ids) > k else "")


def merge(
    out_dir: str | os.PathLike,
    pairs: pd.DataFrame | None = None,
    *,
    out: str | os.PathLike | None = None,
    split: str = "all",
    order_rule: str = "judgebench",
) -> pd.DataFrame:
    """Judge records (one row per pair, :mod:`racer_lib.records.schema`) from a run's shard folders.

    Checks completeness first: all N shard folders are there, and every pair has every item
    (both modes, each order, the self-routing answer when asked), once. A missing shard or
    missing items raise :class:`JudgingError` naming the shard and the ids. ``pairs``: the
    judged pairs (default: reloaded from the dataset named in the shards' config). Per mode:
    the verdict (both orders combined by ``order_rule``, see :func:`combine_orders`), its
    correctness, tokens and thinking tokens (summed over orders). Extra columns: ``order``
    (``original`` or ``both``) and, with both orders, ``verdict_<mode>_<order>``. Written with
    :func:`racer_lib.records.io.write_records` when ``out`` is given.
    """
    out_dir = Path(out_dir)
    parts, config, n = read_shards(out_dir)
    if config.get("route"):
        raise JudgingError(
            f"{out_dir}: a route-then-judge run judges one mode per pair, so it makes no judge "
            "records; its table is shard-I-of-N/routed.csv (racer_lib.routing.routed.read_routed)"
        )
    given = pairs is not None
    if pairs is None:
        if not config.get("dataset"):
            raise JudgingError(f"{out_dir}: the shards do not name their dataset; pass the pairs")
        pairs = load_pairs(config["dataset"]["name"], config["dataset"].get("limit"))
    pairs = validate_pairs(pairs)
    error = duplicates_error(parts, str(out_dir))
    if error is not None:
        raise error
    name = "the pairs given" if given else str(config["dataset"]["name"])
    _check_complete(out_dir, parts, pairs, config, n, name)
    records = _records(parts, pairs, config, split, order_rule)
    if out is not None:
        rio.write_records(records, out)
    return rec.validate_records(records, file=str(out) if out is not None else str(out_dir))


def _items_of(judge: dict) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The tasks and orders a run's judge (its config's ``judge``) was asked."""
    tasks = TASKS if judge["self_route"] else TASKS[:2]
    orders = ORDERS if judge["both_orders"] else ORDERS[:1]
    return tasks, orders


def _check_complete(
    out_dir: Path, parts: pd.DataFrame, pairs: pd.DataFrame, config: dict, n: int, name: str
) -> None:
    """Every shard folder is there and judged the pairs it holds (``name``: where they came
    from); every pair has every item; no judgment of another pair or in the wrong shard."""
    folders = shard_folders(out_dir)
    assigned = np.array([shard_of(p, n) for p in pairs["id"]])
    for (i, _), folder in sorted(folders.items()):  # old verdicts never meet new labels
        check_shard_pairs(folder, pairs[assigned == i], name)
    missing_shards = [i for i in range(n) if (i, n) not in folders and (assigned == i).any()]
    if missing_shards:
        i = missing_shards[0]
        ids = pairs["id"][assigned == i].tolist()
        others = ", ".join(f"{j}/{n}" for j in missing_shards[1:])
        raise JudgingError(
            f"{out_dir}: shard {i}/{n} is missing (no folder "
            f"{shard_dir(out_dir, (i, n)).name}); its {len(ids)} pairs are not "
            f"judged: {_ids_text(ids)}"
            + (f"; also missing: shards {others}" if others else "")
            + f". Run `racer judge run ... --shard {i}/{n}` and copy its folder "
            "here"
        )
    have = set(zip(parts["pair_id"], parts["task"], parts["order"], strict=True))
    for i in range(n):
        _check_shard_items(out_dir, pairs["id"][assigned == i].tolist(), have, config, (i, n))
    extra = sorted(set(parts["pair_id"]) - set(pairs["id"]))
    if extra:
        raise JudgingError(
            f"{out_dir}: judgments of pairs that are not in the dataset: {_ids_text(extra)}"
        )
    wrong = parts[
        [shard_of(p, n) != s for p, s in zip(parts["pair_id"], parts["shard"], strict=True)]
    ]
    if len(wrong):
        raise JudgingError(
            f"{out_dir}: pair {wrong['pair_id'].iloc[0]!r} was judged in shard "
            f"{wrong['shard'].iloc[0]}/{n}, but belongs to shard "
            f"{shard_of(wrong['pair_id'].iloc[0], n)}/{n}"
        )


def _check_shard_items(
    out_dir: Path, mine: list[str], have: set, config: dict, shard: tuple[int, int]
) -> None:
    """Every pair of shard ``(i, n)`` (ids ``mine``) has each of its items in ``have``."""
    tasks, orders = _items_of(config["judge"])
    lacking = {}
    for pid in mine:
        miss = [
            f"{t}" + ("" if t == "self_route" or len(orders) == 1 else f"/{o}")
            for t in tasks
            for o in (orders if t != "self_route" else ORDERS[:1])
            if (pid, t, o) not in have
        ]
        if miss:
            lacking[pid] = miss
    if lacking:
        i, n = shard
        kinds = sorted({m for v in lacking.values() for m in v})
        raise JudgingError(
            f"{out_dir}: shard {i}/{n} is incomplete: {len(lacking)} of its "
            f"{len(mine)} pairs lack judgments ({', '.join(kinds)}): "
            f"{_ids_text(list(lacking))}; resume it with the same command "
            f"(`racer judge run ... --shard {i}/{n}`)"
        )


def _records(
    parts: pd.DataFrame, pairs: pd.DataFrame, config: dict, split: str, order_rule: str
) -> pd.DataFrame:
    """The judge records of complete ``parts``: per mode, the verdict ``Phi_a(z)`` (orders
    combined by ``order_rule``), the correctness ``r(z, a, l)``, tokens and thinking tokens
    (summed over orders); the self-routing answer where asked; the records' column order."""
    index = parts.set_index(["pair_id", "task", "order"])
    judge = config["judge"]
    _, orders = _items_of(judge)
    records = pairs[["id", "dataset", "subset", "domain", "label"]].copy()
    records.insert(4, "split", split)
    records["judge"] = judge["name"]
    models = config["models"]
    model = (
        models["instruct"]
        if judge["setup"] != "pair"
        else f"{models['instruct']}+{models['reasoning']}"
    )
    records["source"] = f"generated:{config['backend']}:{model}"
    for mode in rec.MODES:
        _mode_columns(records, index, mode, orders, order_rule)
    if judge["self_route"]:
        records[rec.SELF_ROUTE] = index.loc[[(p, "self_route", "original") for p in records["id"]]][
            "verdict"
        ].to_numpy()
    records["order"] = "both" if len(orders) == 2 else "original"
    mode_cols = [c for m in rec.MODES for c in rec.mode_columns(m).values()]
    extra_cols = [c for c in records.columns if c not in rec.ID_COLUMNS + mode_cols]
    return records[rec.ID_COLUMNS + mode_cols + extra_cols]


def _mode_columns(
    records: pd.DataFrame, index: pd.DataFrame, mode: str, orders: tuple[str, ...], rule: str
) -> None:
    """Add ``mode``'s verdict, correctness, tokens and thinking tokens to ``records``."""
    cols = rec.mode_columns(mode)
    preferred = np.where(records["label"] == 1, "A", "B")
    per_order = {o: index.loc[[(p, mode, o) for p in records["id"]]] for o in orders}
    first = per_order["original"]
    if len(orders) == 2:
        verdict = [
            combine_orders(a, b, rule)
            for a, b in zip(
                first["verdict_pair"], per_order["swapped"]["verdict_pair"], strict=True
            )
        ]
        for o in orders:
            records[f"verdict_{mode}_{o}"] = per_order[o]["verdict_pair"].to_numpy()
    else:
        verdict = first["verdict_pair"].tolist()
    records[cols["verdict"]] = verdict
    records[cols["correct"]] = np.asarray(verdict) == preferred
    records[cols["tokens"]] = sum(per_order[o]["n_tokens"].to_numpy(np.int64) for o in orders)
    think = [per_order[o]["n_thinking_tokens"].astype("Float64") for o in orders]
    total = think[0].to_numpy(dtype=float, na_value=np.nan)
    for t in think[1:]:
        total = total + t.to_numpy(dtype=float, na_value=np.nan)
    records[cols["thinking_tokens"]] = pd.array(
        [pd.NA if np.isnan(v) else int(v) for v in total], dtype="Int64"
    )

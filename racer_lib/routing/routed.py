"""Route-then-judge: a saved router picks each pair's mode, and only that mode is judged.

What the paper's router is for: at deployment a pair ``z`` gets one judgment, in the mode ``a``
the policy ``pi(a | z)`` picks (``a = 1``: reasoning), at the cost ``c(z, a)`` of that mode
alone (Eq. (1): accuracy ``E[r(z, a, l)]`` under the budget ``E[c(z, a)] <= C``).
``racer judge run --router ROUTER.pt`` does this: the router
(:class:`racer_lib.routing.policy.Router`)
is applied to each pair's embedding, the decision is written to the shard's ``routes.csv``
(``id, p_reasoning, decision``, as ``racer records route`` writes) *before* the first judgment, and
each pair is judged once, in the chosen mode, by the resumable sharded run of
:func:`racer_lib.judging.run.run_judging`. A resumed run reads the pinned decisions back, so
a restart never changes a pair's mode.

**Decisions**: the rule the router file states
(:class:`racer_lib.routing.decision.DecisionRule`, :func:`run_rule`), or for a file that states
none, ``--decision`` (:data:`DECISIONS`): ``expected``, the policy's more probable mode
(reasoning iff ``pi(1 | z) > 1/2``; a tie goes to the cheaper instruct mode), or ``sampled``, a draw
``a ~ Bernoulli(pi(1 | z))`` from the pair's own seed ``item_seed(seed, id, "route")``, so
neither the shards nor a restart change a draw (``racer records route`` draws once for a whole file
in row order instead).

**Cost** is reported in the router's training unit (:class:`racer_lib.records.schema.CostUnit`:
``c(z, a) = tokens_a(z) / tokens_per_unit``, the training set's mean instruct tokens), the unit
its budget ``C`` is in; the instruct tokens of the pairs routed to reasoning are never
generated, so the set's own All-Instruct cost is unknown here. Accuracy counts an unparseable
verdict as wrong, as everywhere (:mod:`racer_lib.records.schema`).

**Paced** (``--pace dual|cap``, beyond the paper, :func:`execute_paced`): the budget kept
online while the judge runs. Pair ``t``'s mode then depends on the price ``mu_t``
(:class:`racer_lib.routing.pacing.BudgetPacer`), and the price on the costs of the pairs
judged before it, so the shard's pairs (in the pairs file's order) go in *rounds* of
``--batch-size`` pairs: a round is decided at the current price
(:meth:`BudgetPacer.decide_round`), its decisions appended to ``routes.csv`` with that price
(``mu``) and the round's number, the round judged, and each pair's realized cost (as
``routed.csv`` reports it) updates the price, pair by pair in order; ``pacer.json`` holds the
pacer's settings and state after the last round. A stopped run keeps the decisions in
``routes.csv`` (a round decided but not judged is judged as decided) and rebuilds the pacer's
state by replaying the judged costs round by round, each round's saved price and decisions
checked against the replay (a file that disagrees is named, never used): a resumed run decides
as an uninterrupted one, no pair judged twice or lost. Each shard paces its own stream; a run
whose every shard keeps ``C`` keeps it overall.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import hashlib
import json
import os
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from racer_lib.errors import ConfigError, RacerError
from racer_lib.judging.merging import combine_orders
from racer_lib.judging.spec import (
    ORDERS,
    JudgingError,
    RunSpec,
    shard_dir,
    shard_of,
)
from racer_lib.judging.store import ROUTES_NAME, read_parts
from racer_lib.records import files as rfiles
from racer_lib.records import io as rio
from racer_lib.records import schema as rec
from racer_lib.routing.decision import decide, more_probable  # noqa: F401 (public here too)
from racer_lib.routing.pacing import BudgetPacer, PacerState

if TYPE_CHECKING:  # torch is imported only when a router is loaded
    from racer_lib.routing.policy import Router

ROUTED_NAME = "routed.csv"  # per shard: the decisions with the chosen mode's judgment
ROUTED_COLUMNS = [
    "id",
    "p_reasoning",
    "decision",
    "mode",
    "label",
    "verdict",
    "correct",
    "tokens",
    "thinking_tokens",
    "cost",
]


@dataclass(frozen=True)
class Routing:
    """What :func:`racer_lib.judging.run.run_judging` needs to judge one mode per pair:
    ``routes`` (``id, p_reasoning, decision`` for every pair, decision 1 = reasoning) and
    ``config`` (the router and decision rule, pinned in the shard's ``config.json``)."""

    routes: pd.DataFrame
    config: dict[str, Any]


def _router_fingerprint(router: Router) -> str:
    """sha256 of the router's weights and metadata (two files of one router match)."""
    h = hashlib.sha256()
    for w, b in router.layers:
        for t in (w, b):
            h.update(np.ascontiguousarray(t.detach().cpu().numpy(), dtype=np.float32).tobytes())
    meta = {k: v for k, v in dataclasses.asdict(router).items() if k not in ("layers", "version")}
    h.update(json.dumps(meta, sort_keys=True, default=str).encode())
    return h.hexdigest()[:16]


def pair_embeddings(
    pairs: pd.DataFrame,
    router: Router,
    embeddings: str | os.PathLike | None = None,
    *,
    dataset: str | os.PathLike | None = None,
    encoder=None,
    cache_dir: str | os.PathLike | None = None,
) -> np.ndarray:
    """Each pair's embedding, in ``pairs``' row order, checked against the router's embedder
    and dimension. From the file ``embeddings``, else the file beside a pairs file ``dataset``
    (``PAIRS.embeddings.parquet``, as ``racer pairs embed`` writes) when there is one, else computed
    with ``encoder`` (default: the router's embedder by name) through the embedding cache
    (:func:`racer_lib.records.embed.embed_pairs`). A file may hold more ids than the pairs."""
    if embeddings is None and dataset is not None and Path(dataset).is_file():
        beside = rio.embeddings_path(dataset)
        embeddings = beside if rfiles.present(beside) else None  # the reader names a folder
    if embeddings is None:
        from racer_lib.records.embed import embed_pairs

        x = embed_pairs(pairs, encoder or router.embedder, cache_dir=cache_dir, progress=False)
        router.check(x.shape[1], getattr(encoder, "name", None), file="<computed embeddings>")
        return x
    emb = rio.read_embeddings(embeddings)
    router.check(emb.dim, emb.embedder or None, file=str(embeddings))
    keep = pd.Index(pairs["id"]).get_indexer(emb.ids) >= 0
    emb = rio.Embeddings(emb.ids[keep], emb.matrix[keep], emb.embedder)
    return rio.align_embeddings(pairs, emb, embeddings, str(dataset or "<pairs>"))


def routing(
    pairs: pd.DataFrame, router: Router, x: np.ndarray, decision: str, seed: int
) -> Routing:
    """The router's decisions on ``pairs`` (embeddings ``x``, one row per pair)."""
    p = router.p_reasoning(x).astype(np.float64)
    routes = pd.DataFrame(
        {
            "id": pairs["id"].astype(str),
            "p_reasoning": p,
            "decision": decide(pairs["id"], p, decision, seed),
        }
    )
    config = {
        "router": _router_fingerprint(router),
        "embedder": router.embedder,
        "budget": float(router.budget),
        "tokens_per_unit": float(router.tokens_per_unit),
        "decision": decision,
        "seed": int(seed),
    }
    return Routing(routes, config)


def routed_table(
    routes: pd.DataFrame, parts: pd.DataFrame, pairs: pd.DataFrame, tokens_per_unit: float
) -> pd.DataFrame:
    """One row per routed pair (:data:`ROUTED_COLUMNS`): the decision, the chosen mode's verdict
    (both orders combined by JudgeBench's rule when judged in both), its correctness, tokens
    (summed over orders) and cost ``tokens / tokens_per_unit`` (the router's unit)."""
    label = pairs.set_index("id")["label"]
    judged = dict(list(parts.groupby(["pair_id", "task"])))
    rows = []
    for r in routes.itertuples(index=False):
        mode = rec.MODES[int(r.decision)]
        got = judged.get((r.id, mode))
        if got is None:
            raise JudgingError(f"pair {r.id!r} has no {mode} judgment yet; resume the run")
        by_order = got.set_index("order")
        verdict = by_order.loc["original", "verdict_pair"]
        if ORDERS[1] in by_order.index:
            verdict = combine_orders(verdict, by_order.loc[ORDERS[1], "verdict_pair"])
        think = got["n_thinking_tokens"]
        preferred = "A" if int(label[r.id]) == 1 else "B"
        tokens = int(got["n_tokens"].sum())
        rows.append(
            [r.id, float(r.p_reasoning), int(r.decision), mode, int(label[r.id]), verdict,
             verdict == preferred, tokens, pd.NA if think.isna().any() else int(think.sum()),
             tokens / tokens_per_unit]
        )  # fmt: skip
    return pd.DataFrame(rows, columns=ROUTED_COLUMNS)


def routed_summary(table: pd.DataFrame, budget: float, **about: Any) -> pd.DataFrame:
    """One row: pairs, reasoning rate, accuracy (%), realized cost in the router's unit (mean
    of ``cost``, Eq. (1)'s ``E[c(z, a)]``), the budget ``C`` and whether the cost is within it;
    ``about`` (e.g. decision, seed) are extra leading columns."""
    cost = float(table["cost"].mean())
    return pd.DataFrame(
        [
            {
                **about,
                "n": len(table),
                "reasoning_rate": float(table["decision"].mean()),
                "accuracy": 100 * float(table["correct"].mean()),
                "cost": cost,
                "budget": float(budget),
                "within_budget": cost <= budget,
            }
        ]
    )


@dataclass
class RoutedResult:
    """A route-then-judge shard: the judging run (:class:`ShardResult`), its table and summary."""

    shard: Any  # racer_lib.judging.run.ShardResult
    table: pd.DataFrame
    summary_row: pd.DataFrame
    pacer: Any = None  # racer_lib.routing.pacing.BudgetPacer of a paced run, at its end

    def summary(self) -> str:
        s = self.summary_row.iloc[0]
        paced = ""
        if self.pacer is not None:
            paced = (
                f"paced ({self.pacer.mode}, step {self.pacer.eta:g}): price mu "
                f"{self.pacer.state.mu:.3f} after {self.pacer.state.t} pairs; "
            )
        return (
            f"{self.shard.summary()}\nrouted ({s['decision']} decision, seed {s['seed']}): "
            f"{s['n']} pairs, reasoning on {s['reasoning_rate']:.1%}; {paced}accuracy "
            f"{s['accuracy']:.2f} %, realized cost {s['cost']:.3f} router cost units (budget "
            f"C = {s['budget']:g}, {'within' if s['within_budget'] else 'over'} budget); wrote "
            f"{self.shard.folder / ROUTED_NAME}"
        )


def run_rule(router: Router, decision: str, seed: int):
    """The decision rule of a route-then-judge run: the one the router file states
    (:class:`racer_lib.routing.decision.DecisionRule`), or, for a file that states none,
    ``--decision`` with ``--seed``. A ``--decision sampled`` against a file stating ``argmax``
    is refused: one router, one rule."""
    from racer_lib.routing.decision import RULE_KEY, DecisionRule

    if router.config.get(RULE_KEY) is None:
        return DecisionRule.from_judging(decision, seed)
    rule = DecisionRule.of(router)
    if decision != "expected" and decision != rule.judging_name:
        raise ConfigError(
            f"--decision {decision}: the router file states the rule {rule.describe()}; "
            "every command routes by it (train another router with --rule to change it)"
        )
    return rule


def execute_routed(run: RunSpec, pairs: pd.DataFrame | None = None, *, progress: bool = False):
    """``racer judge run --router ...``: route every pair of ``run``'s shard with the router
    file ``run.router`` (embeddings: :func:`pair_embeddings`), judge each once in its chosen
    mode (resumable, :func:`racer_lib.judging.run.execute`) and write the shard's
    ``routed.csv`` (:func:`routed_table`); returns a :class:`RoutedResult`."""
    from racer_lib.judging.run import execute
    from racer_lib.records.pairs import load_pairs
    from racer_lib.routing.policy import Router

    if run.router is None:
        raise ConfigError("a route-then-judge run needs a router file (--router)")
    if run.judge.self_route:
        raise ConfigError("--self-route asks the judge to route itself; not with --router")
    router = Router.load(run.router)  # refuses what is not a router, naming the file
    if pairs is None:
        pairs = load_pairs(run.dataset, run.limit)
    x = pair_embeddings(pairs, router, run.embeddings, dataset=run.dataset)
    rule = run_rule(router, run.decision, run.seed)
    plan = routing(pairs, router, x, rule.judging_name, rule.seed)
    pacer = None
    if run.pace == "off":
        shard = execute(run, pairs, progress=progress, routing=plan)
    else:
        shard, pacer = execute_paced(run, pairs, plan, rule, router, progress=progress)
    folder = shard_dir(run.out, run.shard)
    routes = pd.read_csv(folder / ROUTES_NAME, dtype={"id": str})
    parts, _ = read_parts(folder)
    table = routed_table(routes, parts, pairs, router.tokens_per_unit)
    rio.atomic_write(folder / ROUTED_NAME, lambda tmp: table.to_csv(tmp, index=False))
    row = routed_summary(table, router.budget, decision=rule.judging_name, seed=rule.seed)
    return RoutedResult(shard, table, row, pacer)


PACER_NAME = "pacer.json"  # per shard: the pacer's settings and its state after the last round
PACED_COLUMNS = ["id", "p_reasoning", "decision", "mu", "round"]


def run_pacer(run: RunSpec, router, threshold: float) -> BudgetPacer:
    """The pacer of ``run`` (``run.pace``, ``run.eta``, ``run.slack``) around a router whose
    rule reasons iff score > ``threshold``, at the router's budget. ``cap``'s largest cost of a
    reasoning judgment defaults to ``run.max_tokens`` per order judged (twice that with
    ``--retry``), in the router's cost unit."""
    cap_cost = None
    if run.pace == "cap":
        judged = len(run.judge.orders) * (2 if run.judge.retry else 1)
        cap_cost = run.cap_cost
        if cap_cost is None:
            cap_cost = run.max_tokens * judged / router.tokens_per_unit
    return BudgetPacer(
        float(router.budget),
        threshold=float(threshold),
        eta=float(run.eta),
        mode=run.pace,
        slack=float(run.slack),
        cap_cost=cap_cost,
    )


def execute_paced(
    run: RunSpec,
    pairs: pd.DataFrame,
    plan: Routing,
    rule,
    router,
    *,
    progress: bool = False,
    backends=None,
):
    """Judge ``run``'s shard in paced rounds (module docstring): ``plan`` holds every pair's
    ``p_reasoning`` (its ``decision`` column is replaced by the paced ones), ``rule`` the
    router's :class:`racer_lib.routing.decision.DecisionRule`; ``backends`` (a mapping task ->
    backend, kept open) instead of ``run``'s own. Returns the shard's
    :class:`racer_lib.judging.run.ShardResult` (over the whole run) and the pacer at its end."""
    from tqdm import tqdm

    from racer_lib.judging.run import open_backends, run_judging

    i, n = run.shard
    routes = plan.routes[[shard_of(p, n) == i for p in plan.routes["id"]]].reset_index(drop=True)
    scores, threshold = rule.scores(routes["id"], routes["p_reasoning"])
    pacer = run_pacer(run, router, threshold)
    config = {**plan.config, "pace": pacer.settings()}
    folder = shard_dir(run.out, run.shard)
    folder.mkdir(parents=True, exist_ok=True)
    pinned = _read_pinned(folder, routes)
    start_time, judged = time.perf_counter(), 0

    def judge(decided: pd.DataFrame):
        return run_judging(pairs, backends, run, routing=Routing(decided, config))

    opened = open_backends(run) if backends is None else contextlib.nullcontext(backends)
    with opened as backends:
        first = last = judge(pinned)  # checks the settings, judges a round left unjudged
        _replay(folder, pinned, scores, pacer, _costs(folder, pinned, pairs, router))
        _save(folder, pacer)
        bar = tqdm(
            total=len(routes),
            initial=len(pinned),
            unit="pair",
            desc=f"paced judging shard {i}/{n}",
            disable=not progress,
        )
        since = len(pinned)
        every = max(1, (len(routes) - since) // 10)
        with bar:
            for k in range(len(pinned), len(routes), run.batch_size):
                new = routes.iloc[k : k + run.batch_size].assign(
                    decision=pacer.decide_round(scores[k : k + run.batch_size]),
                    mu=pacer.state.mu,
                    round=int(pinned["round"].max()) + 1 if len(pinned) else 0,
                )
                pinned = pd.concat([pinned, new], ignore_index=True)
                rio.atomic_write(
                    folder / ROUTES_NAME, functools.partial(pinned.to_csv, index=False)
                )
                last = judge(pinned)
                judged += last.n_judged
                for d, c in zip(new["decision"], _costs(folder, new, pairs, router), strict=True):
                    pacer.observe(d, c)
                _save(folder, pacer)
                bar.update(len(new))
                now = len(pinned) - since
                if now // every != (now - len(new)) // every or len(pinned) == len(routes):
                    bar.write(_running(pacer))
    shard = dataclasses.replace(
        last,
        n_done_before=first.n_done_before,
        n_judged=first.n_judged + judged,
        seconds=time.perf_counter() - start_time,
    )
    return shard, pacer


def _running(pacer: BudgetPacer) -> str:
    """One line: the running mean cost against the budget, the price, the reasoning rate."""
    s = pacer.state
    return (
        f"pair {s.t:,}: mean cost {pacer.mean_cost():.3f} (budget {pacer.budget:g}), price mu "
        f"{s.mu:.3f}, reasoning on {s.reasoned / max(s.t, 1):.1%}"
    )


def _read_pinned(folder: Path, routes: pd.DataFrame) -> pd.DataFrame:
    """The paced decisions already in the shard's ``routes.csv`` (none: an empty frame),
    checked to be the first pairs of ``routes`` in order, at the same ``p_reasoning``."""
    path = folder / ROUTES_NAME
    if not path.exists():
        return pd.DataFrame({c: pd.Series(dtype=routes[c].dtype) for c in routes} | {
            "mu": pd.Series(dtype=float), "round": pd.Series(dtype=int)
        })  # fmt: skip
    pinned = pd.read_csv(path, dtype={"id": str})
    if list(pinned.columns) != PACED_COLUMNS:
        raise JudgingError(
            f"{path}: not the decisions of a paced run (columns {list(pinned.columns)}, "
            f"expected {PACED_COLUMNS}); judge into another folder"
        )
    head = routes.iloc[: len(pinned)]
    if pinned["id"].tolist() != head["id"].tolist() or not np.allclose(
        pinned["p_reasoning"], head["p_reasoning"], rtol=1e-6, atol=1e-9
    ):
        raise JudgingError(
            f"{path}: its pairs are not the shard's first {len(pinned)} in order at this "
            "router's p_reasoning; judge into another folder"
        )
    return pinned


def _costs(folder: Path, rows: pd.DataFrame, pairs: pd.DataFrame, router) -> np.ndarray:
    """The realized cost of each routed pair of ``rows`` (judged: its parts are written), as
    ``routed.csv`` reports it (:func:`racer_lib.routing.routed.routed_table`)."""
    if not len(rows):
        return np.zeros(0)
    parts, _ = read_parts(folder)
    parts = parts[parts["pair_id"].isin(set(rows["id"]))]
    return routed_table(rows, parts, pairs, router.tokens_per_unit)["cost"].to_numpy()


def _replay(folder: Path, pinned: pd.DataFrame, scores, pacer: BudgetPacer, costs) -> None:
    """Rebuild the pacer's state from the rounds already judged: each round's saved price and
    decisions must be the ones the replay gives (else ``routes.csv`` is named), then its pairs'
    ``costs`` are observed in order."""
    path = folder / ROUTES_NAME
    for r, rows in pinned.groupby("round", sort=False):
        at = rows.index.to_numpy()
        again = pacer.decide_round(scores[at])
        if not (
            np.allclose(rows["mu"], pacer.state.mu, rtol=1e-9, atol=1e-12)
            and np.array_equal(again, rows["decision"].to_numpy())
        ):
            raise JudgingError(
                f"{path}: round {r} was saved at price {rows['mu'].iloc[0]:.6g}, but the "
                f"judged costs before it give {pacer.state.mu:.6g} (or other decisions); the "
                "file or the parts were changed: judge into another folder"
            )
        for d, c in zip(rows["decision"], costs[at], strict=True):
            pacer.observe(int(d), c)
    saved = folder / PACER_NAME
    if saved.exists():
        try:
            state = PacerState.from_dict(json.loads(saved.read_text())["state"], str(saved))
        except (RacerError, ValueError, KeyError, TypeError, OSError):
            state = None
        if state is None or (state.t == pacer.state.t and state != pacer.state):
            print(
                f"warning: {saved}: does not match {path} and the judged costs; rebuilt",
                file=sys.stderr,
            )


def _save(folder: Path, pacer: BudgetPacer) -> None:
    """``pacer.json``: the settings and the state after the last round observed."""
    blob = json.dumps({"settings": pacer.settings(), "state": pacer.state.to_dict()}, indent=2)
    rio.atomic_write(folder / PACER_NAME, lambda tmp: Path(tmp).write_text(blob))


def read_routed(out_dir: str | os.PathLike) -> pd.DataFrame:
    """Every shard's ``routed.csv`` of a route-then-judge run, as one table."""
    files = sorted(Path(out_dir).glob(f"shard-*-of-*/{ROUTED_NAME}"))
    if not files:
        raise JudgingError(f"{out_dir}: no {ROUTED_NAME}; run `racer judge run --router ...`")
    return pd.concat([pd.read_csv(f, dtype={"id": str}) for f in files], ignore_index=True)


def in_sample_router(
    records: pd.DataFrame,
    x: np.ndarray,
    embedder: str,
    budget: float,
    settings=None,
    seed: int = 0,
) -> Router:
    """A router trained and checkpoint-selected on ``records`` themselves (in-sample: for
    showing the route-then-judge path on a handful of pairs, not for estimating routing
    quality), RACER's default objective (:class:`racer_lib.routing.train.PolicyConfig`) at
    ``budget``
    in the records' own cost unit; ``settings``: :class:`racer_lib.routing.train.TrainSettings`."""
    import racer_lib.routing.train as train

    unit = rec.CostUnit.from_records(records)
    split = train.make_split("train", records, x, unit)
    result = train.train_policies(
        split,
        split,
        [train.PolicyConfig(budget=budget, seed=seed)],
        settings or train.TrainSettings(arch="linear", epochs=20),
        unit,
        progress=False,
    )
    return result.router(0, embedder)

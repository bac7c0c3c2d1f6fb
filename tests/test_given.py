"""What the simulator was given (racer_lib.paper.given), tested rather than declared.

A claim is ``by construction`` on simulated records when a parameter of the simulator fixes the
quantity it reads. Each entry of ``given.GIVEN`` states which quantities a parameter fixes; here
every one of them is backed by a perturbation: the parameter is changed in
``racer_lib.records.simulate`` (its ``JUDGES`` or ``CELLS`` tables, monkeypatched, or the
``Simulator`` knob the constant maps to), the quantity is recomputed from re-simulated records
with the chapter module's own function, and it must follow the change (direction and rough
size), while a quantity the entry does not list stays put (exactly, where the simulator draws it
from another stream; within sampling noise otherwise). ``test_every_given_quantity_is_perturbed``
fails when an entry or a quantity of ``GIVEN`` has no such test, or a test names a quantity
``GIVEN`` no longer declares.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Iterable

import numpy as np
import pandas as pd
import pytest

from racer_lib.evaluation import metrics
from racer_lib.paper import given
from racer_lib.paper import numbers as paper
from racer_lib.paper import registry as ch
from racer_lib.paper.chapters import llmbar_judges as ch13
from racer_lib.paper.chapters import motivation_and_benchmarks as ch03
from racer_lib.paper.chapters import reasoning_vs_instruct as ch04
from racer_lib.paper.chapters import robustness_ablation as ch08
from racer_lib.paper.chapters import self_routing as ch11
from racer_lib.records import choices, sets, simulate
from racer_lib.records.summary import mode_summary

SEED = 0
QWEN3 = ("qwen3-1.7b", "qwen3-4b", "qwen3-8b")
OOD = list(simulate.OOD_BENCHMARKS)
MIX = sets.MIX
LLAMA = "llama-3.1-8b"
F = given.FINDINGS


# ----------------------------------------------------------------------- changing the simulator


@pytest.fixture(autouse=True)
def _fresh_calibration():
    """The calibration is cached per judge: a patched table must not reuse (or leave) one."""
    simulate.calibration.cache_clear()
    yield
    simulate.calibration.cache_clear()


def set_judge(mp: pytest.MonkeyPatch, name: str, **fields) -> None:
    """Change fields of one judge of ``simulate.JUDGES``."""
    mp.setitem(simulate.JUDGES, name, dataclasses.replace(simulate.JUDGES[name], **fields))
    simulate.calibration.cache_clear()


def set_cells(mp: pytest.MonkeyPatch, pick: Callable[[simulate.Cell], bool], **fields) -> None:
    """Change fields of the cells ``pick`` selects (a field's value may be a function of the
    cell); a changed ``size`` is carried into the recipes of the benchmarks and the subsets that
    take the whole cell (the training mixture keeps its counts)."""
    cells = [
        dataclasses.replace(c, **{k: (v(c) if callable(v) else v) for k, v in fields.items()})
        if pick(c)
        else c
        for c in simulate.CELLS
    ]
    by_key = {(c.dataset, c.subset, c.domain): c for c in cells}
    mp.setattr(simulate, "CELLS", cells)
    mp.setattr(simulate, "_CELLS", by_key)
    for name, recipe in list(simulate.RECIPES.items()):
        if name != MIX:
            mp.setitem(simulate.RECIPES, name, {k: by_key[k].size for k in recipe})
    simulate.calibration.cache_clear()


def ood(domains: Iterable[str]) -> Callable[[simulate.Cell], bool]:
    domains = set(domains)
    return lambda c: c.role == "ood" and c.domain in domains


# --------------------------------------------------------------------- the chapters' quantities


def benchmark_records(judges=QWEN3, simulator=None) -> pd.DataFrame:
    """Chapter 04's records: each judge on the three benchmarks, at full size."""
    return sets.benchmark_records(list(judges), OOD, seed=SEED, scale=1.0, simulator=simulator)


def agreement(judges=QWEN3) -> pd.DataFrame:
    """Chapter 04's ``agreement_patterns.csv``, indexed by judge and dataset."""
    return ch04.agreement_patterns(benchmark_records(judges)).set_index(["judge", "dataset"])


def fig2(records: pd.DataFrame, start: str) -> pd.DataFrame:
    """Chapter 04's findings (``paper_findings.csv``) whose text starts with ``start``."""
    found = ch04.fig2_findings(records, "simulated")
    return found[found["finding"].str.startswith(start)]


def self_routing(judges=("qwen3-4b",), scale: float = 0.25) -> pd.DataFrame:
    """Chapter 11's ``self_routing_table.csv``: the whole training mixture, per judge."""
    records = sets.self_routing_records(list(judges), [], seed=SEED, scale=scale)
    return ch11.self_routing_table(records, [MIX], list(judges)).set_index("judge")


def llama_runs() -> pd.DataFrame:
    """Chapter 12's fixed modes as ``llama_runs.csv`` holds them on one record draw (the
    ``all_instruct_*`` and ``all_reasoning_*`` columns: ``metrics.endpoints``
    of the mixture's test split, as ``matched_random_rows`` computes them), indexed by method."""
    records, _ = simulate.simulate(LLAMA, MIX, seed=SEED, dim=0, scale=0.5)
    ends = metrics.endpoints(records[records["split"] == "test"])
    return pd.DataFrame(ends).T[["accuracy", "cost"]]


def llmbar_tables(simulator=choices.DEFAULT, scale: float = 0.25):
    """Chapter 13's tables on simulated records of the Qwen3 judges on the mixture (its subsets
    as LLMBar's): ``delta_accuracy_by_subset``, ``delta_accuracy_by_judge`` and
    ``agreement_patterns``, the last two indexed by judge."""
    records = pd.concat(
        [
            simulate.simulate(j, MIX, seed=SEED, dim=0, scale=scale, simulator=simulator)[0]
            for j in QWEN3
        ],
        ignore_index=True,
    )
    by_subset, by_judge = ch13.delta_tables(records)
    return by_subset, by_judge.set_index("judge"), ch13.agreement_table(by_judge).set_index("judge")


def subset_statistics(scale: float = 0.05) -> pd.DataFrame:
    """Chapter 08's ``dataset_statistics.csv`` (the three subsets at full size), by subset."""
    roles = {"magpie_ultra": "train (a)", "wildguardmix": "train (b)", "offsetbias": "OOD test"}
    table = ch08.subset_statistics(
        "qwen3-4b", roles, paper.DATASET_STATISTICS, seed=SEED, scale=scale
    )
    return table.set_index("subset")


def cheaper_shift_costs(seeds=(SEED, SEED + 1, SEED + 2), budget=paper.ABLATION_BUDGET):
    """Chapter 08's cheaper shift, per record draw: a policy that reasons on a share of pairs
    chosen to spend exactly the budget on Magpie Ultra (the training subset's cost unit), then
    its realized cost on OffsetBias (``ablation_runs.csv``'s ``cost``). The rate stands for any
    router's: the cost after the shift is ``1 + rate (ratio - 1)`` whichever pairs it picks
    when its picks are not costlier than average."""
    costs = []
    for seed in seeds:
        train, _ = sets.judge_set("qwen3-4b", "magpie_ultra", seed=seed, dim=0, scale=0.2)
        test, _ = sets.judge_set("qwen3-4b", "offsetbias", seed=seed, dim=0, scale=0.2)
        ratio = metrics.endpoints(train)["All-Reasoning"]["cost"]
        rate = (budget - 1) / (ratio - 1)
        costs.append(metrics.random_point(test, rate)["cost"])
    return np.array(costs)


def accuracy_noise(p_percent: float, n: int, k: float = 4.0) -> float:
    """``k`` standard deviations (points) of the difference of two independent accuracies on
    ``n`` pairs each, at accuracy ``p_percent``."""
    p = p_percent / 100
    return k * 100 * math.sqrt(2 * p * (1 - p) / n)


# ------------------------------------------------------------------------------- the perturbations


@dataclasses.dataclass(frozen=True)
class Follows:
    """``parameter`` fixes ``quantity`` (as ``GIVEN`` declares it): ``check`` changes the
    parameter (with the monkeypatch it is given) and asserts that the quantity follows and that
    ``unlisted`` (a chapter and what a claim would read there, not listed for ``parameter``)
    stays put."""

    parameter: str
    quantity: given.Quantity
    unlisted: tuple[str, given.Read]
    check: Callable[[pytest.MonkeyPatch], None]

    @property
    def id(self) -> str:
        q = self.quantity
        what = ",".join(q.findings or q.columns) or "*"
        return f"{self.parameter}->{q.chapter[:2]}:{q.csv}:{what}"


def _acc_instruct_agreement(mp):
    before = agreement(["qwen3-4b"])
    set_judge(mp, "qwen3-4b", acc_instruct=simulate.JUDGES["qwen3-4b"].acc_instruct - 10)
    after = agreement(["qwen3-4b"])
    drop = before["acc_instruct"] - after["acc_instruct"]
    assert ((drop > 4) & (drop < 16)).all(), drop  # ten points on the mixture, on each benchmark
    pd.testing.assert_series_equal(after["cost_ratio"], before["cost_ratio"])  # not listed


def _acc_reasoning_agreement(mp):
    before = agreement(["qwen3-4b"])
    set_judge(mp, "qwen3-4b", acc_reasoning=simulate.JUDGES["qwen3-4b"].acc_reasoning - 10)
    after = agreement(["qwen3-4b"])
    drop = before["acc_reasoning"] - after["acc_reasoning"]
    assert ((drop > 4) & (drop < 16)).all(), drop
    pd.testing.assert_series_equal(after["acc_instruct"], before["acc_instruct"])


def _endpoint_self_routing(column: str, field: str):
    def check(mp):
        before = self_routing()
        target = getattr(simulate.JUDGES["qwen3-4b"], field) - 10
        set_judge(mp, "qwen3-4b", **{field: target})
        after = self_routing()
        n = int(after.at["qwen3-4b", "pairs"])
        assert after.at["qwen3-4b", column] == pytest.approx(target, abs=accuracy_noise(target, n))
        assert before.at["qwen3-4b", column] - target > 8
        assert (
            after.at["qwen3-4b", "reasoning_fraction"]
            == before.at["qwen3-4b", "reasoning_fraction"]
        )

    return check


def _endpoint_llama(method: str, field: str):
    def check(mp):
        before = llama_runs()
        target = getattr(simulate.JUDGES[LLAMA], field) - 8
        set_judge(mp, LLAMA, **{field: target})
        after = llama_runs()
        moved = before.at[method, "accuracy"] - after.at[method, "accuracy"]
        assert 8 - 4 < moved < 8 + 4, moved  # the test split: a tenth of the mixture
        assert after.at["All-Reasoning", "cost"] == before.at["All-Reasoning", "cost"]

    return check


def _lowers_for_a_judge(field: str, value: float):
    """Chapter 13's "reasoning lowers accuracy for at least one judge": no judge loses with the
    paper's accuracies; give qwen3-8b an instruct mode above its reasoning mode and it does."""

    def check(mp):
        _, before, _ = llmbar_tables()
        assert (before["delta_accuracy"] > 0).all()
        set_judge(mp, "qwen3-8b", **{field: value})
        _, after, _ = llmbar_tables()
        assert after.at["qwen3-8b", "delta_accuracy"] < -2, after["delta_accuracy"]
        assert (after["cost_ratio"] == before["cost_ratio"]).all()  # not listed

    return check


def _cost_ratio_self_routing(mp):
    before = self_routing()
    set_judge(mp, "qwen3-4b", cost_ratio=2 * simulate.JUDGES["qwen3-4b"].cost_ratio)
    after = self_routing()
    ratio = after.at["qwen3-4b", "cost_all_reasoning"] / before.at["qwen3-4b", "cost_all_reasoning"]
    assert ratio == pytest.approx(2, rel=0.05)
    assert after.at["qwen3-4b", "acc_all_reasoning"] == before.at["qwen3-4b", "acc_all_reasoning"]


def _cost_ratio_llama(mp):
    before = llama_runs()
    set_judge(mp, LLAMA, cost_ratio=2 * simulate.JUDGES[LLAMA].cost_ratio)
    after = llama_runs()
    ratio = after.at["All-Reasoning", "cost"] / before.at["All-Reasoning", "cost"]
    assert ratio == pytest.approx(2, rel=0.05)
    assert after.at["All-Reasoning", "accuracy"] == before.at["All-Reasoning", "accuracy"]


def _cost_ratio_subsets(mp):
    before = subset_statistics()
    set_judge(mp, "qwen3-4b", cost_ratio=2 * simulate.JUDGES["qwen3-4b"].cost_ratio)
    after = subset_statistics()
    np.testing.assert_allclose(after["cost_ratio"] / before["cost_ratio"], 2, rtol=0.05)
    pd.testing.assert_series_equal(after["acc_instruct"], before["acc_instruct"])


def _headroom_by_size(mp):
    """Chapter 04's "headroom shrinks with model size": give the smallest judge the modes'
    agreement of a large one and its headroom falls below the others'."""
    records = benchmark_records()
    before = fig2(records, "the headroom")
    assert list(before["decision"]) == ["holds"], before["observed"]
    set_judge(mp, "qwen3-1.7b", rho=0.9)
    changed = benchmark_records()
    after = fig2(changed, "the headroom")
    assert list(after["decision"]) == ["fails"], after["observed"]
    smallest = [float(t.iloc[0].split(" > ")[0]) for t in (before["observed"], after["observed"])]
    assert smallest[1] < smallest[0] - 2, smallest
    # not listed: each mode's accuracy, the same in expectation, a new draw of agreement
    for judge in QWEN3:
        a = mode_summary(records[records["judge"] == judge]).iloc[0]
        b = mode_summary(changed[changed["judge"] == judge]).iloc[0]
        assert abs(a["acc_instruct"] - b["acc_instruct"]) < accuracy_noise(
            a["acc_instruct"], a["n"]
        )


def _one_mode_right(parameter: str):
    """Chapter 13's "pairs where exactly one mode is right are a minority": the share follows
    the modes' agreement (``rho`` up, or ``kappa`` up, moves it) to the simulator's exact
    expectation on the mixture; each mode's accuracy stays within noise."""

    def expected(simulator) -> pd.Series:
        cells, w = simulate._mix_weights(MIX)
        keys = [(c.dataset, c.subset, c.domain) for c in cells]
        out = {}
        for judge in QWEN3:
            e = simulate.cell_expectations(judge, simulator)
            e = e.set_index(["dataset", "subset", "domain"]).loc[keys]
            out[judge] = float(w @ (e["only_reasoning"] + e["only_instruct"]).to_numpy())
        return pd.Series(out)

    def check(mp):
        _, by_before, before = llmbar_tables()
        want_before = expected(choices.DEFAULT)
        if parameter == "KAPPA":
            simulator, sign = choices.Simulator(kappa=1.0), 1  # from 0.6: the modes part more
        else:
            simulator, sign = choices.DEFAULT, -1  # larger rho: the modes agree more
            for judge in QWEN3:
                set_judge(mp, judge, rho=simulate.JUDGES[judge].rho + 0.3)
        _, by_after, after = llmbar_tables(simulator)
        want_after = expected(simulator)
        assert (sign * (want_after - want_before) > 0.03).all(), want_after - want_before
        noise = 4 * np.sqrt(0.25 / by_before["n"])
        share = "share_one_mode_right"
        assert (abs(before[share] - want_before) < noise).all(), (before[share], want_before)
        assert (abs(after[share] - want_after) < noise).all(), (after[share], want_after)
        for judge in QWEN3:  # not listed: each mode's accuracy, a new draw of the same
            a, b = by_before.loc[judge], by_after.loc[judge]
            assert abs(a["acc_reasoning"] - b["acc_reasoning"]) < accuracy_noise(
                a["acc_reasoning"], a["n"]
            )

    return check


def _self_route_findings(mp):
    before = ch11.self_routing_findings(self_routing().reset_index(), "simulated")
    assert set(before["decision"]) == {"holds"}, before["detail"]
    set_judge(mp, "qwen3-4b", self_route=80.0)
    after = ch11.self_routing_findings(self_routing().reset_index(), "simulated")
    assert set(after["decision"]) == {"fails"}, after["detail"]


def _self_route_fraction(mp):
    before = self_routing()
    set_judge(mp, "qwen3-4b", self_route=80.0)
    after = self_routing()
    n = int(after.at["qwen3-4b", "pairs"])
    fraction = after.at["qwen3-4b", "reasoning_fraction"]
    assert fraction == pytest.approx(80.0, abs=accuracy_noise(80.0, n))
    assert before.at["qwen3-4b", "reasoning_fraction"] > 99
    assert after.at["qwen3-4b", "acc_all_reasoning"] == before.at["qwen3-4b", "acc_all_reasoning"]


#: Reasoning's gain moved from math and coding to the other domains of the benchmarks (the
#: training mixture's cells, hence the calibration, untouched).
SWAP_GAINS = {"gain": lambda c: -0.3 if c.domain in ("math", "coding") else 0.6}


def _gain_fig1a(mp):
    def groups():
        by_domain = mode_summary(benchmark_records(["qwen3-4b"]), ["judge", "dataset", "domain"])
        tradeoff = ch03.mode_tradeoff(by_domain, "qwen3-4b")
        return ch03.gain_by_group(tradeoff).set_index("group"), tradeoff

    before, t_before = groups()
    assert before.at["verification", "delta_accuracy"] > before.at["other", "delta_accuracy"] + 5
    set_cells(mp, lambda c: c.role == "ood", **SWAP_GAINS)
    after, t_after = groups()
    assert after.at["verification", "delta_accuracy"] < after.at["other", "delta_accuracy"] - 5
    pd.testing.assert_series_equal(t_after["cost_reasoning"], t_before["cost_reasoning"])


def _gain_benchmark_accuracy(mp):
    before = agreement(["qwen3-4b"])
    set_cells(mp, lambda c: c.role == "ood", gain=lambda c: c.gain + 0.3)
    after = agreement(["qwen3-4b"])
    rise = after["acc_reasoning"] - before["acc_reasoning"]
    assert ((rise > 3) & (rise < 15)).all(), rise
    pd.testing.assert_series_equal(after["acc_instruct"], before["acc_instruct"])


def _swapped_gains_fail(start: str):
    def check(mp):
        records = benchmark_records()
        before = fig2(records, start)
        assert len(before) == len(QWEN3) and set(before["decision"]) == {"holds"}
        set_cells(mp, lambda c: c.role == "ood", **SWAP_GAINS)
        changed = benchmark_records()
        after = fig2(changed, start)
        assert len(after) == len(QWEN3) and set(after["decision"]) == {"fails"}, after["observed"]
        a, b = agreement(), ch04.agreement_patterns(changed).set_index(["judge", "dataset"])
        pd.testing.assert_series_equal(b["cost_ratio"], a["cost_ratio"])  # not listed

    return check


def _gain_cells_at_or_below_zero(mp):
    """Chapter 13's "at least one (judge, subset) cell has ΔAccuracy <= 0": safety loses with
    the simulator's gains; with one gain for every cell (the mixture's accuracies kept by the
    calibration) every cell gains."""
    by_subset, by_judge, _ = llmbar_tables(scale=1.0)
    assert (by_subset["delta_accuracy"] <= 0).any()
    set_cells(mp, lambda c: c.role == "train", gain=0.3)
    after, by_judge_after, _ = llmbar_tables(scale=1.0)
    assert (after["delta_accuracy"] > 1).all(), after[["judge", "subset", "delta_accuracy"]]
    pd.testing.assert_series_equal(
        by_judge_after["delta_accuracy"], by_judge["delta_accuracy"], atol=1.5, check_exact=False
    )


def _ratio_subsets(mp):
    before = subset_statistics()
    set_cells(mp, lambda c: c.subset == "offsetbias", ratio=lambda c: 2 * c.ratio)
    after = subset_statistics()
    moved = after["cost_ratio"] / before["cost_ratio"]
    assert moved["offsetbias"] == pytest.approx(2, rel=0.1), moved
    pd.testing.assert_series_equal(after["acc_instruct"], before["acc_instruct"])


def _per_token(found: pd.DataFrame) -> pd.DataFrame:
    """The gains per extra cost unit a "most cost-effective" row observed, per judge."""
    got = found["observed"].str.extract(
        r"math and coding (?P<verify>[-+][\d.]+), other domains (?P<other>[-+][\d.]+)"
    )
    return got.astype(float).set_index(found["judge"])


def _ratio_cost_effective(mp):
    """Math and coding made costlier on the benchmarks: their gain per extra cost unit shrinks
    about in proportion (the gains stay), and the finding fails for every judge whose other
    domains gain at all (qwen3-4b's lose on the benchmarks: any gain beats theirs)."""
    records = benchmark_records()
    before = fig2(records, "most cost-effective")
    assert set(before["decision"]) == {"holds"}
    set_cells(mp, ood(("math", "coding")), ratio=40.0)
    changed = benchmark_records()
    after = fig2(changed, "most cost-effective")
    shrunk = _per_token(after)["verify"] / _per_token(before)["verify"]
    assert ((shrunk > 0.1) & (shrunk < 0.35)).all(), shrunk  # ratios 5.2 to 9 -> 40
    gaining = _per_token(after)["other"] > 0
    assert gaining.sum() >= 2
    decided = after.set_index("judge")["decision"]
    assert (decided[gaining] == "fails").all(), after["observed"]
    a, b = agreement(), ch04.agreement_patterns(changed).set_index(["judge", "dataset"])
    pd.testing.assert_series_equal(b["acc_reasoning"], a["acc_reasoning"])


def _ratio_cheaper_shift(within: bool):
    """Chapter 08's cheaper shift: at the rate that spends the budget on Magpie Ultra, OffsetBias
    (ratio 4.7 against 11.2) costs less than the budget; give OffsetBias a ratio above Magpie
    Ultra's and the same rate exceeds it. ``within``: the finding's reading (no draw over
    budget), else the cost itself."""

    def check(mp):
        budget = paper.ABLATION_BUDGET
        before, stats = cheaper_shift_costs(), subset_statistics()
        assert (before < budget).all(), before
        set_cells(mp, lambda c: c.subset == "offsetbias", ratio=25.0)
        after = cheaper_shift_costs()
        if within:
            assert (after > budget).all(), after
        else:
            # cost - 1 = rate (ratio - 1): it grows with OffsetBias's ratio, about five-fold
            grown = (after - 1) / (before - 1)
            assert ((grown > 3.5) & (grown < 7)).all(), grown
        # not listed: the subsets' accuracies (the same draws)
        pd.testing.assert_series_equal(subset_statistics()["acc_instruct"], stats["acc_instruct"])

    return check


def _size_subsets(mp):
    before = subset_statistics()
    set_cells(mp, lambda c: c.subset == "offsetbias", size=4000)
    after = subset_statistics()
    assert after.at["offsetbias", "pairs"] == 4000 and before.at["offsetbias", "pairs"] == 8504
    assert after.at["magpie_ultra", "pairs"] == before.at["magpie_ultra", "pairs"]
    # not listed: the cost ratio, a little more or less of the same draws
    assert after.at["offsetbias", "cost_ratio"] == pytest.approx(
        before.at["offsetbias", "cost_ratio"], rel=0.03
    )


def _size_benchmark_domains(mp):
    def table():
        by_domain = mode_summary(benchmark_records(["qwen3-4b"]), ["judge", "dataset", "domain"])
        out = ch03.domain_distribution(by_domain, "qwen3-4b", paper.BENCHMARK_DOMAINS, "simulated")
        return out.set_index(["benchmark", "domain"]), by_domain.set_index(["dataset", "domain"])

    before, d_before = table()
    set_cells(mp, ood(("math",)), size=lambda c: 300 if c.dataset == "judgebench" else c.size)
    after, d_after = table()
    assert after.at[("judgebench", "math"), "pairs"] == 300
    judgebench = after.loc["judgebench", "pairs"].sum()
    assert after.at[("judgebench", "math"), "share"] == pytest.approx(100 * 300 / judgebench)
    assert (
        before.at[("judgebench", "math"), "share"] < after.at[("judgebench", "math"), "share"] - 20
    )
    a, b = d_before.loc[("judgebench", "math")], d_after.loc[("judgebench", "math")]
    assert abs(a["acc_instruct"] - b["acc_instruct"]) < accuracy_noise(
        a["acc_instruct"], int(a["n"])
    )


Q = given.Quantity
FOLLOWS: tuple[Follows, ...] = (
    # JUDGES.acc_instruct and acc_reasoning: the judges' endpoints
    *(
        f
        for mode, field, column, method, low in (
            ("instruct", "acc_instruct", "acc_instruct", "All-Instruct", 92.0),
            ("reasoning", "acc_reasoning", "acc_reasoning", "All-Reasoning", 78.0),
        )
        for f in (
            Follows(
                f"JUDGES.{field}",
                Q(ch.REASONING, "agreement_patterns.csv", (column,)),
                (ch.REASONING, given.Read("agreement_patterns.csv", ("cost_ratio",))),
                _acc_instruct_agreement if mode == "instruct" else _acc_reasoning_agreement,
            ),
            Follows(
                f"JUDGES.{field}",
                Q(ch.SELF_ROUTING, "self_routing_table.csv", (f"acc_all_{mode}",)),
                (ch.SELF_ROUTING, given.Read("self_routing_table.csv", ("reasoning_fraction",))),
                _endpoint_self_routing(f"acc_all_{mode}", field),
            ),
            Follows(
                f"JUDGES.{field}",
                Q(ch.LLAMA, "llama_runs.csv", (f"all_{mode}_accuracy",)),
                (ch.LLAMA, given.Read("llama_runs.csv", ("all_instruct_cost",))),
                _endpoint_llama(method, field),
            ),
            Follows(
                f"JUDGES.{field}",
                Q(ch.LLMBAR_JUDGES, F, findings=("lowers",)),
                (ch.LLMBAR_JUDGES, given.Read("delta_accuracy_by_judge.csv", ("cost_ratio",))),
                _lowers_for_a_judge(field, low),
            ),
        )
    ),
    Follows(
        "JUDGES.cost_ratio",
        Q(ch.SELF_ROUTING, "self_routing_table.csv", ("cost_all_reasoning",)),
        (ch.SELF_ROUTING, given.Read("self_routing_table.csv", ("acc_all_reasoning",))),
        _cost_ratio_self_routing,
    ),
    Follows(
        "JUDGES.cost_ratio",
        Q(ch.LLAMA, "llama_runs.csv", ("all_reasoning_cost",)),
        (ch.LLAMA, given.Read("llama_runs.csv", ("all_reasoning_accuracy",))),
        _cost_ratio_llama,
    ),
    Follows(
        "JUDGES.cost_ratio",
        Q(ch.ROBUSTNESS, "dataset_statistics.csv", ("cost_ratio",)),
        (ch.ROBUSTNESS, given.Read("dataset_statistics.csv", ("acc_instruct",))),
        _cost_ratio_subsets,
    ),
    Follows(
        "JUDGES.rho",
        Q(ch.REASONING, F, findings=("headroom",)),
        (ch.REASONING, given.Read("agreement_patterns.csv", ("acc_instruct",))),
        _headroom_by_size,
    ),
    Follows(
        "JUDGES.rho",
        Q(ch.LLMBAR_JUDGES, F, findings=("minority",)),
        (ch.LLMBAR_JUDGES, given.Read("delta_accuracy_by_judge.csv", ("acc_reasoning",))),
        _one_mode_right("JUDGES.rho"),
    ),
    Follows(
        "KAPPA",
        Q(ch.LLMBAR_JUDGES, F, findings=("minority",)),
        (ch.LLMBAR_JUDGES, given.Read("delta_accuracy_by_judge.csv", ("acc_reasoning",))),
        _one_mode_right("KAPPA"),
    ),
    Follows(
        "JUDGES.self_route",
        Q(ch.SELF_ROUTING, F, findings=given.SELF_ROUTING_FINDINGS),
        (ch.SELF_ROUTING, given.Read("self_routing_table.csv", ("acc_all_reasoning",))),
        _self_route_findings,
    ),
    Follows(
        "JUDGES.self_route",
        Q(ch.SELF_ROUTING, "self_routing_table.csv", ("reasoning_fraction",)),
        (ch.SELF_ROUTING, given.Read("self_routing_table.csv", ("acc_all_reasoning",))),
        _self_route_fraction,
    ),
    Follows(
        "CELLS.gain",
        Q(ch.MOTIVATION, F, findings=("fig1a_gains",)),
        (ch.MOTIVATION, given.Read("fig1a_tradeoff.csv", ("cost_reasoning",))),
        _gain_fig1a,
    ),
    Follows(
        "CELLS.gain",
        Q(ch.REASONING, "agreement_patterns.csv", ("acc_reasoning",)),
        (ch.REASONING, given.Read("agreement_patterns.csv", ("acc_instruct",))),
        _gain_benchmark_accuracy,
    ),
    Follows(
        "CELLS.gain",
        Q(ch.REASONING, F, findings=("fig2_gains",)),
        (ch.REASONING, given.Read("agreement_patterns.csv", ("cost_ratio",))),
        _swapped_gains_fail("reasoning gains more on math and coding"),
    ),
    Follows(
        "CELLS.gain",
        Q(ch.REASONING, F, findings=("fig2_per_token",)),
        (ch.REASONING, given.Read("agreement_patterns.csv", ("cost_ratio",))),
        _swapped_gains_fail("most cost-effective"),
    ),
    Follows(
        "CELLS.gain",
        Q(ch.LLMBAR_JUDGES, F, findings=("cell_le0",)),
        (ch.LLMBAR_JUDGES, given.Read("delta_accuracy_by_judge.csv", ("delta_accuracy",))),
        _gain_cells_at_or_below_zero,
    ),
    Follows(
        "CELLS.ratio",
        Q(ch.ROBUSTNESS, "dataset_statistics.csv", ("cost_ratio",)),
        (ch.ROBUSTNESS, given.Read("dataset_statistics.csv", ("acc_instruct",))),
        _ratio_subsets,
    ),
    Follows(
        "CELLS.ratio",
        Q(ch.REASONING, F, findings=("fig2_per_token",)),
        (ch.REASONING, given.Read("agreement_patterns.csv", ("acc_reasoning",))),
        _ratio_cost_effective,
    ),
    Follows(
        "CELLS.ratio",
        Q(
            ch.ROBUSTNESS,
            "ablation_runs.csv",
            ("cost", "violated"),
            {"scenario": (given.CHEAPER_SHIFT,)},
        ),
        (ch.ROBUSTNESS, given.Read("dataset_statistics.csv", ("acc_instruct",))),
        _ratio_cheaper_shift(within=False),
    ),
    Follows(
        "CELLS.ratio",
        Q(ch.ROBUSTNESS, F, findings=("cheaper_within",)),
        (ch.ROBUSTNESS, given.Read("dataset_statistics.csv", ("acc_instruct",))),
        _ratio_cheaper_shift(within=True),
    ),
    Follows(
        "CELLS.size",
        Q(ch.ROBUSTNESS, "dataset_statistics.csv", ("pairs",)),
        (ch.ROBUSTNESS, given.Read("dataset_statistics.csv", ("cost_ratio",))),
        _size_subsets,
    ),
    Follows(
        "CELLS.size",
        Q(ch.MOTIVATION, "benchmark_domains.csv"),
        (ch.MOTIVATION, given.Read("fig1a_tradeoff.csv", ("acc_instruct",))),
        _size_benchmark_domains,
    ),
)


def _key(parameter: str, q: given.Quantity) -> tuple:
    where = tuple(sorted((k, tuple(v)) for k, v in q.where.items()))
    return (parameter, q.chapter, q.csv, q.columns, where, q.findings)


def test_every_given_quantity_is_perturbed():
    """Each quantity of each entry of GIVEN has exactly one perturbation below, and every
    perturbation names a quantity GIVEN declares: a new entry or quantity needs its test."""
    declared = [_key(g.parameter, q) for g in given.GIVEN for q in g.fixes]
    tested = [_key(f.parameter, f.quantity) for f in FOLLOWS]
    assert len(set(tested)) == len(tested), "a quantity is perturbed twice"
    assert sorted(tested) == sorted(declared)
    assert {f.parameter for f in FOLLOWS} == {g.parameter for g in given.GIVEN}


@pytest.mark.parametrize("follows", FOLLOWS, ids=lambda f: f.id)
def test_the_left_alone_quantity_is_not_listed(follows):
    """The quantity each perturbation holds fixed is one its parameter is not declared to fix."""
    chapter, read = follows.unlisted
    assert follows.parameter not in {g.parameter for g in given.given_by(chapter, [read])}


@pytest.mark.parametrize("follows", FOLLOWS, ids=lambda f: f.id)
def test_the_quantity_follows_its_parameter(follows, monkeypatch):
    follows.check(monkeypatch)


def test_each_perturbation_leaves_the_simulator_as_it_was():
    """The patches are undone: the default simulator still meets the paper's targets."""
    table = simulate.check(seed=SEED, scale=0.25)
    assert table["ok"].all(), table[~table["ok"]]

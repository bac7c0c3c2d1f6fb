"""Chapter 18 (keeping the budget after deployment): the mechanics of its streams, policies,
bound check and claims on planted streams, without training (fast), and the chapter as the
smoke build runs it (slow).

* a planted overspend: a router that reasons on too many pairs of a stream overspends offline
  by a third; paced, its running mean cost after 500 pairs is back within the budget, at an
  accuracy close to the offline router's at the same spend;
* a null: a router already within budget is paced and changes little (few decisions, its cost
  and accuracy within a hair of the offline ones);
* the recalibrated threshold and the hindsight path are the largest spends within their
  budgets; the bound check's violation per pair shrinks with the stream's length;
* the companion's claims hold on runs planted within budget and fail on planted overspends.
"""

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from racer_lib.claims.data import NotAvailable
from racer_lib.evaluation import pacing
from racer_lib.paper import registry
from racer_lib.paper.chapters import keeping_the_budget as ch
from racer_lib.records.sets import judge_set
from racer_lib.routing import train

BUDGET = 2.0


def _design(**kwargs) -> ch.Design:
    settings = train.TrainSettings(arch="linear", epochs=1)
    return ch.Design("qwen3-4b", BUDGET, settings, **kwargs)


def _stream(rate: float, n: int = 1000, seed: int = 0):
    """A planted stream: instruct costs 1, reasoning 5 (so the budget allows a quarter of the
    pairs to reason); scores uniform, the router reasoning on the ``rate`` of highest score;
    reasoning right more often on high scores (the scores carry the signal)."""
    rng = np.random.default_rng(seed)
    scores = rng.random(n)
    costs = np.column_stack([np.ones(n), rng.uniform(4.0, 6.0, n)])
    right = np.column_stack([rng.random(n) < 0.7, rng.random(n) < 0.5 + 0.45 * scores])
    threshold = float(np.quantile(scores, 1 - rate))
    return {"RACER": scores, "RACER-C": scores}, costs, right.astype(float), threshold


def _runs(rate: float, seed: int = 0, eta: float = 0.01) -> pd.DataFrame:
    """Every policy on a planted stream, paced with the chapter's step (its notebook's eta)."""
    scores, costs, right, threshold = _stream(rate, seed=seed)
    thresholds = {"RACER": threshold, "RACER-C": threshold, ch.RECALIBRATED: threshold}
    rows, curves = ch.stream_runs(scores, costs, right, thresholds, _design(eta=eta), [500, 1000])
    assert {c["policy"] for c in curves} == set(ch.POLICIES)
    return pd.DataFrame(rows).set_index("policy")


def test_a_planted_overspend_is_removed_by_pacing():
    runs = _runs(rate=0.35)  # offline: 1 + 0.35 * 4 = 2.4, a fifth over the budget
    assert runs.loc[ch.OFFLINE, "overspend"] > 0.15
    assert runs.loc[ch.PACED, "overspend"] < 0.01
    assert runs.loc[ch.PACED, "cost"] == pytest.approx(BUDGET, rel=0.03)
    gap = runs.loc[ch.MATCHED, "accuracy"] - runs.loc[ch.PACED, "accuracy"]
    assert gap < 1.5  # offline RACER at the same spend is not far ahead
    assert runs.loc[ch.MATCHED, "cost"] <= runs.loc[ch.PACED, "cost"] + 1e-9


def test_the_step_is_the_bounds_unless_given():
    assert _design(stream_length=400, eta0=2.0).step == pytest.approx(2.0 / 20.0)
    assert _design(stream_length=400, eta=0.3).step == 0.3


def test_the_capped_pacer_keeps_every_prefix_within_budget():
    scores, costs, right, threshold = _stream(0.35)  # instruct costs 1 <= C: the cap's premise
    thresholds = {"RACER": threshold, "RACER-C": threshold, ch.RECALIBRATED: threshold}
    rows, curves = ch.stream_runs(scores, costs, right, thresholds, _design(eta=0.01), [1000])
    runs = pd.DataFrame(rows).set_index("policy")
    assert runs.loc[ch.OFFLINE, "overspend"] > 0.15  # the router alone overspends
    assert runs.loc[ch.CAPPED, "overspend"] <= 0  # cost_after: the largest running mean
    running = {c["policy"]: c["mean_cost"] for c in curves}
    assert running[ch.CAPPED] <= BUDGET < running[ch.OFFLINE]
    assert runs.loc[ch.CAPPED, "reasoning_rate"] > 0.1  # it still reasons where it can


def test_pacing_a_router_within_budget_changes_little():
    runs = _runs(rate=0.15)  # offline: 1 + 0.15 * 4 = 1.6, within the budget
    offline, paced = runs.loc[ch.OFFLINE], runs.loc[ch.PACED]
    assert offline["overspend"] < 0
    assert abs(paced["cost"] - offline["cost"]) < 0.05 * BUDGET
    assert abs(paced["accuracy"] - offline["accuracy"]) < 1.0
    assert abs(paced["reasoning_rate"] - offline["reasoning_rate"]) < 0.025


def test_the_recalibrated_threshold_is_the_largest_spend_within_budget():
    scores, costs, _, _ = _stream(0.5)
    theta = pacing.recalibrated_threshold(scores["RACER"], costs, BUDGET)
    d = scores["RACER"] > theta
    mean = costs[np.arange(len(d)), d.astype(int)].mean()
    assert mean <= BUDGET
    one_more = d | (scores["RACER"] == scores["RACER"][~d].max())
    assert costs[np.arange(len(d)), one_more.astype(int)].mean() > BUDGET


def test_the_hindsight_path_starts_at_all_instruct_and_ends_at_all_reasoning():
    scores, costs, right, _ = _stream(0.5, n=50)
    total, correct = pacing.hindsight_path(scores["RACER"], costs, right)
    assert total[0] == pytest.approx(costs[:, 0].sum())
    assert total[-1] == pytest.approx(costs[:, 1].sum())
    assert correct[-1] == pytest.approx(right[:, 1].sum())


def test_the_bound_checks_violation_per_pair_shrinks_with_the_streams_length():
    scores, costs, right, threshold = _stream(0.6, n=2000)
    design = _design(lengths=(100, 3200), draws=5)
    rng = np.random.default_rng(1)
    rows = pacing.bound_rows(scores["RACER"], costs, right, threshold, design.bound, rng)
    short, long = rows
    assert short["eta"] > long["eta"]
    assert long["violation_per_pair"] < short["violation_per_pair"]


REAL_STREAMS = [ch.release_stream("GPT-4"), ch.release_stream("LLaMA2")]


def _claim_runs(folder: Path, planted: dict[str, tuple[float, float]], seeds: int = 10) -> None:
    """Runs of every stream: per provenance, its ``(overspend, gap)`` planted."""
    rng = np.random.default_rng(0)
    rows = []
    for kind, streams in (("simulated", ch.STREAMS), ("release", REAL_STREAMS)):
        overspend, gap = planted[kind]
        for stream in streams:
            for seed in range(seeds):
                paced = 80 + rng.normal(0, 0.1)
                after = BUDGET * (1 + overspend + rng.normal(0, 0.001))
                rows += [
                    {"provenance": kind, "stream": stream, "seed": seed, "budget": BUDGET,
                     "policy": ch.PACED, "accuracy": paced, "cost_after": after},
                    {"provenance": kind, "stream": stream, "seed": seed, "budget": BUDGET,
                     "policy": ch.MATCHED, "accuracy": paced + gap, "cost_after": BUDGET},
                ]  # fmt: skip
    folder.mkdir(parents=True, exist_ok=True)
    pd.DataFrame(rows).to_csv(folder / ch.RUNS_CSV, index=False)


WITHIN, OVER = (-0.01, 0.0), (0.05, 3.0)


@pytest.mark.parametrize(
    ("simulated", "real"), [(WITHIN, WITHIN), (OVER, OVER), (WITHIN, OVER), (OVER, WITHIN)]
)
def test_the_companions_claims_hold_within_budget_and_fail_on_a_planted_overspend(
    tmp_path, simulated, real
):
    """Each provenance's claims are decided on its own streams: a planted overspend on the
    simulated streams does not touch the real streams' claims, and the reverse."""
    _claim_runs(tmp_path, {"simulated": simulated, "release": real})
    for claim in ch.CLAIMS:
        assert claim.artifact == ch.ARTIFACT == "companion claim, beyond the paper"
        assert claim.chapter == registry.KEEPING_BUDGET
        outcome = claim.rule.evaluate(tmp_path)
        on_real = "LLMBar" in claim.claim
        planted, streams = (real, REAL_STREAMS) if on_real else (simulated, ch.STREAMS)
        assert outcome.provenance == ("release" if on_real else "simulated")
        assert outcome.verdict.holds is (planted == WITHIN), (claim.claim, outcome.verdict)
        assert f"{len(streams)} (intersection-union)" in outcome.verdict.test


def test_without_real_streams_their_claims_are_not_available(tmp_path):
    _claim_runs(tmp_path, {"simulated": WITHIN, "release": WITHIN})
    runs = pd.read_csv(tmp_path / ch.RUNS_CSV)
    runs[runs["provenance"] == "simulated"].to_csv(tmp_path / ch.RUNS_CSV, index=False)
    found = ch.pacing_findings(tmp_path)
    assert len(found) == 2 and not found["finding"].str.contains("LLMBar").any()
    for claim in ch.RELEASE_CLAIMS:  # the report's reason names the rows it lacks
        with pytest.raises(
            NotAvailable, match="no rows for this comparison .*provenance = release"
        ):
            claim.rule.evaluate(tmp_path)
    assert (found["provenance"] == "simulated").all()
    _claim_runs(tmp_path, {"simulated": WITHIN, "release": OVER})
    found = ch.pacing_findings(tmp_path).set_index("finding")
    assert found["provenance"].tolist() == ["simulated"] * 2 + ["release"] * 2
    assert found["status"].tolist() == ["reproduced"] * 2 + ["not reproduced"] * 2


def test_real_streams_train_on_natural_and_deploy_on_the_other_subsets(monkeypatch):
    """LLMBar's streams on stand-in released records (simulated pairs relabelled as a release
    with a Natural and an adversarial subset): their rows carry the release provenance, the
    release's budget and one stream per judge, and the seed re-draws them."""
    records, emb = judge_set("qwen3-4b", "wildguardmix", seed=3, scale=0.05, dim=8)
    records = records.assign(
        subset=np.where(np.arange(len(records)) % 3 == 0, ch.NATURAL, "adversarial/neighbor"),
        source="release:stand-in",
    ).drop(columns="split")
    sets = {"GPT-4": (records, emb), "LLaMA2": (records, emb)}
    monkeypatch.setattr(ch.Release, "sets", lambda self: sets)
    release = ch.Release(judges=tuple(sets), budget=1.5, training={"epochs": 2})
    source = {"scale": 0.05, "dim": 8}
    design = _design(source=source, stream_length=600, lengths=(100,), draws=1, release=release)
    out = ch.run_replicates(design, [0, 1])
    runs = out["runs"]
    real = runs[runs["provenance"] == "release"]
    assert set(real["stream"]) == {ch.release_stream(j) for j in sets}
    assert (real["budget"] == 1.5).all()
    assert (runs.loc[runs["provenance"] == "simulated", "budget"] == BUDGET).all()
    assert set(out["bound"]["provenance"]) == {"simulated"}
    view = ch.summary_view(ch.pacing_summary(runs))  # the page names each row's records
    assert set(view["provenance"]) == {"simulated", "release"}
    assert "provenance" not in ch.summary_view(ch.pacing_summary(runs[runs["budget"] == BUDGET]))
    assert out["provenance"] == {"simulated", "release"}
    paced = real[real["policy"] == ch.PACED].set_index(["stream", "seed"])["cost"]
    assert paced.xs(0, level="seed").tolist() != paced.xs(1, level="seed").tolist()


def test_the_report_gathers_the_chapters_claims():
    gathered = [(c.artifact, c.claim) for c in registry.claims()]
    assert all((c.artifact, c.claim) in gathered for c in ch.CLAIMS)


@pytest.mark.slow
def test_the_smoke_build_writes_every_stream_and_policy(smoke):
    result, _ = smoke  # smoke, or full-smoke where LLMBar's files are at hand
    folder = Path(result.results_dirs[registry.KEEPING_BUDGET])
    runs = pd.read_csv(folder / ch.RUNS_CSV)
    simulated, real = (runs[runs["provenance"] == kind] for kind in ("simulated", "release"))
    assert set(simulated["stream"]) == set(ch.STREAMS)
    assert set(runs["policy"]) == {*ch.POLICIES, ch.MATCHED}
    # full-smoke (LLMBar's files at hand) adds GPT-4's real stream; smoke runs none
    full = result.profile == "full-smoke"
    assert set(real["stream"]) == ({ch.release_stream("GPT-4")} if full else set())
    assert len(simulated) + len(real) == len(runs)
    findings = pd.read_csv(folder / ch.FINDINGS_CSV)
    assert sorted(findings["provenance"]) == ["release"] * 2 * full + ["simulated"] * 2
    rate = runs.set_index(["stream", "seed", "policy"])["reasoning_rate"].unstack()
    assert (rate[ch.PACED] <= rate[ch.OFFLINE]).all()  # a price >= 0: never more reasoning
    bound = pd.read_csv(folder / ch.BOUND_CSV)
    assert sorted(bound["T"].unique()) == [100, 400]


def test_each_panel_dashes_its_own_streams_budget():
    """A real stream's budget is in its judge's unit (chapter 15's), not the simulated one's."""
    rows = [
        {"stream": stream, "budget": budget, "policy": policy, "seed": seed, "t": t,
         "mean_cost": budget * (0.9 + 0.01 * seed)}
        for stream, budget in ((ch.COSTLIER, BUDGET), (ch.release_stream("GPT-4"), 10.0))
        for policy in ch.POLICIES for seed in range(3) for t in (100, 200)
    ]  # fmt: skip
    fig = ch.curve_panels(pd.DataFrame(rows))
    panels = [ax for ax in fig.axes if ax.get_visible()]
    assert [ax.get_title() for ax in panels] == [ch.COSTLIER, ch.release_stream("GPT-4")]
    dashed = [[ln.get_ydata()[0] for ln in ax.lines if ln.get_linestyle() == "--"] for ax in panels]
    assert dashed == [[BUDGET], [10.0]]

"""The simulator's choices (racer_lib.records.choices) and the sensitivity chapter's mechanics
(racer_lib.paper.chapters.simulator_sensitivity): the design, the effects and their pooling,
the per-claim robustness read from a planted runs table, and what each knob does and does not
change in the simulated records. Nothing here asserts what a claim comes out as on simulated
records."""

import numpy as np
import pandas as pd
import pytest

from racer_lib.errors import ConfigError
from racer_lib.evaluation import metrics as evaluate
from racer_lib.paper.chapters import simulator_sensitivity as ch
from racer_lib.records import choices, simulate
from racer_lib.records.schema import correct_matrix, token_matrix

SMALL = dict(recipe=["offsetbias", "judgebench"], seed=3, dim=8, scale=0.1)


def draw(sim=choices.DEFAULT):
    kw = dict(SMALL)
    recipe = kw.pop("recipe")
    return simulate.simulate("qwen3-4b", recipe, simulator=sim, **kw)


# ----------------------------------------------------------------------------------------
# The choices


def test_choices_defaults_are_the_module_constants():
    by_name = {c.name: c for c in choices.CHOICES}
    assert by_name["readable"].default == simulate.READABLE == choices.DEFAULT.readable
    assert by_name["kappa"].default == simulate.KAPPA == choices.DEFAULT.kappa
    assert choices.DEFAULT.sigma_tokens() == simulate.SIGMA_TOKENS
    for c in choices.CHOICES:
        assert c.low < c.high and c.low <= c.default <= c.high, c
        assert getattr(choices.DEFAULT, c.name) == c.default
        assert c.argument.strip()
    assert choices.DEFAULT.changes() == {} and choices.DEFAULT.tag() == ""


def test_default_simulator_gives_what_the_module_constants_give():
    plain_r, plain_e = simulate.simulate("qwen3-4b", SMALL["recipe"], seed=3, dim=8, scale=0.1)
    r, e = draw(choices.Simulator())
    explicit = choices.Simulator(readable=simulate.READABLE, kappa=simulate.KAPPA)
    r2, e2 = draw(explicit)
    pd.testing.assert_frame_equal(plain_r, r)
    pd.testing.assert_frame_equal(plain_r, r2)
    assert np.array_equal(plain_e, e) and np.array_equal(plain_e, e2)
    assert simulate.calibration("qwen3-4b") == simulate.calibration("qwen3-4b", explicit)


#: sha256 of the default simulator's Qwen3-4B training mixture at scale 0.05, dim 16 (the
#: records as CSV without their ``source``, which names the version, then the embeddings' bytes),
#: as drawn before the choices became knobs (issue 22): the default simulator must keep drawing
#: these bytes.
DEFAULT_DRAW_SHA256 = "d754b46da33444925b33a29f6d806a941132c0aa4c98b2cd30d7e7ae90d3b910"


def test_default_simulator_draws_the_same_bytes_as_before_the_knobs():
    import hashlib

    r, e = simulate.simulate("qwen3-4b", "training_mix", scale=0.05, dim=16)
    rows = r.drop(columns="source").to_csv(index=False).encode()
    digest = hashlib.sha256(rows + np.ascontiguousarray(e).tobytes()).hexdigest()
    assert digest == DEFAULT_DRAW_SHA256


def test_each_knob_changes_only_what_it_should():
    base_r, base_e = draw()
    for c in choices.CHOICES:
        r, e = draw(choices.DEFAULT.with_knobs(**{c.name: c.high}))
        assert r["source"].str.endswith(f"simulator={c.name}={c.high:g}").all()
        same_correct = np.array_equal(correct_matrix(r), correct_matrix(base_r))
        same_tokens = np.array_equal(token_matrix(r), token_matrix(base_r))
        same_emb = np.array_equal(e, base_e)
        if c.name in ("readable", "cell_signal"):  # the embedding only
            assert same_correct and same_tokens and not same_emb, c.name
        elif c.name == "token_spread":  # the tokens only
            assert same_correct and not same_tokens and same_emb, c.name
        else:  # kappa, gain_scale, rho_shift: the verdicts only
            assert not same_correct and same_tokens and same_emb, c.name


def test_gain_scale_keeps_the_calibrated_mixture_accuracies():
    for scale in (0.5, 1.5):
        exp = simulate.cell_expectations("qwen3-4b", choices.Simulator(gain_scale=scale))
        cells, w = simulate._mix_weights("training_mix")
        keys = [(c.dataset, c.subset, c.domain) for c in cells]
        mix = exp.set_index(["dataset", "subset", "domain"]).loc[keys]
        judge = simulate.JUDGES["qwen3-4b"]
        assert w @ mix["acc_instruct"].to_numpy() == pytest.approx(judge.acc_instruct)
        assert w @ mix["acc_reasoning"].to_numpy() == pytest.approx(judge.acc_reasoning)


def test_null_gain_makes_reasoning_change_no_verdict():
    exp = simulate.cell_expectations("qwen3-4b", choices.null_gain())
    assert np.allclose(exp["acc_reasoning"], exp["acc_instruct"])
    assert np.allclose(exp[["only_reasoning", "only_instruct"]], 0)
    r, _ = draw(choices.null_gain())
    rr = correct_matrix(r)
    assert np.array_equal(rr[:, 0], rr[:, 1])
    assert (token_matrix(r)[:, 1] > 0).all()  # still costs its tokens


def test_null_simulator_embedding_carries_no_cell():
    # Without the centroid, the embedding differs from one with it by exactly the cell's
    # centroid: the same vector on every pair of a cell, a different one per cell.
    r, e = draw(choices.null_simulator())
    _, with_cell = draw(choices.null_simulator().with_knobs(cell_signal=1.0))
    diff = pd.DataFrame(with_cell - e).groupby((r["dataset"] + r["domain"]).to_numpy())
    assert np.allclose(diff.std().fillna(0).to_numpy(), 0, atol=1e-6)
    centroids = diff.mean().to_numpy()
    assert np.allclose(np.linalg.norm(centroids, axis=1), 1, atol=1e-5)
    assert len(np.unique(centroids.round(5), axis=0)) == len(centroids)


def test_bad_knobs_fail():
    for bad in (dict(readable=1.5), dict(kappa=-0.1), dict(gain_scale=-1)):
        with pytest.raises(ConfigError):
            choices.Simulator(**bad)


# ----------------------------------------------------------------------------------------
# The design


def test_design_sizes_ranges_and_seed():
    d = ch.design(seed=0, levels=2, lhs_points=4)
    n = len(choices.KNOBS)
    assert list(d["design"].value_counts().sort_index().items()) == [
        ("control", 2),
        ("default", 1),
        ("lhs", 4),
        ("sweep", 2 * n),
    ]
    assert d["point"].is_unique
    by_name = {c.name: c for c in choices.CHOICES}
    for row in d[d["design"] == "sweep"].to_dict("records"):
        changed = ch.simulator_of(row).changes()
        assert list(changed) == [row["knob"]]
        assert changed[row["knob"]] in (by_name[row["knob"]].low, by_name[row["knob"]].high)
    lhs = d[d["design"] == "lhs"]
    for c in choices.CHOICES:
        assert lhs[c.name].between(c.low, c.high).all()
        # a Latin hypercube: one point in each quarter of every range
        quarter = np.floor((lhs[c.name] - c.low) / (c.high - c.low) * 4).clip(0, 3)
        assert sorted(quarter) == [0, 1, 2, 3]
    assert ch.design(seed=0, lhs_points=4).equals(d)
    assert not ch.design(seed=1, lhs_points=4).equals(d)
    three = ch.design(seed=0, levels=3, lhs_points=0, knobs=["readable"])
    assert three.loc[three["knob"] == "readable", "readable"].tolist() == [0.1, 0.9]
    assert ch.sweep_levels(by_name["rho_shift"], 3) == [-0.1, 0.0, 0.05, 0.2]
    controls = d[d["design"] == "control"].to_dict("records")
    assert [ch.simulator_of(r) for r in controls] == list(ch.CONTROLS.values())


# ----------------------------------------------------------------------------------------
# Effects, intervals and pooling


def test_against_is_the_difference_of_expected_accuracies():
    r, _ = draw()
    rng = np.random.default_rng(0)
    p, q = rng.random(len(r)), rng.random(len(r))
    d = ch.against(r, p, q)
    gap = evaluate.policy_point(r, p)["accuracy"] - evaluate.policy_point(r, q)["accuracy"]
    assert d.mean() == pytest.approx(gap)
    rate = ch.against(r, p, p.mean())
    assert rate.mean() == pytest.approx(
        evaluate.policy_point(r, p)["accuracy"] - evaluate.random_point(r, p.mean())["accuracy"]
    )


def test_pool_equals_the_statistics_of_all_pairs():
    rng = np.random.default_rng(1)
    parts = [rng.normal(0.3, 2.0, n) for n in (150, 260)]
    runs = pd.DataFrame(
        [
            {
                "point": "p",
                "seed": s,
                "claim": "racer_vs_random_id",
                "versus": "Random",
                **ch.paired(d),
            }
            for s, d in enumerate(parts)
        ]
    )
    pooled = ch.pool(runs).iloc[0]
    whole = ch.paired(np.concatenate(parts))
    assert pooled["effect"] == pytest.approx(whole["effect"])
    assert (pooled["lo"], pooled["hi"]) == pytest.approx((whole["lo"], whole["hi"]))
    assert pooled["seeds"] == 2 and pooled["holds"] == (whole["lo"] > 0)


def test_newcombe_interval():
    # Newcombe (1998), Table II, method 10: (a) 56/70 - 48/80 and (b) 9/10 - 3/10
    diff, lo, hi = ch.newcombe(56, 70, 48, 80)
    assert diff == pytest.approx(0.2)
    assert (lo, hi) == pytest.approx((0.0524, 0.3339), abs=1e-4)
    assert ch.newcombe(9, 10, 3, 10)[1:] == pytest.approx((0.1705, 0.8090), abs=1e-4)
    counts = ch.counts(4, 0, 4)
    assert counts["effect"] == 1 and counts["lo"] > 0
    assert ch.counts(2, 2, 4)["lo"] < 0 < ch.counts(2, 2, 4)["hi"]


# ----------------------------------------------------------------------------------------
# Per-claim robustness from a planted runs table


def planted_runs(design: pd.DataFrame) -> pd.DataFrame:
    """Two seeds per point: RACER beats Random by 2 pts per unit of readable above 0.2 (so the
    claim flips at readable 0.2 in expectation), kappa moves it by a tenth of that; the budget
    claim holds everywhere but at gain_scale's low end."""
    rows = []
    for row in design.to_dict("records"):
        for seed in (0, 1):
            effect = 2 * (row["readable"] - 0.2) + 0.2 * (row["kappa"] - 0.6)
            rows.append(
                {
                    "point": row["point"],
                    "seed": seed,
                    "claim": "racer_vs_random_id",
                    "versus": "Random",
                    "effect": effect,
                    "sd": 1.0,
                    "n": 2000,
                }
            )
            k_claim = 7 if row["gain_scale"] < 1 else 0
            rows.append(
                {
                    "point": row["point"],
                    "seed": seed,
                    "claim": "costlier_within_budget",
                    "versus": "ACER",
                    "effect": np.nan,
                    "k_base": 8,
                    "k_claim": k_claim,
                    "runs": 8,
                }
            )
    runs = pd.DataFrame(rows)
    paired = runs["k_base"].isna()
    z = 1.959963984540054
    runs.loc[paired, "lo"] = runs.loc[paired, "effect"] - z / np.sqrt(2000)
    runs.loc[~paired, "lo"] = 0.0
    return runs


def test_claim_robustness_reads_a_planted_table():
    design = ch.design(seed=0, levels=2, lhs_points=3, knobs=["readable", "kappa", "gain_scale"])
    points = ch.pool(planted_runs(design))
    robust = ch.claim_robustness(points, design).set_index("key")
    assert list(robust.reset_index().columns) == [
        "key",
        "claim",
        "simulators",
        "holds_in",
        "share",
        "depends_most_on",
        "flip_threshold",
        "summary",
    ]
    plausible = design[design["design"] != "control"]
    ours = points[points["claim"] == "racer_vs_random_id"].set_index("point")
    expected = ours.loc[plausible["point"], "holds"]
    row = robust.loc["racer_vs_random_id"]
    assert row["simulators"] == len(plausible) == 10
    assert row["holds_in"] == expected.sum() and row["share"] == expected.mean()
    assert row["depends_most_on"] == "readable"
    # The flip: the pooled lower end interpolated to zero between readable 0.1 and 0.5.
    lo = ours.loc[["readable=0.1", "default"], "lo"].to_numpy()
    at = 0.1 + lo[0] / (lo[0] - lo[1]) * 0.4
    assert row["flip_threshold"] == f"readable ≈ {at:.2g}"
    assert abs(at - 0.2) < 0.02
    budget = robust.loc["costlier_within_budget"]
    assert budget["depends_most_on"] == "gain_scale"
    assert budget["flip_threshold"].startswith("gain_scale ≈ ")
    assert 0.5 < float(budget["flip_threshold"].split("≈ ")[1]) < 1.0
    flat = ch.pool(planted_runs(design).assign(lo=1.0, effect=1.0, k_claim=0))
    assert (ch.claim_robustness(flat, design)["flip_threshold"] == ch.NO_FLIP).all()


def test_flip_threshold_interpolates_the_lower_end():
    assert ch.flip_threshold([0.0, 1.0], [-1.0, 3.0]) == pytest.approx(0.25)
    assert ch.flip_threshold([0.0, 0.5, 1.0], [1.0, 2.0, 3.0]) is None
    assert ch.flip_threshold([0.0, 0.5, 1.0], [1.0, -1.0, -2.0]) == pytest.approx(0.25)


def test_sweep_panels_draw_every_claim():
    design = ch.design(seed=0, levels=2, lhs_points=0, knobs=["readable", "kappa", "gain_scale"])
    fig = ch.sweep_panels(ch.pool(planted_runs(design)), design)
    titled = [ax.get_title() for ax in fig.axes if ax.get_title()]
    assert titled == [ch.SHORT["racer_vs_random_id"], ch.SHORT["costlier_within_budget"]]


# ----------------------------------------------------------------------------------------
# The chapter in the smoke build: its CSVs, recomputed from its own runs


@pytest.mark.slow
def test_smoke_chapter_writes_the_report_contract(smoke):
    result, _ = smoke
    out = result.results_dirs["16_simulator_sensitivity"]
    design = pd.read_csv(f"{out}/simulator_design.csv")
    runs = pd.read_csv(f"{out}/sensitivity_runs.csv")
    points = pd.read_csv(f"{out}/sensitivity_points.csv")
    robust = pd.read_csv(f"{out}/claim_robustness.csv")
    assert list(robust.columns) == [
        "provenance",
        "key",
        "claim",
        "simulators",
        "holds_in",
        "share",
        "depends_most_on",
        "flip_threshold",
        "summary",
    ]
    assert list(robust["key"]) == list(ch.CLAIMS)
    assert (robust["provenance"] == "simulated").all()
    assert (robust["share"] == robust["holds_in"] / robust["simulators"]).all()
    assert robust["share"].between(0, 1).all()
    assert set(robust["depends_most_on"]) <= set(choices.KNOBS)
    flips = robust["flip_threshold"]
    assert (flips.eq(ch.NO_FLIP) | flips.str.match(r"^\w+ ≈ -?[\d.e+-]+$")).all(), flips
    # The points and the robustness follow from the runs (pooled here again).
    again = ch.pool(runs)
    mine = points.set_index(["point", "claim"])
    for r in again.to_dict("records"):
        row = mine.loc[(r["point"], r["claim"])]
        assert row["versus"] == r["versus"] and bool(row["holds"]) == bool(r["holds"])
        assert row["lo"] == pytest.approx(r["lo"]) and row["effect"] == pytest.approx(r["effect"])
    pd.testing.assert_frame_equal(
        ch.claim_robustness(again, design), robust.drop(columns="provenance"), check_dtype=False
    )
    # Every point ran every seed; the controls only the claims about the router's signal.
    seeds = runs.groupby("point")["seed"].nunique()
    assert (seeds == seeds.max()).all() and seeds.max() >= 2
    control = runs[runs["point"].isin(ch.CONTROLS)]
    assert set(control["claim"]) == set(ch.CONTROL_CLAIMS)
    assert set(runs["point"]) == set(design["point"])

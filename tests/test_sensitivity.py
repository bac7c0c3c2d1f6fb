"""The simulator's choices (racer_lib.records.choices) and the sensitivity chapter's mechanics
(racer_lib.paper.chapters.simulator_sensitivity): what each knob does and does not change in the
simulated records, the design, the claims it re-decides (with their own rules, on CSVs of their
chapters' names and columns), the per-claim robustness and the controls read from planted
verdicts, and the smoke build's CSVs recomputed from its own per-simulator folders. Nothing
here asserts what a claim comes out as on simulated records."""

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from racer_lib.errors import ConfigError
from racer_lib.evaluation import verdicts
from racer_lib.paper import registry as stems
from racer_lib.paper import shift
from racer_lib.paper.chapters import simulator_sensitivity as ch
from racer_lib.records import choices, simulate
from racer_lib.records.schema import correct_matrix, token_matrix
from racer_lib.routing import train

CLAIMS = stems.claims()

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


def test_design_sizes_ranges_seed_and_controls():
    d = ch.design(seed=0, levels=2, lhs_points=4)
    n = len(choices.KNOBS)
    assert list(d["design"].value_counts().sort_index().items()) == [
        ("control", 3),
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
    controls = d[d["design"] == "control"].set_index("point")
    assert list(controls.index) == list(ch.CONTROLS)
    assert ch.simulator_of(controls.loc["null simulator"]) == choices.null_simulator()
    assert ch.simulator_of(controls.loc["planted signal"]) == ch.PLANTED
    assert ch.simulator_of(controls.loc["permuted embeddings"]) == choices.DEFAULT
    assert (controls["embedding"] == [c.embedding for c in ch.CONTROLS.values()]).all()
    assert (d.loc[d["design"] != "control", "embedding"] == "drawn").all()


def test_the_design_centres_on_the_builds_simulator():
    centre = choices.DEFAULT.with_knobs(readable=0.3)
    d = ch.design(seed=0, levels=2, lhs_points=0, knobs=["readable", "kappa"], centre=centre)
    rows = d.set_index("point")
    assert ch.simulator_of(rows.loc["default"]) == centre
    assert ch.simulator_of(rows.loc["kappa=0.9"]) == centre.with_knobs(kappa=0.9)
    assert set(d.loc[d["knob"] == "readable", "readable"]) == {0.1, 0.9}
    assert ch.simulator_of(rows.loc["permuted embeddings"]) == centre  # permuted at the centre
    assert ch.simulator_of(rows.loc["null simulator"]) == choices.null_simulator()


# ----------------------------------------------------------------------------------------
# The claims it re-decides, with their own rules


def test_every_sensitivity_key_but_the_baselines_is_decided_here():
    keys = {c.sensitivity for c in CLAIMS if c.sensitivity}
    skipped = {c.sensitivity for c in CLAIMS if c.chapter == stems.BASELINES}
    assert set(ch.sensitive_claims()) == keys - skipped
    for key, claim in ch.sensitive_claims().items():
        assert claim.sensitivity == key and ch._part(claim) in ch.WRITERS
    null = {c.sensitivity for c in CLAIMS if c.null == "embedding" and c.sensitivity}
    assert set(ch.CONTROLS["null simulator"].keys) == null - skipped
    assert ch.CONTROLS["planted signal"].expect == ch.RECOVERED
    assert set(ch.VERSUS_RANDOM) <= set(ch.sensitive_claims())


#: The columns each claim's chapter writes that its rules read (the claims table's contract).
CONTRACT = {
    "frontier_runs.csv": ["judge", "set", "budget", "seed", "method", "accuracy", "cost",
                          "reasoning_rate"],
    "frontier_endpoints.csv": ["judge", "set", "seed", "method", "accuracy", "cost"],
    "area_above_random.csv": ["judge", "set", "seed", "area_above_random"],
    "beta_runs.csv": ["beta", "budget", "seed", "accuracy", "cost"],
    "llama_runs.csv": ["evaluation_set", "budget", "seed", "racer_accuracy",
                       "random_at_cost_accuracy"],
    "ablation_runs.csv": ["scenario", "method", "variant", "tau", "seed", "budget", "accuracy",
                          "cost", "reasoning_rate", "violated"],
}  # fmt: skip


@pytest.fixture(scope="module")
def written(tmp_path_factory) -> tuple[Path, list[int], ch.Sizes]:
    """One small point written by :func:`ch.write_point` (two seeds, two epochs)."""
    tmp_path = tmp_path_factory.mktemp("point")
    sizes = ch.Sizes(scale=0.02, benchmark_scale=0.1, shift_scale=0.03, llama_budgets=(2.0,))
    settings = train.TrainSettings(arch="linear", epochs=2, batch_size=512, lr=0.05)
    seeds = verdicts.replicate_seeds(3, 2)
    ch.write_point(tmp_path, choices.DEFAULT, seeds, sizes, settings)
    return tmp_path, seeds, sizes


def test_write_point_writes_each_chapters_csvs_and_the_rules_read_them(written):
    tmp_path, seeds, sizes = written
    for name, columns in CONTRACT.items():
        table = pd.read_csv(tmp_path / name)
        assert table.columns[0] == "provenance" and (table["provenance"] == "simulated").all()
        assert set(columns) <= set(table.columns), (name, list(table.columns))
        assert sorted(table["seed"].unique()) == seeds, name
    ablation = pd.read_csv(tmp_path / "ablation_runs.csv")
    assert list(ablation["scenario"].unique()) == [shift.CHEAPER, shift.COSTLIER]
    assert {"ACER", "RACER-R", "RACER-C"} == set(ablation["variant"])
    assert set(ablation["tau"].dropna()) == set(sizes.taus)
    # Fig. 3's findings by chapter 08's code (racer_lib.paper.shift): one row each
    assert list(pd.read_csv(tmp_path / "paper_findings.csv")["finding"]) == [shift.HIGHEST]
    control = pd.read_csv(tmp_path / "control_findings.csv")
    assert list(control["finding"]) == [shift.MATCHED.format(name="RACER-C")]
    assert (
        control["test"]
        .item()
        .startswith("fewer violations: one-sided t and bootstrap-t (< -0.1) AND equal")
    )
    found = ch.decide(tmp_path, ch.sensitive_claims())
    assert list(found["key"]) == list(ch.sensitive_claims())
    # two seeds: every claim was read, none decided
    assert (found["decision"] == verdicts.INCONCLUSIVE).all(), found[["key", "note"]]
    assert found["note"].str.contains("too few seeds").all()
    missing = ch.decide(tmp_path / "nothing", ["frontier_random_id"])
    assert missing["decision"].iloc[0] == "" and "wrote no" in missing["note"].iloc[0]


def test_status_at_default_sets_the_main_builds_status_beside_the_reduced_one(written, tmp_path):
    """The main build's status is each claim's own rule on its chapter's folder: with the
    point's own CSVs as every chapter's results, the two agree on every claim; a chapter that
    left no results, or a reduced decision that differs, is named where they do not."""
    folder = written[0]
    points = ch.decide(folder, ch.sensitive_claims()).assign(point="default")
    for stem in ch.MAIN_CHAPTERS:
        (tmp_path / stem).symlink_to(folder, target_is_directory=True)
    table = ch.status_at_default(points, tmp_path, "test")
    assert list(table["key"]) == list(ch.sensitive_claims())
    assert table["agrees"].all() and (table["main_status"] == "inconclusive").all()
    assert ch.agreement(table).to_dict("records") == [
        {"compared": len(table), "agree": len(table), "differ": "none"}
    ]
    (tmp_path / stems.LLAMA).unlink()
    planted = points.assign(decision=points["decision"].mask(points["key"] == "beta_alike",
                                                             verdicts.HOLDS))  # fmt: skip
    table = ch.status_at_default(planted, tmp_path, "test").set_index("key")
    assert table.loc["llama_vs_random", "main_status"] == "not reproducible here"
    assert table.loc["beta_alike", "reduced_status"] == "reproduced"
    assert ch.agreement(table.reset_index())["differ"].item() == "beta_alike, llama_vs_random"


# ----------------------------------------------------------------------------------------
# Per-claim robustness and the controls, from planted verdicts


def planted_points(design: pd.DataFrame) -> pd.DataFrame:
    """Verdicts per point: ``frontier_random_id`` holds where readable > 0.2 (its p-value
    falling with readable, its effect 2 pts per unit of readable above 0.2, kappa moving it
    by a tenth of that); ``ablation_racer_c_within`` holds everywhere but at gain_scale's
    low end, where it fails."""
    rows = []
    for row in design.to_dict("records"):
        effect = 2 * (row["readable"] - 0.2) + 0.2 * (row["kappa"] - 0.6)
        p = verdicts.ALPHA * 10 ** (-10 * (row["readable"] - 0.2))
        rows.append(
            {**row, "key": "frontier_random_id", "effect": effect, "lo": effect - 0.5,
             "hi": effect + 0.5, "p": min(p, 1.0), "n": 10, "test": "one-sided t (> 0)",
             "decision": verdicts.HOLDS if p < verdicts.ALPHA else verdicts.INCONCLUSIVE,
             "unit": "pts"}
        )  # fmt: skip
        low = row["gain_scale"] < 1
        rows.append(
            {**row, "key": "ablation_racer_c_within", "effect": 0.2 if low else -0.1,
             "lo": 0.1 if low else -0.2, "hi": 0.3 if low else 0.0, "p": 0.9 if low else 0.001,
             "n": 10, "test": "one-sided t (< 0.05)",
             "decision": verdicts.FAILS if low else verdicts.HOLDS, "unit": "(cost / C - 1)"}
        )  # fmt: skip
    return pd.DataFrame(rows)


def test_claim_robustness_reads_planted_verdicts():
    design = ch.design(seed=0, levels=2, lhs_points=3, knobs=["readable", "kappa", "gain_scale"])
    points = planted_points(design)
    robust = ch.claim_robustness(points).set_index("key")
    assert list(robust.reset_index().columns) == [
        "key", "claim", "simulators", "holds_in", "fails_in", "share", "effect_median",
        "effect_min", "effect_max", "unit", "depends_most_on", "flip_threshold",
        "effect_scope", "summary",
    ]  # fmt: skip
    assert (robust["effect_scope"] == ch.EFFECT_SCOPE).all()  # why sizes differ (issue 42)
    plausible = points[(points["design"] != "control") & (points["key"] == "frontier_random_id")]
    row = robust.loc["frontier_random_id"]
    assert row["simulators"] == len(plausible) == 10
    assert row["holds_in"] == (plausible["decision"] == verdicts.HOLDS).sum()
    assert row["share"] == row["holds_in"] / row["simulators"]
    assert row["effect_median"] == pytest.approx(plausible["effect"].median())
    assert (row["effect_min"], row["effect_max"]) == (
        plausible["effect"].min(),
        plausible["effect"].max(),
    )
    assert row["unit"] == "pts" and row["depends_most_on"] == "readable"
    # the flip: the p-value's score (log10 of ALPHA / p) is linear in readable, zero at 0.2
    assert row["flip_threshold"] == "readable ≈ 0.2"
    assert "holds in" in row["summary"] and "+0.6 (median" in row["summary"]
    budget = robust.loc["ablation_racer_c_within"]
    low = points[(points["design"] != "control") & (points["key"] == "ablation_racer_c_within")]
    assert budget["fails_in"] == (low["gain_scale"] < 1).sum() >= 1
    assert budget["depends_most_on"] == "gain_scale"
    assert budget["flip_threshold"].startswith("gain_scale ≈ ")
    assert 0.5 < float(budget["flip_threshold"].split("≈ ")[1]) < 1.0
    flat = points.assign(decision=verdicts.HOLDS, p=1e-4)
    assert (ch.claim_robustness(flat)["flip_threshold"] == ch.NO_FLIP).all()
    untested = points.assign(decision=verdicts.INCONCLUSIVE, p=np.nan)
    assert (ch.claim_robustness(untested)["flip_threshold"] == ch.NO_FLIP).all()


def test_decision_score_and_flip_threshold():
    assert ch.decision_score(verdicts.ALPHA / 100, verdicts.HOLDS) == pytest.approx(2)
    assert ch.decision_score(0.5, verdicts.FAILS) < 0
    assert ch.decision_score(verdicts.ALPHA / 100, verdicts.FAILS) == 0  # never on the holds side
    assert np.isnan(ch.decision_score(np.nan, verdicts.INCONCLUSIVE))
    assert ch.flip_threshold([0.0, 1.0], [-1.0, 3.0]) == pytest.approx(0.25)
    assert ch.flip_threshold([0.0, 0.5, 1.0], [1.0, 2.0, 3.0]) is None
    assert ch.flip_threshold([0.0, 0.5, 1.0], [1.0, -1.0, -2.0]) == pytest.approx(0.25)
    assert ch.flip_threshold([0.0, 0.5, 1.0], [1.0, np.nan, -2.0]) is None


def test_controls_pass_or_fail_on_their_expected_decision():
    rows = []
    for name, control in ch.CONTROLS.items():
        for key in control.keys:
            area = key == "frontier_area"
            decision = verdicts.HOLDS if area else verdicts.INCONCLUSIVE
            rows.append({"point": name, "key": key, "decision": decision, "effect": 0.1,
                         "lo": 0.05 if area else -0.1, "hi": 0.3, "unit": "pts", "test": "t",
                         "n": 10})  # fmt: skip
    table = ch.controls_table(pd.DataFrame(rows))
    assert list(table.columns) == [
        "control", "key", "expect", "decision", "effect", "interval", "unit", "test", "n",
        "passes",
    ]  # fmt: skip
    negative = table[table["control"] != "planted signal"]
    assert (negative["passes"] == (negative["key"] != "frontier_area")).all()
    planted = table[table["control"] == "planted signal"]
    assert (planted["passes"] == (planted["key"] == "frontier_area")).all()
    summary = ch.control_summary(table).set_index("control")
    assert (summary["result"] == "fails").all()  # each control has one claim the wrong way
    assert summary.loc["null simulator", "claims"] == len(ch.CONTROLS["null simulator"].keys)


# ----------------------------------------------------------------------------------------
# The chapter in the smoke build: its CSVs, recomputed from its own per-simulator folders


@pytest.mark.slow
def test_smoke_chapter_writes_the_report_contract(smoke):
    result, _ = smoke
    out = Path(result.results_dirs["16_simulator_sensitivity"])
    design = pd.read_csv(out / "simulator_design.csv")
    points = pd.read_csv(out / "sensitivity_points.csv")
    robust = pd.read_csv(out / "claim_robustness.csv")
    controls = pd.read_csv(out / "controls.csv")
    assert list(robust.columns) == ["provenance", *ch.claim_robustness(points).columns]
    assert set(robust["key"]) == set(ch.sensitive_claims())
    assert (robust["provenance"] == "simulated").all()
    assert (robust["share"] == robust["holds_in"] / robust["simulators"]).all()
    assert set(robust["depends_most_on"]) <= set(choices.KNOBS)
    flips = robust["flip_threshold"]
    assert (flips.eq(ch.NO_FLIP) | flips.str.match(r"^\w+ ≈ -?[\d.e+-]+$")).all(), flips
    # every point's verdicts are its claims' own rules on its folder's CSVs, re-read here
    assert set(points["point"]) == set(design["point"])
    for point, mine in points.groupby("point", sort=False):
        folder = out / "points" / ch.re.sub(r"[^\w.=+-]+", "_", point)
        again = ch.decide(folder, list(mine["key"]))
        assert list(again["decision"]) == list(mine["decision"].fillna("")), point
        assert np.allclose(again["effect"], mine["effect"], equal_nan=True), point
        assert (mine["n"] >= 2).all() and mine["n"].nunique() == 1, point
    # the robustness and the controls follow from the points
    text = {"unit": "", "interval": ""}  # empty text reads back as NaN
    pd.testing.assert_frame_equal(
        ch.claim_robustness(points.drop(columns="provenance")).fillna(text),
        robust.drop(columns="provenance").fillna(text),
        check_dtype=False,
    )
    pd.testing.assert_frame_equal(
        ch.controls_table(points).fillna(text),
        controls.drop(columns="provenance").fillna(text),
        check_dtype=False,
    )
    assert set(controls["control"]) == set(ch.CONTROLS)

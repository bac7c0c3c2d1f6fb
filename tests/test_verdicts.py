"""racer_lib.evaluation.verdicts: the protocol's tests measured on nulls before they are trusted.

Each rule is run many times on simulated data whose truth is known: on nulls (no effect, or an
effect exactly at an equivalence margin) the share of "holds" must stay at or under the stated
level (plus Monte Carlo error); on planted effects the rule must find them. The percentile
bootstrap the book used before is measured beside the t-test at ten seeds, to show why it was
replaced.
"""

import math

import numpy as np
import pytest
from statsmodels.stats.multitest import multipletests

from racer_lib.evaluation import verdicts as v
from racer_lib.evaluation.intervals import bootstrap_interval

DRAWS = 3000
#: Three Monte Carlo standard errors of a rate at the stated level over DRAWS draws.
SLACK = 3 * math.sqrt(v.ALPHA * (1 - v.ALPHA) / DRAWS)


def _rate(draw, rule, decision=v.HOLDS, draws=DRAWS, seed=0):
    rng = np.random.default_rng(seed)
    return np.mean([rule(draw(rng)).decision == decision for _ in range(draws)])


NULLS = {
    # per-seed values as the chapters produce them: a mean over many pairs or budgets
    "gaussian": lambda rng: rng.normal(0, 1, v.MIN_SEEDS),
    "mean of 8 exponentials": lambda rng: rng.exponential(1, (v.MIN_SEEDS, 8)).mean(1) - 1,
    "share of 3 runs over budget, paired": lambda rng: (
        (rng.binomial(3, 0.4, v.MIN_SEEDS) - rng.binomial(3, 0.4, v.MIN_SEEDS)) / 3
    ),
}


#: How far above its level the t-test may go on a skewed null: a mean of eight exponentials
#: (skewness 0.7, more than a mean over hundreds of pairs has) measured 4.2 % on its long-tail
#: side at ten seeds. The book's goal for the false-positive rate is 5 % (make bench-verdicts).
SKEWED_LEVEL = 2 * v.ALPHA


@pytest.mark.parametrize("name", list(NULLS))
@pytest.mark.parametrize("sign", [1, -1])
def test_a_directional_claim_on_a_null_holds_at_most_at_the_stated_level(name, sign):
    rate = _rate(NULLS[name], lambda x: v.directional(x, sign))
    level = v.ALPHA if name == "gaussian" else SKEWED_LEVEL
    assert rate <= level + SLACK, f"{name}: {rate:.3f} > {level}"


def test_the_percentile_bootstrap_at_few_seeds_is_anti_conservative_where_t_is_not():
    """Why the book left the bootstrap: at three seeds a 95 % percentile bootstrap of the mean
    reduces to "every seed above zero" and fires several times its level on Gaussian nulls."""
    rng = np.random.default_rng(1)
    boot = t = 0
    for i in range(800):
        x = rng.normal(0, 1, 3)
        boot += bootstrap_interval(x, seed=i, n_boot=400)[0] > 0
        t += v.directional(x, min_n=2).holds
    assert boot / 800 > 2.5 * v.ALPHA
    assert t / 800 <= v.ALPHA + 3 * math.sqrt(v.ALPHA / 800)


def test_a_planted_effect_is_found_and_its_opposite_fails():
    rng = np.random.default_rng(2)
    found = np.mean([v.directional(rng.normal(1.5, 1, 10)).holds for _ in range(300)])
    assert found > 0.95
    refuted = np.mean(
        [v.directional(rng.normal(-1.5, 1, 10)).decision == v.FAILS for _ in range(300)]
    )
    assert refuted > 0.95


def test_a_small_effect_at_ten_seeds_is_inconclusive_not_refuted():
    rng = np.random.default_rng(3)
    decisions = [v.directional(rng.normal(0.3, 1, 10)).decision for _ in range(400)]
    assert decisions.count(v.FAILS) / 400 < v.ALPHA
    assert decisions.count(v.INCONCLUSIVE) > decisions.count(v.HOLDS)


def test_the_interval_is_the_95_percent_t_interval_and_p_is_the_one_sided_t_test():
    from scipy import stats

    x = np.array([0.3, 1.2, -0.4, 0.8, 0.5, 1.1, 0.2, 0.9, 0.0, 0.6])
    verdict = v.directional(x)
    lo, hi = stats.t.interval(0.95, x.size - 1, loc=x.mean(), scale=stats.sem(x))
    assert verdict.lo == pytest.approx(lo) and verdict.hi == pytest.approx(hi)
    p = stats.ttest_1samp(x, 0, alternative="greater").pvalue
    boot = v._bootstrap_p(x, 0.0, 1, seed=0)
    assert verdict.p == pytest.approx(max(p, boot[0]))
    assert verdict.p_other == pytest.approx(max(1 - p, boot[1]))
    below = v.directional(x, sign=-1, threshold=1.0)
    p_below = stats.ttest_1samp(x, 1.0, alternative="less").pvalue
    assert below.p == pytest.approx(max(p_below, v._bootstrap_p(x, 1.0, -1, seed=0)[0]))
    assert "bootstrap-t" in verdict.test


def test_fewer_seeds_than_the_minimum_decide_nothing():
    verdict = v.directional([5.0, 6.0, 7.0])
    assert verdict.decision == v.INCONCLUSIVE and "too few seeds" in verdict.note
    assert math.isnan(verdict.p) and verdict.n == 3
    assert v.directional([5.0, 6.0, 7.0], min_n=3).holds


def test_a_sample_without_spread_is_decided_by_its_side():
    assert v.directional([0.2] * 10).holds
    assert v.directional([0.0] * 10).decision == v.FAILS  # no effect at all
    assert v.directional([0.0] * 10, sign=-1, threshold=0.05).holds


@pytest.mark.parametrize("edge", [-1, 1])
def test_tost_at_the_margin_holds_at_most_at_the_stated_level(edge):
    margin = 0.5
    rate = _rate(lambda rng: rng.normal(edge * margin, 1, 10), lambda x: v.equivalent(x, margin))
    assert rate <= v.ALPHA + SLACK


def test_tost_is_statsmodels_and_decides_three_ways():
    from statsmodels.stats.weightstats import DescrStatsW

    rng = np.random.default_rng(4)
    x = rng.normal(0.0, 0.2, 10)
    verdict = v.equivalent(x, 0.5)
    tost = DescrStatsW(x).ttost_mean(-0.5, 0.5)[0]
    boot = max(v._bootstrap_p(x, -0.5, 1, 0)[0], v._bootstrap_p(x, 0.5, -1, 0)[0])
    sign = max(v._sign_p(x, -0.5, 1)[0], v._sign_p(x, 0.5, -1)[0])
    assert verdict.p == pytest.approx(max(tost, boot, sign))
    assert verdict.holds and verdict.sesoi == 0.5
    assert v.equivalent(rng.normal(2.0, 0.2, 10), 0.5).decision == v.FAILS
    assert v.equivalent(rng.normal(0.4, 1.0, 10), 0.5).decision == v.INCONCLUSIVE
    with pytest.raises(ValueError):
        v.equivalent(x, 0.0)


def test_an_equivalence_whose_median_sits_on_the_margin_is_not_held_whatever_its_mean():
    """Table 3's "β alike" at one budget: a tight bulk of seeds whose mean lies inside the
    margin while half of them lie beyond it (the build's outlying seed missed by a resample).
    TOST and the bootstrap hold it; the median's sign tests do not, and the claim stays open."""
    from statsmodels.stats.weightstats import DescrStatsW

    x = np.concatenate([np.linspace(-0.16, -0.151, 10), np.linspace(-0.149, -0.09, 10)])
    assert np.median(x) == pytest.approx(-0.15) and x.mean() > -0.15
    assert DescrStatsW(x).ttost_mean(-0.15, 0.15)[0] < v.ALPHA
    assert v.equivalent(x, 0.15).decision == v.INCONCLUSIVE
    # the same bulk moved inside the margin is held
    assert v.equivalent(x + 0.1, 0.15).decision == v.HOLDS


def test_failing_to_find_a_difference_is_not_equivalence():
    """The old rule read 'alike' when |gap| <= max(se, 0.5); a gap of 0.45 +- 0.3 (se) crosses
    a 0.5 margin: TOST does not call it alike."""
    x = np.array([0.45 + d for d in (-0.9, 0.9, -0.5, 0.5, -0.2, 0.2, 0.8, -0.8, 0.1, -0.1)])
    assert v.equivalent(x, 0.5).decision == v.INCONCLUSIVE


def test_every_holds_as_an_intersection_union_test_and_fails_under_holm():
    """Holding needs every member at the level, uncorrected (Berger 1982); failing needs one
    member's opposite side after Holm's correction (statsmodels)."""
    rng = np.random.default_rng(5)
    members = {f"budget {b}": v.directional(rng.normal(0.8, 1, 10)) for b in range(6)}
    family = v.every(members)
    raw = np.array([m.p for m in members.values()])
    assert family.p == pytest.approx(raw.max())
    assert family.holds == bool((raw < v.ALPHA).all())
    assert family.test.startswith("every one of 6 (intersection-union)")
    others = multipletests([m.p_other for m in members.values()], alpha=v.ALPHA, method="holm")[1]
    assert family.p_other == pytest.approx(others.min())


def test_an_every_claim_on_its_least_favourable_null_holds_at_most_at_the_level():
    """The least favourable null of "every member": all but one member far beyond the SESOI,
    one exactly at it. The intersection-union test holds there at most at the level."""
    sesoi = 0.3

    def family(x):
        return v.every({str(i): v.directional(row, sesoi=sesoi) for i, row in enumerate(x)})

    def draw(rng):
        x = rng.normal(5.0, 1, (9, 10))
        x[0] = rng.normal(sesoi, 1, 10)
        return x

    rate = _rate(draw, family, draws=800)
    assert rate <= v.ALPHA + 3 * math.sqrt(v.ALPHA / 800)


def test_a_family_whose_members_are_all_at_the_sesoi_fails_at_most_at_the_stated_level():
    """Family-wise: on eight members exactly at the SESOI, 'fails' (some member shown short of
    it after Holm) stays under the level, as Holm promises."""
    rate = _rate(
        lambda rng: rng.normal(0.2, 1, (8, 10)),
        lambda x: v.every({str(i): v.directional(row, sesoi=0.2) for i, row in enumerate(x)}),
        decision=v.FAILS,
        draws=1000,
    )
    assert rate <= v.ALPHA + 3 * math.sqrt(v.ALPHA / 1000)


def test_one_failing_member_fails_the_family_and_an_untested_one_leaves_it_undecided():
    good = v.directional(np.linspace(1, 2, 10))
    bad = v.directional(np.linspace(-2, -1, 10))
    assert v.every({"a": good, "b": bad}).decision == v.FAILS
    assert v.every({"a": good, "b": good}).holds
    few = v.every({"a": good, "b": v.directional([1.0, 2.0])})
    assert few.decision == v.INCONCLUSIVE and "untested" in few.note


def test_most_reads_a_majority():
    good = v.directional(np.linspace(1, 2, 10))
    bad = v.directional(np.linspace(-2, -1, 10))
    none = v.directional(np.linspace(-1, 1.2, 10))
    assert v.most({"a": good, "b": good, "c": none}).holds
    assert v.most({"a": bad, "b": good}).decision == v.FAILS
    assert v.most({"a": good, "b": none, "c": none}).decision == v.INCONCLUSIVE


def test_a_detected_effect_below_the_sesoi_is_not_reproduced():
    """The issue's case: +0.07 pt at 60 seeds is detectably above zero, yet below a SESOI of
    0.15 pt the interval lies short of it: not reproduced, not "reproduced"."""
    rng = np.random.default_rng(8)
    x = 0.07 + 0.02 * rng.standard_normal(60)
    assert v.directional(x).holds  # against zero alone it would read "reproduced"
    decided = v.directional(x, sesoi=0.15)
    assert decided.decision == v.FAILS and decided.sesoi == 0.15
    assert "> 0.15" in decided.test
    assert v.directional(x + 0.2, sesoi=0.15).holds
    mixed = v.directional(0.15 + 0.3 * rng.standard_normal(10), sesoi=0.15)
    assert mixed.decision == v.INCONCLUSIVE


@pytest.mark.parametrize("sign", [1, -1])
def test_a_directional_claim_at_its_sesoi_holds_at_most_at_the_level(sign):
    rate = _rate(
        lambda rng: sign * rng.normal(0.4, 1, v.MIN_SEEDS),
        lambda x: v.directional(x, sign, sesoi=0.4),
    )
    assert rate <= v.ALPHA + SLACK


#: Skewed nulls as the build's per-seed data can be (issue 40 measured skew up to +-4): the
#: long tail lies opposite the claimed side, where Student's t breaks its level. Each is
#: ``(draw, median)``: ``c - draw`` has its mean at ``c - mean`` and its median at ``c - median``.
SKEWED = {
    "exponential, left tail": (lambda rng: rng.exponential(1, v.MIN_SEEDS), math.log(2)),
    "gamma(0.5), left tail": (lambda rng: rng.gamma(0.5, 1, v.MIN_SEEDS), 0.5 * 0.4549364),
    "lognormal(0, 1), left tail": (lambda rng: rng.lognormal(0, 1, v.MIN_SEEDS), 1.0),
}


def _t_alone(x, boundary=0.0):
    from scipy import stats

    rejects = stats.ttest_1samp(x, boundary, alternative="greater").pvalue < v.ALPHA
    return v.Verdict(0, 0, 0, 0, x.size, "", v.HOLDS if rejects else v.FAILS)


@pytest.mark.parametrize("name", list(SKEWED))
def test_on_skewed_seeds_the_chosen_test_keeps_the_level_student_t_breaks(name):
    """Issue 40, item 3, at ten seeds with a long left tail. Student's t alone, on its own
    least favourable null (the mean at the boundary), fires two to four times its 2.5 %. The
    protocol's rule decides such a sample on its median by the sign test (:func:`v.skewed`), so
    its least favourable null is the one where neither the mean nor the median lies above the
    boundary (here the median at it): there it holds the level."""
    draw, median = SKEWED[name]
    mean = 0.5 if name.startswith("gamma") else math.exp(0.5) if "lognormal" in name else 1.0
    draws = 1500
    t_alone = _rate(lambda rng: mean - draw(rng), _t_alone, draws=draws)
    chosen = _rate(lambda rng: median - draw(rng), lambda x: v.directional(x, 1), draws=draws)
    assert t_alone > 2 * v.ALPHA
    assert chosen <= v.ALPHA + 3 * math.sqrt(v.ALPHA / draws)
    # the sign test is what decided the skewed samples, on the median and its interval
    x = next(
        x for x in (median - draw(np.random.default_rng(k)) for k in range(200)) if v.skewed(x)
    )
    verdict = v.directional(x, 1)
    assert verdict.test.startswith("sign test of the median")
    assert verdict.effect == pytest.approx(np.median(x)) and verdict.lo <= verdict.effect


def test_the_sign_test_decides_a_skewed_sample_three_ways_and_ties_keep_the_mean():
    from scipy import stats

    bulk = np.linspace(0.5, 0.7, 9)
    outlier = np.append(bulk, -3.0)  # skew -3: one seed carries the mean below the bulk
    assert v.skewed(outlier) and not v.skewed(bulk)
    holds = v.directional(outlier, 1, threshold=0.0)  # nine of ten above 0: p = 11 / 1024
    assert holds.decision == v.HOLDS and holds.p == pytest.approx(11 / 1024)
    assert holds.p == pytest.approx(
        stats.quantile_test(outlier, q=0.0, p=0.5, alternative="greater").pvalue
    )
    assert v.directional(outlier, 1, threshold=0.6).decision == v.INCONCLUSIVE
    assert v.directional(outlier, 1, threshold=1.0).decision == v.FAILS
    # the mean's t-test would call the first inconclusive: the outlier widens its interval
    assert stats.ttest_1samp(outlier, 0.0, alternative="greater").pvalue > v.ALPHA
    # shares of three runs: few distinct values, skewed or not, keep the mean's test
    shares = np.array([0, 0, 0, 0, 0, 0, 0, 0, 1 / 3, -1.0])
    assert not v.skewed(shares)
    # a resample of skewed continuous seeds repeats some of them and stays skewed
    assert v.skewed(np.append(np.repeat(bulk[:5], 2)[:9], -3.0))
    assert v.directional(shares, -1).test.startswith("one-sided t and bootstrap-t")
    # equivalence: two sign tests of the median within the margin
    alike = v.equivalent(np.append(np.linspace(-0.05, 0.05, 19), 1.2), 0.15, min_n=10)
    assert alike.test.startswith("two sign tests") and alike.decision == v.HOLDS


@pytest.mark.parametrize("edge", [-1, 1])
def test_a_skewed_equivalence_at_its_margin_holds_at_most_at_the_level(edge):
    """At the upper margin (the claim: below it) a left tail puts the mean below the median:
    the mean sits on the margin; at the lower margin the median does."""
    draw, median = SKEWED["exponential, left tail"]
    centre = 1.0 if edge > 0 else median
    rate = _rate(
        lambda rng: edge * 0.5 + centre - draw(rng), lambda x: v.equivalent(x, 0.5), draws=1500
    )
    assert rate <= v.ALPHA + 3 * math.sqrt(v.ALPHA / 1500)


def test_the_level_on_a_samples_own_shape_is_measured_from_its_resamples():
    rng = np.random.default_rng(9)
    symmetric = v.level_on_shape(rng.normal(0, 1, 60), 1)
    left_tail = v.level_on_shape(-rng.lognormal(0, 1.2, 10), 1)
    assert abs(symmetric - v.ALPHA) < 0.015
    assert left_tail > 2 * v.ALPHA
    assert v.level_on_shape(np.zeros(10), 1) == 0.0


def test_replicate_seeds_of_two_master_seeds_never_overlap():
    a, b = v.replicate_seeds(0, 10), v.replicate_seeds(1, 10)
    assert len(set(a)) == 10 and not set(a) & set(b)
    with pytest.raises(ValueError):
        v.replicate_seeds(0, 0)


def test_a_verdict_states_its_uncertainty():
    verdict = v.directional(np.linspace(0.5, 1.5, 10))
    text = verdict.interval_text(" pts")
    assert "[" in text and "n = 10" in text
    assert set(verdict.columns()) >= {"effect", "lo", "hi", "p", "n", "test", "decision"}


def test_holm_is_statsmodels_and_leaves_the_collector_in_place():
    import gc

    pvalues = [0.001, 0.02, 0.03, 0.2]
    expected = multipletests(pvalues, alpha=v.ALPHA, method="holm")[1]
    collect = gc.collect
    assert np.allclose(v.holm(pvalues), expected)
    assert gc.collect is collect


def test_a_conjunction_holds_only_when_every_part_holds():
    """An intersection-union test: holds when every part holds, fails when one fails (whatever
    the others), inconclusive otherwise, with the deciding part's numbers and no correction."""
    yes = v.directional(np.linspace(1.0, 2.0, 10))
    no = v.directional(-np.linspace(1.0, 2.0, 10))
    maybe = v.directional(np.linspace(-1.0, 1.2, 10))
    few = v.directional([1.0, 2.0])
    assert (yes.decision, no.decision, maybe.decision) == (v.HOLDS, v.FAILS, v.INCONCLUSIVE)
    both = v.conjunction({"a": yes, "b": yes})
    assert both.holds and both.p == yes.p and both.n == 10
    assert v.conjunction({"a": yes, "b": no}).decision == v.FAILS
    assert v.conjunction({"a": maybe, "b": no}).decision == v.FAILS
    undecided = v.conjunction({"a": yes, "b": maybe})
    assert undecided.decision == v.INCONCLUSIVE and undecided.effect == maybe.effect
    assert "a holds" in undecided.note and "b inconclusive" in undecided.note
    assert undecided.test == f"a: {yes.test} AND b: {maybe.test}"
    assert v.conjunction({"a": yes, "b": few}).decision == v.INCONCLUSIVE
    assert math.isnan(v.conjunction({"a": yes, "b": few}).p)
    with pytest.raises(ValueError):
        v.conjunction({})


def test_re_split_seeds_of_one_set_of_pairs_need_the_corrected_resampled_t():
    """Released judgments: one fixed set of pairs, each seed a new split of it. Per pair, a
    router's advantage has mean zero over the population, but the released set's own mean is
    off zero by its sampling error, which more seeds never average away. The plain t over
    seeds then fires far above its level; Nadeau and Bengio's correction (``overlap``, the
    test share over the training share) brings it back near the level."""
    n_pairs, seeds, test_share = 400, 10, 0.2
    plain = corrected = 0
    draws = 400
    for i in range(draws):
        rng = np.random.default_rng(i)
        advantage = rng.normal(0.0, 1.0, n_pairs)  # one released set: a sample of pairs
        per_seed = []
        for _ in range(seeds):
            test = rng.permutation(n_pairs)[: int(test_share * n_pairs)]
            per_seed.append(advantage[test].mean())
        plain += v.directional(per_seed, 1, seed=i).holds
        corrected += v.directional(per_seed, 1, seed=i, overlap=test_share / (1 - test_share)).holds
    slack = 3 * math.sqrt(v.ALPHA / draws)
    assert plain / draws > 3 * v.ALPHA
    assert corrected / draws <= 2 * v.ALPHA + slack


def test_an_interval_is_written_with_the_decimals_that_tell_its_ends_apart():
    """Issue 42's "-0.01 [-0.01, -0.01]", "-0.00" and p = "0.00" never reach a page."""
    from racer_lib.evaluation import intervals

    assert intervals.interval_text(-0.0071, -0.0090, -0.0052) == "-0.0071 [-0.0090, -0.0052]"
    assert intervals.interval_text(0.84, 0.56, 1.15) == "+0.84 [+0.56, +1.15]"
    assert intervals.interval_text(0.12, -0.0049, 0.30) == "+0.12 [0.00, +0.30]"  # no "-0.00"
    assert intervals.interval_text(-0.0) == "0.00" and intervals.interval_text(np.nan) == "–"
    assert [intervals.p_text(p) for p in (0.0, 0.0004, 0.0025, 0.37)] == [
        "< 0.001", "< 0.001", "0.003", "0.37",
    ]  # fmt: skip
    tiny = v.directional(np.linspace(-0.009, -0.0052, 10), -1)
    assert "-0.01 [-0.01, -0.01]" not in tiny.interval_text()
    assert tiny.interval_text() == "-0.00710 [-0.00801, -0.00619], n = 10"

"""What the benchmarks compute: FLOP and parameter counts, paper-sim's floor, and the claim by
claim comparison of two books."""

import importlib.util
from pathlib import Path

import pytest
import torch
from torch.utils.flop_counter import FlopCounterMode

from racer_lib.routing.policy import matmul_flops, n_parameters, reference_policy

BENCHMARKS = Path(__file__).resolve().parent.parent / "benchmarks"


def _bench(name: str = "paper_sim", prefix: str = "bench_"):
    spec = importlib.util.spec_from_file_location(
        f"{prefix}{name}", BENCHMARKS / f"{prefix}{name}.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("arch", ["mlp", "linear"])
@pytest.mark.parametrize("backward", [False, True])
def test_matmul_flops_count_what_torch_multiplies(arch, backward):
    model, x = reference_policy(0, 40, arch), torch.rand(8, 40)  # no gradient for the input
    with FlopCounterMode(display=False) as counter:
        out = model(x).sum()
        if backward:
            out.backward()
    assert matmul_flops(40, arch, rows=8, backward=backward) == counter.get_total_flops()


@pytest.mark.parametrize("arch", ["mlp", "linear"])
def test_n_parameters_counts_the_policy(arch):
    model = reference_policy(0, 24, arch)
    assert n_parameters(24, arch) == sum(p.numel() for p in model.parameters())


def test_floor_adds_the_optimizer_to_the_matmuls_at_peak():
    bench = _bench()
    rates = {
        "adamw_s_per_parameter": 1e-9,
        "stream_gb_per_s": 12.0,
        "peak_gflops": {"fp32": 100.0, "bf16": 400.0},
    }
    row = {"routers": 3, "epochs": 2, "train_pairs": 640, "dim": 16}
    out = bench.floor(row, rates)
    steps = 3 * 2 * 10  # 640 pairs in minibatches of 64
    assert out["optimizer_s"] == pytest.approx(steps * n_parameters(16) * 1e-9)
    flops = 3 * 2 * (matmul_flops(16, rows=640, backward=True) + matmul_flops(16, rows=80))
    assert out["matmul_gflop"] == pytest.approx(flops / 1e9)
    assert out["floor_fp32_s"] == pytest.approx(out["optimizer_s"] + flops / 100e9)
    assert out["floor_bf16_s"] == pytest.approx(out["optimizer_s"] + flops / 400e9)
    traffic = steps * n_parameters(16) * 24 / 12e9  # 24 bytes a parameter at 12 GB/s
    assert out["hard_floor_bf16_s"] == pytest.approx(traffic + flops / 400e9)
    twice = bench.floor({**row, "routers": 6}, rates)
    assert twice["floor_fp32_s"] == pytest.approx(2 * out["floor_fp32_s"])
    # the first layer's products at their own (slower) rates, the rest at the peak
    kernels = {"fp32": {"forward": 50.0, "weight_gradient": 25.0}}
    slow = bench.floor(row, {**rates, "first_layer_gflops": kernels})
    forward = 3 * 2 * 2.0 * (640 + 80) * 16 * 256
    gradient = 3 * 2 * 2.0 * 640 * 16 * 256
    rest = (flops - forward - gradient) / 100e9
    assert slow["kernel_floor_fp32_s"] == pytest.approx(
        out["optimizer_s"] + forward / 50e9 + gradient / 25e9 + rest
    )
    assert slow["kernel_floor_fp32_s"] > slow["floor_fp32_s"]


@pytest.mark.parametrize(
    ("hard", "kernel", "words"),
    [(9.0, 10.0, "for any trainer that keeps the protocol"), (7.0, 9.0, "PyTorch's kernels"),
     (7.0, 7.5, "within reach")],
)  # fmt: skip
def test_verdict_reads_the_floors(hard, kernel, words):
    floors = {"hard_floor_bf16": hard * 3600, "kernel_floor_bf16": kernel * 3600}
    assert words in _bench().verdict(floors, 8 * 3600)


def test_bf16_book_comparison_names_every_changed_claim(tmp_path):
    bench = _bench("bf16_book")
    header = "artifact,claim,build_value,status\n"
    fp32, bf16 = tmp_path / "a.csv", tmp_path / "b.csv"
    fp32.write_text(header + "Fig. 2,gain,+3.1,reproduced\nTab. 1,cost,0.5,reproduced\n")
    bf16.write_text(header + "Fig. 2,gain,+3.0,reproduced\nTab. 1,cost,0.5,not reproduced\n")
    out = bench.compare(bench.read_claims(fp32), bench.read_claims(bf16))
    assert out["claims"] == 2 and not out["statuses_unchanged"]
    assert [
        (c["artifact"], c["status_fp32"], c["status_bf16"]) for c in out["statuses_changed"]
    ] == [("Tab. 1", "reproduced", "not reproduced")]
    assert [(c["value_fp32"], c["value_bf16"]) for c in out["values_changed"]] == [("+3.1", "+3.0")]
    same = bench.compare(bench.read_claims(fp32), bench.read_claims(fp32))
    assert same["statuses_unchanged"] and not same["values_changed"]
    run = {"fp32_build_s": 200.0, "bf16_build_s": 150.0, "settings": {"date": "d", "cores": 2}}
    text = bench.page({**out, **run})
    assert "1 of them changed status, so float32 stays" in text
    assert "| Tab. 1 | cost | reproduced | not reproduced |" in text
    assert "Every status is the same" in bench.page({**same, **run})


def test_the_claim_rates_page_states_each_claims_rates_and_the_goal():
    bench = _bench("claim_rates", prefix="")
    result = {
        "results": "results/sim",
        "replications": 400,
        "fpr_target": 0.05,
        "measured": 1,
        "meeting_target": 1,
        "largest_fpr_upper": 0.03,
        "claims": {
            "Fig. 4 | RACER beats Random": {
                "status": "reproduced",
                "fpr": 0.01,
                "fpr_wilson_95": [0.004, 0.03],
                "fpr_mean_null": 0.2,
                "power": 0.9,
                "mde": 2.5,
            }
        },
        "not_measured": {"Fig. 1(a) | gains": "chapter 03 decided it on no per-seed family"},
        "date": "2026-11-29",
        "commit": "abc1234",
    }
    text = bench.page(result)
    assert "1 have a false-positive rate" in text and "largest upper bound 3.0 %" in text
    assert (
        "| Fig. 4 | RACER beats Random | reproduced | 1.0 % (≤ 3.0 %) | 90 % | 2.5 | 20.0 % |"
        in text
    )
    assert "1 emergent claims have no per-seed family to measure" in text
    unpowered = {**result["claims"]["Fig. 4 | RACER beats Random"], "power": None}
    text = bench.page({**result, "claims": {"Fig. 4 | no stated effect": unpowered}})
    assert "| Fig. 4 | no stated effect | reproduced | 1.0 % (≤ 3.0 %) |  | 2.5 |" in text
    assert "claim_rates: 1 of 1" in bench.line(result)


def test_the_router_cli_bench_reads_both_fit_times_the_cli_prints():
    bench = _bench("router_cli")
    printed = "baseline beside it, ...; fitted in 0.12 s (the router: 41.3 s); wrote r.json\n"
    assert bench._fit_times(printed) == {"logistic_regression_s": 0.12, "router_s": 41.3}
    assert bench._fit_times("nothing timed") == {}
    result = {"goals_s": bench.GOALS, "train_32k_s": 70.0, "train_llmbar_s": None,
              "route_10k_s": 2.0}  # fmt: skip
    said = bench.line(result)
    assert "train_32k 70.0 s (goal <= 60 s NOT met)" in said
    assert "train_llmbar not measured" in said and "route_10k 2.0 s (goal <= 5 s met)" in said


def _odds(shares: dict[int, float]) -> dict[int, dict[str, float]]:
    """A claim's modal-decision share per seed count, the rest inconclusive."""
    return {n: {"holds": p, "fails": 0.0, "inconclusive": 1.0 - p} for n, p in shares.items()}


def test_the_seed_plan_settles_each_chapters_least_stable_claim_by_gain_per_second():
    """``make bench-seed-plan``: a chapter takes the smallest count at which its least stable
    claim reaches the target, or the count at which it is most stable; chapters are granted by
    what their least stable claim gains per second while the notebook time stays within the
    budget, and one whose claims have nothing to plan keeps its count."""
    bench = _bench("seed_plan")
    steady = {"claim": "steady", "odds": _odds({10: 1.0, 20: 1.0, 40: 1.0})}
    per_chapter = {
        # reaches the target at 20: 20, not 40
        "a": [steady, {"claim": "edge", "odds": _odds({10: 0.6, 20: 0.99, 40: 1.0})}],
        # never reaches it: the count at which it is most stable (20), not the largest
        "b": [{"claim": "stuck", "odds": _odds({10: 0.5, 20: 0.8, 40: 0.7})}],
        # a large gain, but too dear for the budget
        "c": [{"claim": "dear", "odds": _odds({10: 0.5, 20: 1.0, 40: 1.0})}],
        "d": [{"claim": "finding", "odds": None}],
    }
    seconds = {"a": 10.0, "b": 10.0, "c": 700.0, "d": 5.0}
    current = {"a": 10, "b": 10, "c": 10}
    plan, total = bench.select(per_chapter, seconds, current)
    assert (plan["a"]["needed"], plan["b"]["needed"], plan["c"]["needed"]) == (20, 20, 20)
    assert plan["a"]["granted"] and plan["b"]["granted"] and not plan["c"]["granted"]
    assert plan["d"]["needed"] is None and not plan["d"]["granted"]
    assert total == pytest.approx(sum(seconds.values()) + 10.0 + 10.0)
    assert plan["a"]["gain"] == pytest.approx(0.39) and plan["b"]["gain"] == pytest.approx(0.3)
    line = bench.line({"plan": plan, "notebook_s": total})
    assert "a 10 -> 20 (+10 s)" in line and "c 10 needs 20 (+700 s)" in line
    assert "d None (no claim it can plan)" in line

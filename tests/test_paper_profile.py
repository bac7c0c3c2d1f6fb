"""The `paper` profile: the chapters read a records folder (records/<judge>/<set>.parquet).

The folder is written by the simulator at sizes no chapter would simulate, and its records are
relabelled ``generated`` (as `racer judge merge` writes them): a chapter that read the files
says ``generated`` and counts the files' pairs; one that simulated would say ``simulated``.
"""

import json
import shutil
from pathlib import Path

import jupytext
import pandas as pd
import papermill
import pytest
import yaml
from conftest import printed

from racer_lib.book import profiles, runner
from racer_lib.evaluation import metrics as evaluate
from racer_lib.records import io as rio
from racer_lib.records import simulate

ROOT = Path(__file__).resolve().parents[1]
JUDGE = "qwen3-4b"
BENCHMARKS = ["judgebench", "rewardbench", "rewardbench2"]
ROUTING = [
    "06_training_dynamics",
    "07_budget_frontier",
    "09_beta_sensitivity",
    "10_advanced_baselines",
    "12_llama_family",
]
ALL = [
    "04_reasoning_vs_instruct",
    *ROUTING[:4],
    "11_self_routing",
    ROUTING[4],
    "03_motivation_and_benchmarks",  # reads 02's tables (Fig. 1(a), the domain table)
    "01_reproduction_report",  # reads every chapter's tables; a claim not tested has none
]
SOURCE = "generated:test:tiny-judge"
FAST = {"n_seeds": 1, "epochs": 2, "torch_threads": 1}
# Extends `paper`, shrunk: one judge, one seed, two epochs, two budgets where allowed.
TINY = {
    "description": "the paper profile on a tiny records folder (tests)",
    "extends": "paper",
    "notebooks": {
        "04_reasoning_vs_instruct": {
            "records_paths": [f"records/{JUDGE}/{b}.parquet" for b in BENCHMARKS]
        },
        "06_training_dynamics": {**FAST, "budgets": [2.0, 4.0]},
        "07_budget_frontier": {**FAST, "judges": [JUDGE], "budgets": [2.0, 4.0]},
        "09_beta_sensitivity": {**FAST, "betas": [0.0, 0.005], "budgets": [2.0, 4.0]},
        "10_advanced_baselines": {
            **FAST,
            "judges": [JUDGE],
            "budgets": [2.0, 4.0],
            "mf_epochs": 3,
            "mirt_epochs": 2,
        },
        "11_self_routing": {
            "records_paths": [f"records/{JUDGE}/{s}.parquet" for s in ["training_mix", *BENCHMARKS]]
        },
        "12_llama_family": {**FAST, "judge": JUDGE, "budgets": [2.0, 3.0]},
    },
}


def test_paper_profile_names_the_routing_chapters_and_the_protocol():
    profile = profiles.load_profile("paper", ROOT)
    assert set(ROUTING) <= set(profile.notebooks)
    assert "05_dro_theory" not in profile.notebooks  # theory: no records to read
    for stem in ROUTING:
        params = profile.notebooks[stem]
        assert params["records_dir"] == "records", stem
        assert (
            params["arch"],
            params["epochs"],
            params["lr"],
            params["dual_step"],
            params["torch_threads"],
        ) == ("mlp", 60, 1e-4, 1e-3, 0), stem
    paper_budgets = [2.0, 2.5, 3.0, 3.5, 4.0, 4.5, 5.0, 6.0, 7.0, 10.0]
    assert profile.notebooks["07_budget_frontier"]["budgets"] == paper_budgets
    assert profile.notebooks["07_budget_frontier"]["n_seeds"] == 20
    assert profile.notebooks["10_advanced_baselines"]["budgets"] == paper_budgets
    assert profile.notebooks["09_beta_sensitivity"]["n_seeds"] == 10
    assert profile.notebooks["10_advanced_baselines"]["n_seeds"] == 10
    for stem in ("04_reasoning_vs_instruct", "11_self_routing"):
        assert all(p.startswith("records/") for p in profile.notebooks[stem]["records_paths"])


@pytest.mark.parametrize("stem", [*ROUTING, "08_robustness_ablation"])
def test_routing_chapters_declare_records_dir_empty_by_default(tmp_path, stem):
    src = tmp_path / f"{stem}.ipynb"
    jupytext.write(jupytext.read(ROOT / "notebooks" / f"{stem}.md"), src)
    params = papermill.inspect_notebook(src)
    assert params["records_dir"]["default"] == '""'
    given = profiles.load_profile("paper", ROOT).notebooks.get(stem, {})
    assert set(given) <= set(params), stem  # the runner would refuse an undeclared one


@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory):
    """A copy of the repository's notebooks and profiles, a records folder, the tiny profile."""
    root = tmp_path_factory.mktemp("paper")
    for folder in ("notebooks", "profiles"):
        shutil.copytree(ROOT / folder, root / folder)
    (root / "profiles" / "tiny.yaml").write_text(yaml.safe_dump(TINY, sort_keys=False))
    files = {}
    for name, scale in [("training_mix", 0.02), *[(b, 0.1) for b in BENCHMARKS]]:
        path = root / "records" / JUDGE / f"{name}.parquet"
        simulate.write_simulated(path, JUDGE, name, seed=7, dim=16, scale=scale)
        records = rio.read_records(path).assign(source=SOURCE)
        rio.write_records(records, path)
        files[name] = records
    result = runner.run_profile(
        "tiny",
        build_book=False,
        root=root,
        folders=profiles.Folders(root / "build", root / "results"),
    )
    return result, files


@pytest.mark.slow
def test_every_chapter_reads_the_records_folder(tiny_run):
    result, _ = tiny_run
    assert list(result.results_dirs) == ALL
    for stem, folder in result.results_dirs.items():
        tables = sorted(Path(folder).glob("*.csv"))
        assert tables, stem
        for table in tables:
            df = pd.read_csv(table)
            if "provenance" in df.columns:
                assert set(df["provenance"].dropna()) == {"generated"}, (stem, table.name)


@pytest.mark.slow
def test_pair_counts_are_the_files(tiny_run):
    result, files = tiny_run
    mix = files["training_mix"]
    test = mix[mix["split"] == "test"]
    assert f"{len(mix):,} pairs of {JUDGE} (generated)" in printed(result, ROUTING[0])
    n_train = int((mix["split"] == "train").sum())
    n_valid = int((mix["split"] == "valid").sum())
    assert f"trained on {n_train:,} pairs; {len(test):,} pairs to test" in printed(
        result, ROUTING[4]
    )
    chosen = f"trained on {n_train:,} pairs, checkpoints chosen on {n_valid:,}; {len(test):,} pairs"
    assert chosen in printed(result, "09_beta_sensitivity")  # the files' split, not a new one
    assert f"seeds, {n_train:,} training pairs" in printed(result, "10_advanced_baselines")

    # Fig. 4's endpoints on every set are those of the files' records
    ends = pd.read_csv(Path(result.results_dirs["07_budget_frontier"]) / "frontier_endpoints.csv")
    sets = {
        "train": mix[mix["split"] == "train"],
        "test": test,
        **{b: files[b] for b in BENCHMARKS},
    }
    assert set(ends["set"]) == set(sets)
    for _, row in ends.iterrows():
        want = evaluate.endpoints(sets[row["set"]])[row["method"]]
        assert row["accuracy"] == pytest.approx(want["accuracy"]), (row["set"], row["method"])
        assert row["cost"] == pytest.approx(want["cost"]), (row["set"], row["method"])

    # Fig. 2 counts every pair of the benchmark files
    by_domain = pd.read_csv(
        Path(result.results_dirs["04_reasoning_vs_instruct"]) / "delta_accuracy_by_domain.csv"
    )
    counts = by_domain.groupby("dataset")["n"].sum().to_dict()
    assert counts == {b: len(files[b]) for b in BENCHMARKS}
    timings = json.loads((Path(result.executed[0]).parents[1] / "timings.json").read_text())
    assert set(timings) == set(ALL)

"""A records folder (records_dir/<judge>/<set>.parquet + embeddings) read in place of simulation."""

import numpy as np
import pandas as pd
import pytest

from racer_lib.records import io as rio
from racer_lib.records import schema as rec
from racer_lib.records import sets, simulate

JUDGE = "qwen3-4b"
SIM = dict(seed=3, dim=8, scale=0.01)


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    """records/<judge>/{training_mix,judgebench}.parquet written by the simulator."""
    root = tmp_path_factory.mktemp("records")
    for name in ("training_mix", "judgebench"):
        simulate.write_simulated(root / JUDGE / f"{name}.parquet", JUDGE, name, **SIM)
    return root


@pytest.mark.parametrize("name", ["training_mix", "judgebench"])
def test_load_set_returns_what_the_simulator_draws(folder, name):
    records, emb = sets.load_set(folder, JUDGE, name)
    want, want_emb = simulate.simulate(JUDGE, name, **SIM)
    pd.testing.assert_frame_equal(records, want)
    np.testing.assert_array_equal(emb, want_emb)
    assert rec.provenance(records) == "simulated"


def test_judge_set_reads_the_folder_or_simulates(folder):
    read, read_emb = sets.judge_set(JUDGE, "judgebench", records_dir=folder, dim=999, scale=5.0)
    drawn, drawn_emb = sets.judge_set(JUDGE, "judgebench", **SIM)
    pd.testing.assert_frame_equal(read, drawn)  # dim and scale do not shape read records
    np.testing.assert_array_equal(read_emb, drawn_emb)
    records, emb = sets.judge_set(JUDGE, "judgebench", records_dir=str(folder), dim=0)
    assert emb is None and len(records) == len(drawn)


def test_judge_set_splits_simulated_records_anew_and_keeps_the_files_split(folder):
    """``split_shares`` cut simulated records by dataset with the seed (the same seed gives the
    same split, another seed another); records read from a folder keep their files' split."""
    own, _ = sets.judge_set(JUDGE, "training_mix", **SIM)
    cut, emb = sets.judge_set(JUDGE, "training_mix", split_shares=[0.2, 0.4, 0.4], **SIM)
    pd.testing.assert_frame_equal(cut.drop(columns="split"), own.drop(columns="split"))
    for name, share in zip(("train", "valid", "test"), (0.2, 0.4, 0.4)):
        for _, group in cut.groupby("dataset"):  # every dataset in the same proportions
            assert abs((group["split"] == name).sum() - share * len(group)) <= 1
    again, _ = sets.judge_set(JUDGE, "training_mix", split_shares=[0.2, 0.4, 0.4], **SIM)
    assert (again["split"] == cut["split"]).all()
    other, _ = sets.judge_set(
        JUDGE, "training_mix", split_shares=[0.2, 0.4, 0.4], **{**SIM, "seed": 4}
    )
    assert not np.array_equal(other["split"].to_numpy(), cut["split"].to_numpy())
    read, _ = sets.judge_set(
        JUDGE, "training_mix", records_dir=folder, split_shares=[0.2, 0.4, 0.4]
    )
    assert (read["split"] == own["split"]).all()


def test_missing_file_names_it_the_layout_and_the_folder(folder, monkeypatch):
    monkeypatch.chdir(folder)  # a folder outside the working folder's repository is not listed
    with pytest.raises(FileNotFoundError) as err:
        sets.load_set(folder, JUDGE, "rewardbench")
    text = str(err.value)
    assert str(folder / JUDGE / "rewardbench.parquet") in text
    assert "records_dir/<judge>/<set>.parquet" in text and "judgebench.parquet" in text
    with pytest.raises(FileNotFoundError, match=r"no records of judge 'qwen3-8b'.*qwen3-4b/"):
        sets.load_set(folder, "qwen3-8b", "training_mix")
    with pytest.raises(FileNotFoundError, match="no such records folder"):
        sets.load_set(folder / "nowhere", JUDGE, "training_mix")


def test_missing_embeddings_are_named(tmp_path):
    rio.write_records(
        simulate.simulate(JUDGE, "judgebench", dim=0, scale=0.01)[0],
        tmp_path / JUDGE / "judgebench.parquet",
    )
    assert sets.load_set(tmp_path, JUDGE, "judgebench", embeddings=False)[1] is None
    with pytest.raises(FileNotFoundError, match=r"judgebench\.embeddings\.parquet: no embeddings"):
        sets.load_set(tmp_path, JUDGE, "judgebench")


def test_embeddings_of_one_judge_must_share_dimension_and_embedder(tmp_path):
    judge_dir = tmp_path / JUDGE
    simulate.write_simulated(judge_dir / "training_mix.parquet", JUDGE, seed=0, dim=8, scale=0.01)
    simulate.write_simulated(
        judge_dir / "judgebench.parquet", JUDGE, "judgebench", dim=16, scale=0.01
    )
    with pytest.raises(rec.RecordsError) as err:
        sets.load_set(tmp_path, JUDGE, "judgebench")
    text = str(err.value)
    assert "judgebench.embeddings.parquet" in text and "training_mix.embeddings.parquet" in text
    assert "16 dimensions" in text and "has 8" in text

    # same width, another embedder
    records, emb = simulate.simulate(JUDGE, "judgebench", dim=8, scale=0.01)
    rio.write_embeddings(
        judge_dir / "judgebench.embeddings.parquet",
        [(records["id"].to_numpy(), emb)],
        embedder="another-encoder",
    )
    with pytest.raises(rec.RecordsError, match=r"embedder 'another-encoder', but .*training_mix"):
        sets.load_set(tmp_path, JUDGE, "judgebench")


def test_training_mix_needs_its_three_splits(tmp_path):
    records, _ = simulate.simulate(JUDGE, "training_mix", dim=0, scale=0.01)
    rio.write_records(records.assign(split="all"), tmp_path / JUDGE / "training_mix.parquet")
    with pytest.raises(rec.RecordsError, match=r"field 'split': no 'train', 'valid', 'test'"):
        sets.load_set(tmp_path, JUDGE, "training_mix", embeddings=False)


def test_one_judge_per_set(tmp_path):
    records, _ = simulate.simulate(JUDGE, "judgebench", dim=0, scale=0.01)
    records.loc[0, "judge"] = "qwen3-8b"
    rio.write_records(records, tmp_path / JUDGE / "judgebench.parquet")
    with pytest.raises(rec.RecordsError, match="records of several judges"):
        sets.load_set(tmp_path, JUDGE, "judgebench", embeddings=False)


def test_write_set_lays_out_the_splits_of_a_judge_merge(tmp_path):
    """One judge merge output per split, one embeddings file of the whole mixture's pairs."""
    records, emb = simulate.simulate(JUDGE, "training_mix", dim=8, scale=0.01)
    runs = tmp_path / "runs"
    parts = []
    for split in ("train", "valid", "test"):
        parts.append(
            rio.write_records(records[records["split"] == split], runs / f"{split}.parquet")
        )
    shared = rio.write_embeddings(
        runs / "pairs.embeddings.parquet",
        [(records["id"].to_numpy()[::-1], emb[::-1])],
        embedder="enc",
    )
    path = sets.write_set(tmp_path / "records", JUDGE, "training_mix", parts, embeddings=shared)
    assert path == tmp_path / "records" / JUDGE / "training_mix.parquet"
    got, got_emb = sets.load_set(tmp_path / "records", JUDGE, "training_mix")
    order = np.concatenate(
        [np.flatnonzero(records["split"] == s) for s in ("train", "valid", "test")]
    )
    np.testing.assert_array_equal(got["id"], records["id"].to_numpy()[order])
    np.testing.assert_array_equal(got_emb, emb[order])
    assert rio.read_embeddings(rio.embeddings_path(path)).embedder == "enc"

    with pytest.raises(rec.RecordsError, match="no embedding for record id"):
        sets.write_set(
            tmp_path / "records",
            JUDGE,
            "judgebench",
            [
                rio.write_records(
                    simulate.simulate(JUDGE, "judgebench", dim=0, scale=0.01)[0],
                    runs / "jb.parquet",
                )
            ],
            embeddings=shared,
        )


# ---------------------------------------------------------------------- Fig. 2 and self-routing


def test_set_of_pools_the_mixtures_datasets():
    assert sets.set_of("skywork") == sets.set_of("math_step_dpo") == sets.MIX
    assert sets.set_of("judgebench") == "judgebench"
    assert set(sets.MIX_DATASETS) == {k[0] for k in simulate.RECIPES[sets.MIX]}


def test_benchmark_records_simulate_each_judge_or_read_the_files(tmp_path):
    sim = sets.benchmark_records(["qwen3-4b", "qwen3-8b"], ["judgebench"], seed=2, scale=0.1)
    expected = simulate.simulate("qwen3-8b", ["judgebench"], seed=2, dim=0, scale=0.1)[0]
    assert list(sim["judge"].unique()) == ["qwen3-4b", "qwen3-8b"]
    pd.testing.assert_frame_equal(sim[sim["judge"] == "qwen3-8b"].reset_index(drop=True), expected)
    paths = []
    for name in ("judgebench", "rewardbench"):
        paths.append(
            simulate.write_simulated(
                tmp_path / f"{name}.parquet", JUDGE, name, seed=1, dim=0, scale=0.05
            )[0]
        )
    read = sets.benchmark_records(["ignored"], ["judgebench"], records_paths=paths)
    assert set(read["dataset"]) == {"judgebench"} and set(read["judge"]) == {JUDGE}
    assert len(read) == len(rio.read_records(paths[0]))


def test_self_routing_records_add_the_set_and_the_decision():
    records = sets.self_routing_records(
        ["qwen3-4b"], ["judgebench"], seed=0, scale=0.01, benchmark_scale=0.2
    )
    assert list(records["set"].unique()) == [sets.MIX, "judgebench"]
    yes = records["self_route"] == "yes"
    assert (records.loc[yes, "reason"] == 1).all() and (records.loc[~yes, "reason"] == 0).all()


def test_self_routing_records_read_files_and_leave_out_unlisted_sets(tmp_path, capsys):
    paths = []
    for name, scale in (("training_mix", 0.01), ("judgebench", 0.2), ("rewardbench", 0.05)):
        recs, _ = simulate.simulate(JUDGE, name, seed=1, dim=0, scale=scale)
        recs["self_route"] = "unparseable"
        paths.append(rio.write_records(recs, tmp_path / f"{name}.parquet"))
    records = sets.self_routing_records(
        [], ["judgebench"], unparseable="instruct", records_paths=paths
    )
    left_out = len(rio.read_records(paths[2]))
    assert f"left out {left_out:,} records of sets not listed: rewardbench" in (
        capsys.readouterr().out
    )
    assert set(records["set"]) == {sets.MIX, "judgebench"}
    assert (records["reason"] == 0).all()  # unparseable answers go to instruct
    assert list(records.index) == list(range(len(records)))


def test_self_routing_records_need_an_answer_for_every_pair():
    with pytest.raises(rec.RecordsError, match="no self-routing decision"):
        sets.self_routing_records(["llama-3.1-8b"], [], scale=0.01)


@pytest.fixture
def repo(tmp_path, monkeypatch):
    """A repository root (notebooks/ and profiles/) as the working folder, and beside it a
    folder ``etc`` outside the repository holding files no message may name."""
    root = tmp_path / "repo"
    for sub in ("notebooks", "profiles", "records/qwen3-4b"):
        (root / sub).mkdir(parents=True)
    (root / "records" / "qwen3-4b" / "judgebench.parquet").write_bytes(b"")
    outside = tmp_path / "etc"
    (outside / "qwen3-4b").mkdir(parents=True)
    for name in ("passwd", "shadow", "qwen3-4b/secret.key"):
        (outside / name).write_text("private\n")
    (root / "linked").symlink_to(outside)  # inside by its name, outside where it leads
    monkeypatch.chdir(root)
    return root


@pytest.mark.parametrize("records_dir", ["../etc", "linked", "{tmp}/etc", "notebooks/../../etc"])
@pytest.mark.parametrize("judge", ["qwen3-8b", "qwen3-4b"])
def test_a_records_dir_outside_the_repository_is_never_listed(repo, records_dir, judge):
    records_dir = records_dir.format(tmp=repo.parent)
    with pytest.raises(FileNotFoundError) as err:
        sets.judge_set(judge, "training_mix", records_dir=records_dir)
    text = str(err.value)
    for private in ("passwd", "shadow", "secret.key"):
        assert private not in text, text
    assert "(outside the repository: not listed)" in text


def test_a_records_dir_inside_the_repository_is_listed_from_any_subfolder(repo, monkeypatch):
    monkeypatch.chdir(repo / "notebooks")
    with pytest.raises(FileNotFoundError, match=r"holds judgebench\.parquet;"):
        sets.judge_set(JUDGE, "training_mix", records_dir="../records")
    with pytest.raises(FileNotFoundError, match=r"holds qwen3-4b/;"):
        sets.judge_set("qwen3-8b", "training_mix", records_dir=repo / "records")

"""Judge records: schema, IO, embeddings beside the records, cost unit, and every bad input."""

import re

import numpy as np
import pandas as pd
import pytest

from racer_lib.records import io as rio
from racer_lib.records import schema as rec
from racer_lib.records.simulate import simulate


@pytest.fixture(scope="module")
def sim():
    records, emb = simulate("qwen3-4b", "judgebench", seed=3, dim=8, scale=0.1)
    return records, emb


def _write_parquet(df, path):
    """Write raw (unvalidated) records, as a third party's file would be."""
    df.to_parquet(path, index=False)
    return path


def test_round_trip_parquet_and_csv(sim, tmp_path):
    records, _ = sim
    for name in ["r.parquet", "r.csv"]:
        path = rio.write_records(records, tmp_path / name)
        back = rio.read_records(path)
        pd.testing.assert_frame_equal(back, records, check_dtype=False)
        assert back["label"].isin([0, 1]).all()


def test_embeddings_beside_records_keyed_by_id(sim, tmp_path):
    records, emb = sim
    path = rio.write_records(records, tmp_path / "r.parquet")
    epath = rio.embeddings_path(path)
    assert epath.name == "r.embeddings.parquet"
    # Written in two chunks and in reversed order: alignment goes by id, not by position.
    order = np.arange(len(records))[::-1]
    half = len(order) // 2
    rio.write_embeddings(
        epath,
        [
            (records["id"].to_numpy()[order[:half]], emb[order[:half]]),
            (records["id"].to_numpy()[order[half:]], emb[order[half:]]),
        ],
        embedder="test-8d",
    )
    loaded, matrix = rio.load(path)
    np.testing.assert_array_equal(matrix, emb)
    assert rio.read_embeddings(epath).embedder == "test-8d"


def _bad(records, path, row, field, value):
    """Records with one value replaced, written without validation."""
    df = records.copy()
    df[field] = df[field].astype(object)
    df.loc[row, field] = value
    return _write_parquet(df, path)


def _raises(path, *pieces):
    with pytest.raises(rec.RecordsError) as err:
        rio.read_records(path)
    message = str(err.value)
    for piece in [str(path), *pieces]:
        assert piece in message, message
    return err.value


def test_missing_column_names_file_and_field(sim, tmp_path):
    records, _ = sim
    path = _write_parquet(records.drop(columns=["tokens_reasoning"]), tmp_path / "m.parquet")
    err = _raises(path, "field 'tokens_reasoning'", "missing column")
    assert err.field == "tokens_reasoning"


def test_label_outside_0_1(sim, tmp_path):
    records, _ = sim
    path = _bad(records, tmp_path / "l.parquet", 5, "label", 2)
    err = _raises(path, "row 5", f"id {records['id'][5]!r}", "field 'label'", "2 is not a label")
    assert err.row == 5


@pytest.mark.parametrize(
    "value, words", [(-3, "negative token count"), (None, "missing or non-numeric token count")]
)
def test_negative_or_missing_tokens(sim, tmp_path, value, words):
    records, _ = sim
    path = _bad(records, tmp_path / "t.parquet", 7, "tokens_instruct", value)
    _raises(path, "row 7", "field 'tokens_instruct'", words)


@pytest.mark.parametrize(
    "value, words",
    [
        ("1e30", "token count 1e+30 is out of range (at most 2**53"),
        ("inf", "token count inf is not finite"),
        ("-inf", "token count -inf is not finite"),
    ],
)
def test_huge_or_infinite_tokens_in_csv(sim, tmp_path, value, words):
    """1e30 once overflowed to a negative int64 after the ``< 0`` check (and validated, with a
    negative cost ratio); ``inf`` failed in the int cast with no file, row or field."""
    records, _ = sim
    path = tmp_path / "t.csv"
    df = records.copy()
    df["tokens_reasoning"] = df["tokens_reasoning"].astype(object)
    df.loc[3, "tokens_reasoning"] = value
    df.to_csv(path, index=False)
    err = _raises(path, f"row 3 (id {records['id'][3]!r})", "field 'tokens_reasoning'", words)
    assert (err.row, err.field) == (3, "tokens_reasoning")


def test_zero_row_records_file_refused(sim, tmp_path):
    records, _ = sim
    for name in ["z.csv", "z.parquet"]:
        path = tmp_path / name
        if name.endswith(".csv"):
            records.iloc[:0].to_csv(path, index=False)
        else:
            _write_parquet(records.iloc[:0], path)
        _raises(path, "field 'id'", "no records: the file has a header but no rows")


def test_misspelled_optional_column_did_you_mean(sim, tmp_path):
    records, _ = sim
    df = records.drop(columns=["self_route"]).assign(self_routing="yes")
    path = _write_parquet(df, tmp_path / "s.parquet")
    _raises(path, "field 'self_routing'", "unknown column; did you mean 'self_route'?")
    # Other extra columns (a pair id, the tokenizer) are still allowed.
    ok = _write_parquet(
        records.assign(pair_id=records["id"], tokenizer="t"), tmp_path / "ok.parquet"
    )
    assert len(rio.read_records(ok)) == len(records)


def _list_embeddings(path, ids, vectors):
    import pyarrow as pa
    import pyarrow.parquet as pq

    pq.write_table(
        pa.table({"id": list(ids), "embedding": pa.array(vectors, pa.list_(pa.float32()))}), path
    )
    return path


def test_list_embeddings_of_variable_length(sim, tmp_path):
    """A list-typed (not fixed-size) embedding column once raised an AttributeError."""
    records, emb = sim
    ids = records["id"].tolist()
    path = tmp_path / "v.embeddings.parquet"
    vectors = [list(map(float, v)) for v in emb]
    _list_embeddings(path, ids, vectors)  # one length throughout: read as a matrix
    np.testing.assert_array_equal(rio.read_embeddings(path).matrix, emb.astype(np.float32))
    vectors[6] = vectors[6][:5]
    _list_embeddings(path, ids, vectors)
    with pytest.raises(
        rec.RecordsError,
        match=re.escape(
            f"{path}: row 6 (id {ids[6]!r}), field 'embedding': 5 values, but row 0 has 8"
        ),
    ):
        rio.read_embeddings(path)
    vectors[6] = None
    _list_embeddings(path, ids, vectors)
    with pytest.raises(rec.RecordsError, match=r"row 6 .*field 'embedding': missing embedding"):
        rio.read_embeddings(path)


def test_duplicate_id_names_both_rows(sim, tmp_path):
    records, _ = sim
    path = _bad(records, tmp_path / "d.parquet", 9, "id", records["id"][2])
    _raises(path, "row 9", "field 'id'", "duplicate id, first seen at row 2")


def test_a_duplicate_id_of_nul_characters_names_both_rows(sim, tmp_path):
    # found by the fuzzer: numpy's scalar of "\x00" is "", so the first row was not found
    records, _ = sim
    records = records.assign(id=records["id"].where(records.index != 3, "\x00"))
    path = _bad(records, tmp_path / "n.parquet", 7, "id", "\x00")
    _raises(path, "row 7", "field 'id'", "duplicate id, first seen at row 3")


def test_correct_must_agree_with_verdict(sim, tmp_path):
    records, _ = sim
    row = int(np.flatnonzero(records["correct_reasoning"].to_numpy())[0])
    path = _bad(records, tmp_path / "c.parquet", row, "correct_reasoning", False)
    _raises(path, f"row {row}", "field 'correct_reasoning'", "disagrees with verdict_reasoning")


def test_nan_in_embedding(sim, tmp_path):
    records, emb = sim
    bad = emb.copy()
    bad[4, 6] = np.nan
    path = tmp_path / "e.embeddings.parquet"
    with pytest.raises(
        rec.RecordsError,
        match=re.escape(
            f"{path}: row 4 (id {records['id'][4]!r}), field 'embedding': nan at dimension 6"
        ),
    ):
        rio.write_embeddings(path, [(records["id"], bad)], embedder="x")
    assert not path.exists()  # nothing half-written
    # A file written by someone else with a NaN is caught on reading too.
    import pyarrow as pa
    import pyarrow.parquet as pq

    values = pa.FixedSizeListArray.from_arrays(pa.array(bad.reshape(-1)), bad.shape[1])
    pq.write_table(pa.table({"id": records["id"].tolist(), "embedding": values}), path)
    with pytest.raises(rec.RecordsError, match="row 4 .*field 'embedding': nan at dimension 6"):
        rio.read_embeddings(path)


def test_embedding_ids_must_match_records(sim, tmp_path):
    records, emb = sim
    path = rio.write_records(records, tmp_path / "r.parquet")
    epath = rio.embeddings_path(path)
    ids = records["id"].to_numpy().copy()
    ids[3] = "someone-else"
    rio.write_embeddings(epath, [(ids, emb)], embedder="x")
    with pytest.raises(rec.RecordsError) as err:
        rio.load(path)
    assert f"{path}: row 3 (id {records['id'][3]!r}), field 'id': no embedding for this id" in str(
        err.value
    )
    # An extra embedding (records are a subset) names the embeddings file and its row.
    rio.write_embeddings(epath, [(records["id"], emb)], embedder="x")
    with pytest.raises(rec.RecordsError, match=re.escape(f"{epath}: row 0")):
        rio.align_embeddings(records.iloc[1:], rio.read_embeddings(epath), epath, path)


def test_cost_unit_and_realized_cost_ratio(sim):
    records, _ = sim
    unit = rec.CostUnit.from_records(records)
    c = unit.cost(records)
    assert c[:, 0].mean() == pytest.approx(1.0)  # All-Instruct costs 1 on its own training set
    t = rec.token_matrix(records)
    assert rec.realized_cost_ratio(records, 0.0) == pytest.approx(1.0)
    assert rec.realized_cost_ratio(records, 1.0) == pytest.approx(t[:, 1].sum() / t[:, 0].sum())
    # Per-pair decisions: reasoning on the first half only.
    p = np.zeros(len(records))
    p[: len(p) // 2] = 1
    expected = (t[: len(p) // 2, 1].sum() + t[len(p) // 2 :, 0].sum()) / t[:, 0].sum()
    assert rec.realized_cost_ratio(records, p) == pytest.approx(expected)
    # On another set, the ratio is against that set's own instruct tokens, not the unit.
    other = records.assign(tokens_instruct=records["tokens_instruct"] * 2)
    assert rec.realized_cost_ratio(other, 0.0) == pytest.approx(1.0)


def test_infeasible_budget(sim):
    records, _ = sim
    unit = rec.CostUnit.from_records(records)
    cheapest = rec.check_budget(2.0, records, unit, file="train.parquet")
    assert 0 < cheapest <= 1.0 + 1e-12
    with pytest.raises(rec.RecordsError) as err:
        rec.check_budget(0.5, records, unit, file="train.parquet")
    assert "train.parquet: field 'budget': budget C = 0.5 is infeasible: at or below" in str(
        err.value
    )
    assert f"{cheapest:.4f}" in str(err.value)
    with pytest.raises(rec.RecordsError, match="at or below the cheapest"):
        rec.check_budget(cheapest, records, unit)  # exactly the cheapest cost: infeasible too


def test_provenance(sim):
    records, _ = sim
    assert rec.provenance(records) == "simulated"
    assert rec.provenance(records.assign(source="release:llmbar")) == "release"
    mixed = pd.concat([records, records.assign(source="generated:vllm:Qwen/Qwen3-4B")])
    assert rec.provenance(mixed) == "mixed"
    with pytest.raises(ValueError, match="unknown record source"):
        rec.provenance(records.assign(source="somewhere"))


# ---------------------------------------------------------------------- self-routing decisions


def test_self_route_round_trips_with_missing_values(sim, tmp_path):
    records, _ = sim
    df = records.copy()
    df["self_route"] = ["yes", "no", "unparseable", None] * (len(df) // 4) + [None] * (len(df) % 4)
    for name in ["r.parquet", "r.csv"]:
        back = rio.read_records(rio.write_records(df, tmp_path / name))
        assert back["self_route"].iloc[:4].tolist()[:3] == ["yes", "no", "unparseable"]
        assert pd.isna(back["self_route"].iloc[3])


def test_bad_self_route_names_row_and_field(sim, tmp_path):
    records, _ = sim
    df = records.copy()
    df["self_route"] = "no"
    df.loc[5, "self_route"] = "Maybe"
    path = _write_parquet(df, tmp_path / "bad.parquet")
    with pytest.raises(
        rec.RecordsError,
        match=re.escape(
            f"bad.parquet: row 5 (id '{df['id'].iloc[5]}'), field 'self_route': 'Maybe' is "
            "not a self-routing decision"
        ),
    ):
        rio.read_records(path)


def test_self_route_decisions(sim):
    records, _ = sim
    df = records.iloc[:3].copy()
    df["self_route"] = ["yes", "no", "unparseable"]
    np.testing.assert_array_equal(rec.self_route_decisions(df), [1, 0, 1])
    np.testing.assert_array_equal(rec.self_route_decisions(df, unparseable="instruct"), [1, 0, 0])
    df.loc[df.index[1], "self_route"] = None
    with pytest.raises(rec.RecordsError, match="row 1 .*no self-routing decision"):
        rec.self_route_decisions(df, file="mine.parquet")
    with pytest.raises(rec.RecordsError, match="no self-routing decisions"):
        rec.self_route_decisions(records.drop(columns="self_route"))


def test_written_records_get_the_usual_file_mode(tmp_path):
    import os
    import stat

    from racer_lib.records.io import _umask

    records, _ = simulate("qwen3-4b", "judgebench", dim=4, scale=0.02)
    for name in ("r.parquet", "r.csv"):
        path = tmp_path / name
        rio.write_records(records, path)
        assert stat.S_IMODE(os.stat(path).st_mode) == 0o666 & ~_umask(), name


# ----------------------------------------------------------------------------------------
# Files that are not records, and column names that only look right: one line each


@pytest.mark.parametrize(
    ("name", "content"),
    [
        ("x.jsonl", b'{"id": "a", "label": 1}\n'),
        ("x.json", b'[{"id": "a"}]'),
        ("x", b"id,label\na,1\n"),
        ("x.parquet", b'{"id": "a", "label": 1}\n'),  # not parquet inside
        ("x.csv", b"id,label\n\xff\xfe,1\n"),  # not UTF-8
    ],
)
def test_racer_records_validate_refuses_what_is_not_a_records_file_in_one_line(
    tmp_path, capsys, name, content
):
    from racer_lib import cli

    path = tmp_path / name
    path.write_bytes(content)
    assert cli.main(["records", "validate", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith(f"error: {path}: "), err
    assert ".parquet" in err and ".csv" in err  # the supported formats


def test_writing_records_under_another_suffix_is_refused(sim, tmp_path):
    records, _ = sim
    with pytest.raises(rec.RacerError, match=r"x\.jsonl: .*\.parquet or \.csv"):
        rio.write_records(records, tmp_path / "x.jsonl")
    assert not (tmp_path / "x.jsonl").exists()


CYRILLIC_I = "\u0456"  # і, CYRILLIC SMALL LETTER BYELORUSSIAN-UKRAINIAN I
ZERO_WIDTH = "\u200b"  # ZERO WIDTH SPACE


@pytest.mark.parametrize(
    ("column", "odd", "says"),
    [
        (f"{CYRILLIC_I}d", "id", f"'{CYRILLIC_I}d' (Cyrillic {CYRILLIC_I}) looks like 'id'"),
        ("sp\u200blit", "split", "'sp\\u200blit' (zero-width space) looks like 'split'"),
        ("l\u0430bel", "label", "'l\u0430bel' (Cyrillic \u0430) looks like 'label'"),
        ("t\u03bfkens_instruct", "tokens_instruct", "(Greek \u03bf) looks like 'tokens_instruct'"),
        ("\uff4audge", "judge", "'\uff4audge' (fullwidth \uff4a) looks like 'judge'"),
    ],
)
def test_a_look_alike_column_is_named_as_such(sim, tmp_path, column, odd, says):
    records, _ = sim
    path = _write_parquet(records.rename(columns={odd: column}), tmp_path / "odd.parquet")
    err = _raises(path, f"field '{odd}'", "missing column", says)
    assert "U+" in str(err)  # the odd character by its code point and Unicode name


def test_a_look_alike_of_an_optional_column_is_named(sim, tmp_path):
    records, _ = sim
    odd = "self_r\u043eute"  # Cyrillic о
    renamed = records.rename(columns={"self_route": odd}).assign(**{odd: "yes"})
    path = _write_parquet(renamed, tmp_path / "odd.parquet")
    _raises(path, f"'{odd}' (Cyrillic \u043e) looks like 'self_route'")


def test_a_look_alike_embeddings_column_is_named(sim, tmp_path):
    records, emb = sim
    path = rio.write_records(records, tmp_path / "r.parquet")
    epath = rio.write_embeddings(
        rio.embeddings_path(path), [(records["id"].to_numpy(), emb)], embedder="e"
    )
    import pyarrow.parquet as pq

    table = pq.read_table(epath)
    pq.write_table(table.rename_columns([f"{CYRILLIC_I}d", "embedding"]), epath)
    with pytest.raises(rec.RecordsError, match=f"'{CYRILLIC_I}d' \\(Cyrillic {CYRILLIC_I}\\)"):
        rio.read_embeddings(epath)


def test_a_look_alike_pairs_column_is_named():
    from racer_lib.records.pairs import validate_pairs

    pairs = pd.DataFrame(
        {"id": ["a"], "prompt": ["p"], "response_a": ["x"], "respon\u0455e_b": ["y"], "label": [1]}
    )
    with pytest.raises(
        rec.RecordsError, match="'respon\u0455e_b' \\(Cyrillic \u0455\\) looks like"
    ):
        validate_pairs(pairs, "pairs.jsonl")

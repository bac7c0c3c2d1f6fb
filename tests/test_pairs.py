"""Preference pairs (racer_lib.records.pairs): the one schema, validator and reader that judging,
embedding
and the data module share; the shortest-pairs sample of chapter 02."""

import warnings

import numpy as np
import pandas as pd
import pytest

from racer_lib.errors import ConfigError, InputError, MissingFileError, RacerError
from racer_lib.records import pairs
from racer_lib.records.schema import RecordsError


def frame(n=3, **columns):
    base = {
        "id": [f"p{i}" for i in range(n)],
        "prompt": [f"q{i}" for i in range(n)],
        "response_a": [f"a{i}" for i in range(n)],
        "response_b": [f"b{i}" for i in range(n)],
        "label": [i % 2 for i in range(n)],
    }
    return pd.DataFrame(base | columns)


def test_labelled_pairs_get_every_column_with_defaults():
    out = pairs.validate_pairs(frame(extra=[1, 2, 3]))
    assert list(out.columns) == pairs.PAIR_COLUMNS
    assert (out["dataset"] == "pairs").all() and (out["subset"] == "all").all()
    assert out["label"].dtype == np.int8 and out["label"].tolist() == [0, 1, 0]
    numeric = pairs.validate_pairs(frame().assign(id=[7, 8, 9]))
    assert numeric["id"].tolist() == ["7", "8", "9"]


def test_pairs_to_embed_need_no_label():
    out = pairs.validate_pairs(frame().drop(columns="label"), labelled=False)
    assert list(out.columns) == ["id", *pairs.TEXT_FIELDS]
    with pytest.raises(RecordsError, match="field 'label': missing column"):
        pairs.validate_pairs(frame().drop(columns="label"))


@pytest.mark.parametrize(
    "change, field, problem",
    [
        (dict(id=["p0", None, "p2"]), "id", r"row 1, field 'id': missing id"),
        (dict(id=["p0", "", "p2"]), "id", r"row 1 \(id ''\), field 'id': empty id"),
        (
            dict(id=["p0", "p1", "p0"]),
            "id",
            r"row 2 \(id 'p0'\), field 'id': duplicate id, first seen at row 0",
        ),
        (
            dict(prompt=["q", None, None]),
            "prompt",
            r"row 1 \(id 'p1'\), field 'prompt': missing text \(null\).*\(and 1 more row\)",
        ),
        (
            dict(response_b=["b", 42, "c"]),
            "response_b",
            r"row 1 \(id 'p1'\), field 'response_b': 42 \(int\) is not a text",
        ),
        (dict(label=[1, 2, 0]), "label", r"row 1 \(id 'p1'\), field 'label': 2 is not a label"),
    ],
)
def test_every_check_names_file_row_and_field(change, field, problem):
    with pytest.raises(RecordsError, match="pairs.csv: " + problem) as info:
        pairs.validate_pairs(frame(**change), "pairs.csv")
    assert info.value.field == field and isinstance(info.value, RacerError)


def test_an_empty_text_is_a_warning_not_an_error():
    with pytest.warns(
        pairs.EmptyTextWarning,
        match=r"row 1 \(id 'p1'\), field 'response_a': "
        r"empty text; .* \(and 1 more row\)",
    ):
        out = pairs.validate_pairs(frame(response_a=["a", "", "  "]), "x.csv", labelled=False)
    assert out["response_a"].tolist() == ["a", "", "  "]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        pairs.validate_pairs(frame())  # no empty text: no warning


@pytest.mark.parametrize("suffix", [".parquet", ".csv", ".jsonl", ".jsonl.gz"])
def test_read_pairs_reads_every_format(tmp_path, suffix):
    path = tmp_path / f"pairs{suffix}"
    data = frame().assign(response_b=["b0", "", "b2"])
    if suffix == ".parquet":
        data.to_parquet(path)
    elif suffix == ".csv":
        data.to_csv(path, index=False)
    else:
        data.to_json(path, orient="records", lines=True)
    back = pairs.read_pairs(path)
    assert back["response_b"].tolist() == ["b0", "", "b2"]  # an empty CSV field is a text
    assert back["id"].tolist() == ["p0", "p1", "p2"]


def test_read_pairs_errors(tmp_path):
    with pytest.raises(MissingFileError, match="nope.csv: no such pairs file"):
        pairs.read_pairs(tmp_path / "nope.csv")
    (tmp_path / "p.txt").write_text("x")
    with pytest.raises(InputError, match="unknown pairs format '.txt'"):
        pairs.read_pairs(tmp_path / "p.txt")


def test_load_pairs_from_a_file(tmp_path):
    frame(4).to_csv(tmp_path / "mix.train.csv", index=False)
    loaded = pairs.load_pairs(tmp_path / "mix.train.csv", limit=2)
    assert loaded["id"].tolist() == ["p0", "p1"] and set(loaded["dataset"]) == {"mix"}
    with pytest.raises(MissingFileError, match="or use judgebench / llmbar"):
        pairs.load_pairs(tmp_path / "none.csv")


def test_dataset_names():
    assert pairs.dataset_tag("judgebench") == "judgebench"
    assert pairs.dataset_tag("runs/mix.train.parquet") == "mix"
    assert pairs.dataset_ref("llmbar") == "llmbar"
    ref = pairs.dataset_ref("some/pairs.csv")
    assert ref.endswith("some/pairs.csv") and ref.startswith("/")


def test_shortest_pairs_are_sorted_by_length_then_id():
    data = frame(
        4, prompt=["long question", "q", "q", "qq"], response_a=["a"] * 4, response_b=["b"] * 4
    ).assign(id=["d", "c", "b", "a"])
    sample = pairs.shortest(data, 3)
    assert sample["id"].tolist() == ["b", "c", "a"] and sample["n_chars"].tolist() == [3, 3, 4]
    assert (
        pairs.describe_sample(sample.assign(domain=["math", "math", "code"]), data, "toy")
        == "3 of 4 toy pairs, 3 to 4 characters; domains: math 2, code 1"
    )
    for n in (0, 5):
        with pytest.raises(ConfigError, match="n_pairs must be between 1 and 4"):
            pairs.shortest(data, n)

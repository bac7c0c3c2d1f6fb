"""Property-based tests of every reader a user hands a file to: whatever bytes lie in a file with
the reader's suffix, it gives a valid result (a record set, a pairs table, judge records, a
router) or a :class:`~racer_lib.errors.RacerError` of one line naming the file, never another
exception (which ``racer`` would print as a traceback).

The bytes are random, or near misses of a valid file: a valid table or JSON document with cells
and fields replaced by values of the wrong type, missing or renamed columns and fields, huge
numbers, NaN and infinities, empty files, a byte order mark, bytes that are not UTF-8 in the
middle, a truncated or flipped byte. How many examples per reader: the hypothesis profile of
tests/conftest.py (a few thousand in CI, a few hundred in ``make test``).
"""

import copy
import csv
import dataclasses
import gzip
import io
import json
import pickle
import warnings
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import torch
from hypothesis import example, given
from hypothesis import strategies as st

from racer_lib.errors import RacerError
from racer_lib.judging import outputs
from racer_lib.records import io as rio
from racer_lib.records import llmbar, pairs
from racer_lib.records import schema as rec
from racer_lib.records.simulate import simulate
from racer_lib.routing.policy import Router, init_layers, seal

# ----------------------------------------------------------------------------------------
# What every reader must do


def outcome(read, path):
    """``read(path)``, or None where it raised a :class:`RacerError`: then its message is one
    line of UTF-8 text and names the file. Any other exception fails the test (with its
    traceback)."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", pairs.EmptyTextWarning)
            return read(path)
    except RacerError as exc:
        message = str(exc)
        assert "\n" not in message and "\r" not in message, message
        assert str(path) in message, message
        message.encode("utf-8")  # printable: no lone surrogate
        return None


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    """One folder for the module's files: each example overwrites its reader's file."""
    return tmp_path_factory.mktemp("fuzz")


# ----------------------------------------------------------------------------------------
# Bytes: random, or a valid file's bytes with a few edits

#: Byte runs a near miss inserts: not UTF-8 (a lone continuation byte, a cut sequence, an
#: overlong form, a surrogate), a byte order mark, a NUL, delimiters and quotes.
ODD_BYTES = [
    b"\xff",
    b"\x80",
    b"\xc3",
    b"\xe2\x82",
    b"\xc0\xaf",
    b"\xed\xa0\x80",
    b"\xef\xbb\xbf",
    b"\x00",
    b"\n",
    b"\r",
    b'"',
    b",",
    b"{",
    b"]",
]


@st.composite
def edited(draw, data: bytes) -> bytes:
    """``data`` with up to three edits: cut at a byte, an odd byte run inserted, a byte
    flipped, a byte order mark in front."""
    for _ in range(draw(st.integers(0, 3))):
        at = draw(st.integers(0, len(data)))
        kind = draw(st.sampled_from(["cut", "insert", "flip", "bom"]))
        if kind == "cut":
            data = data[:at]
        elif kind == "insert":
            data = data[:at] + draw(st.sampled_from(ODD_BYTES) | st.binary(max_size=4)) + data[at:]
        elif kind == "flip" and at < len(data):
            data = data[:at] + bytes([data[at] ^ draw(st.integers(1, 255))]) + data[at + 1 :]
        elif kind == "bom":
            data = b"\xef\xbb\xbf" + data
    return data


def file_bytes(structured: st.SearchStrategy) -> st.SearchStrategy:
    """Random bytes, or a structured file's bytes edited (:func:`edited`)."""
    return st.one_of(
        st.binary(max_size=400),
        structured.flatmap(edited),
    )


# ----------------------------------------------------------------------------------------
# Tables (records and pairs) with wrong cells, columns and types

#: Cell texts a CSV near miss holds: values of every column's kind, and odd ones.
CELL_TEXTS = [
    "",
    "A",
    "B",
    "unparseable",
    "0",
    "1",
    "2",
    "-1",
    "1.5",
    "True",
    "false",
    "yes",
    "nan",
    "NaN",
    "inf",
    "-inf",
    "1e400",
    "9007199254740993",
    "99999999999999999999999999",
    "0x10",
    "train",
    '"',
    ",",
    "a\nb",
    "\ufeffid",
    "\x00",
    "іd",
]
NUMBERS = st.one_of(
    st.integers(min_value=-(2**63), max_value=2**63 - 1),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from([0, 1, 2, -1, 2**53 + 1, 1e300, float("nan"), float("inf")]),
)
SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    NUMBERS,
    st.integers(min_value=-(2**80), max_value=2**80),
    st.sampled_from(CELL_TEXTS),
    st.text(max_size=6),
)
JSON_VALUES = st.recursive(
    SCALARS,
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3)
    ),
    max_leaves=6,
)


def column_values(n: int) -> st.SearchStrategy:
    """``n`` values of one kind (a column of a parquet file has one type), or of any kind."""
    of = {
        "int": st.one_of(st.none(), st.integers(min_value=-(2**63), max_value=2**63 - 1)),
        "float": st.one_of(st.none(), NUMBERS.map(float)),
        "bool": st.one_of(st.none(), st.booleans()),
        "text": st.one_of(st.none(), st.sampled_from(CELL_TEXTS), st.text(max_size=6)),
        "bytes": st.binary(max_size=4),
        "list": st.lists(st.integers(-3, 3), max_size=3),
        "struct": st.fixed_dictionaries({"a": st.integers(-3, 3)}),
        "null": st.none(),
        "any": JSON_VALUES,
    }
    return st.sampled_from(sorted(of)).flatmap(
        lambda kind: st.lists(of[kind], min_size=n, max_size=n).map(lambda v: (kind, v))
    )


@st.composite
def tables(draw, base: pd.DataFrame):
    """A table as ``(names, columns, kinds, metadata)``: ``base`` (a valid one) with up to four
    edits: a cell or a whole column replaced (any type; ``kinds`` says a column's), a column
    dropped, renamed or repeated, a row dropped or repeated; sometimes with odd pandas metadata
    (for parquet)."""
    names = [str(c) for c in base.columns]
    columns = [[_cell(v) for v in base[c].tolist()] for c in base.columns]
    kinds = ["base"] * len(names)
    for _ in range(draw(st.integers(0, 4))):
        if not names:
            break
        edit = draw(st.sampled_from(["cell", "column", "drop", "rename", "repeat", "row-", "row+"]))
        n = len(columns[0])
        i = draw(st.integers(0, len(names) - 1))
        if edit == "cell" and n:
            columns[i][draw(st.integers(0, n - 1))] = draw(SCALARS)
            kinds[i] = "any"
        elif edit == "column":
            kinds[i], columns[i] = draw(column_values(n))
        elif edit == "drop":
            del names[i], columns[i], kinds[i]
        elif edit == "rename":
            names[i] = draw(st.sampled_from([*CELL_TEXTS, names[i].upper(), names[i] + " "]))
        elif edit == "repeat":
            names.append(names[i])
            columns.append(list(columns[i]))
            kinds.append(kinds[i])
        elif edit == "row-" and n:
            r = draw(st.integers(0, n - 1))
            for col in columns:
                del col[r]
        elif edit == "row+" and n:
            r = draw(st.integers(0, n - 1))
            for col in columns:
                col.append(col[r])
    metadata = draw(
        st.one_of(
            st.none(),
            st.sampled_from([b"", b"{", b"[]", b'{"columns": 3}', b'{"index_columns": [1]}']),
        )
    )
    return names, columns, kinds, metadata


def _text(value) -> str:
    """A cell as CSV text: a text as it is, nothing for None, anything else as JSON."""
    if value is None:
        return ""
    return value if isinstance(value, str) else json.dumps(value, default=repr)


def as_csv(table) -> bytes:
    names, columns, _, _ = table
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(names)
    for row in zip(*columns):
        writer.writerow([_text(v) for v in row])
    return out.getvalue().encode("utf-8", "surrogatepass")


def as_jsonl(table) -> bytes:
    names, columns, _, _ = table
    lines = [json.dumps(dict(zip(names, row)), default=repr) for row in zip(*columns)]
    return "\n".join(lines).encode("utf-8", "surrogatepass")


def _array(kind: str, values: list) -> pa.Array:
    """``values`` as an Arrow column: of their one type, else as JSON texts."""
    try:
        return pa.array(values) if kind != "any" else pa.array([_text(v) for v in values])
    except (pa.ArrowException, TypeError, ValueError, OverflowError):
        return pa.array([_text(v) for v in values])


def as_parquet(table) -> bytes:
    names, columns, kinds, metadata = table
    arrays = [_array(k, v) for k, v in zip(kinds, columns)]
    data = pa.Table.from_arrays(arrays, names=names) if names else pa.table({})
    if metadata is not None:
        data = data.replace_schema_metadata({b"pandas": metadata})
    out = io.BytesIO()
    pq.write_table(data, out)
    return out.getvalue()


BASE_RECORDS = simulate("qwen3-4b", "judgebench", dim=0, scale=0.01)[0].head(3).astype(object)
BASE_PAIRS = pd.DataFrame(
    {
        "id": ["p0", "p1", "p2"],
        "dataset": ["mix"] * 3,
        "subset": ["s"] * 3,
        "domain": ["math"] * 3,
        "prompt": ["What is 2 + 2?", "Name a colour.", ""],
        "response_a": ["4", "red", "x"],
        "response_b": ["5", "loud", "y"],
        "label": [1, 1, 0],
    }
).astype(object)


def table_of(frame: pd.DataFrame, metadata: bytes | None = None, **kinds: str):
    """``frame`` as a table of :func:`tables` (``kinds``: a column's values are of that kind,
    e.g. ``id="bytes"``; others are read as the base's)."""
    names = [str(c) for c in frame.columns]
    columns = [[_cell(v) for v in frame[c].tolist()] for c in frame.columns]
    return names, columns, [kinds.get(n, "base") for n in names], metadata


def _cell(value):
    """A cell as a plain value: None for a missing one (NA, NaN)."""
    missing = value is None or value is pd.NA or (isinstance(value, float) and np.isnan(value))
    return None if missing else value


def _not_utf8_inside(frame: pd.DataFrame, text: bytes) -> bytes:
    """A parquet file of ``frame`` whose ``text`` (in a string column) has a byte that is not
    UTF-8: written uncompressed and without dictionaries, so the text lies in the file as it
    is (Arrow does not check texts on reading)."""
    out = io.BytesIO()
    pq.write_table(pa.table(frame), out, compression="NONE", use_dictionary=False)
    data = out.getvalue()
    assert text in data
    return data.replace(text, b"\xff" + text[1:])


def _frame(base: pd.DataFrame, **columns) -> pd.DataFrame:
    return base.assign(
        **{name: pd.Series(values, dtype=object) for name, values in columns.items()}
    )


def _check_records(records: pd.DataFrame) -> None:
    assert len(records) > 0 and records["id"].is_unique
    assert set(records["label"]) <= {0, 1}
    pd.testing.assert_frame_equal(rec.validate_records(records), records)


def _check_pairs(table: pd.DataFrame) -> None:
    assert table["id"].is_unique and set(table["label"]) <= {0, 1}
    assert all(isinstance(v, str) for f in rec.TEXT_FIELDS for v in table[f])


# ----------------------------------------------------------------------------------------
# Records: .csv and .parquet


@given(file_bytes(tables(BASE_RECORDS).map(as_csv)))
@example(as_csv(table_of(_frame(BASE_RECORDS, thinking_tokens_instruct=[1.5, 0, 0]))))
def test_any_records_csv_is_records_or_one_line(folder, data):
    path = folder / "r.csv"
    path.write_bytes(data)
    records = outcome(rio.read_records, path)
    if records is not None:
        _check_records(records)


@given(
    st.one_of(
        tables(BASE_RECORDS).map(as_parquet), file_bytes(tables(BASE_RECORDS).map(as_parquet))
    )
)
@example(as_parquet(table_of(_frame(BASE_RECORDS, id=[b"\x80", b"a", b"b"]), id="bytes")))
@example(
    as_parquet(
        table_of(_frame(BASE_RECORDS, verdict_instruct=[[1], [], [2]]), verdict_instruct="list")
    )
)
@example(as_parquet(table_of(BASE_RECORDS, metadata=b"{")))
@example(_not_utf8_inside(BASE_RECORDS.astype({"domain": str}), b"coding"))
def test_any_records_parquet_is_records_or_one_line(folder, data):
    path = folder / "r.parquet"
    path.write_bytes(data)
    records = outcome(rio.read_records, path)
    if records is not None:
        _check_records(records)


# ----------------------------------------------------------------------------------------
# Pairs: .csv, .jsonl (.gz too) and .parquet, read and validated by load_pairs


@given(file_bytes(tables(BASE_PAIRS).map(as_csv)))
def test_any_pairs_csv_is_pairs_or_one_line(folder, data):
    path = folder / "p.csv"
    path.write_bytes(data)
    table = outcome(pairs.load_pairs, path)
    if table is not None:
        _check_pairs(table)


@given(file_bytes(tables(BASE_PAIRS).map(as_jsonl)), st.booleans())
@example(as_jsonl(table_of(_frame(BASE_PAIRS, id=[None, [None, []], "p2"]))), False)
def test_any_pairs_jsonl_is_pairs_or_one_line(folder, data, compressed):
    path = folder / ("p.jsonl.gz" if compressed else "p.jsonl")
    path.write_bytes(gzip.compress(data, mtime=0) if compressed else data)
    table = outcome(pairs.load_pairs, path)
    if table is not None:
        _check_pairs(table)


@given(
    st.one_of(tables(BASE_PAIRS).map(as_parquet), file_bytes(tables(BASE_PAIRS).map(as_parquet)))
)
def test_any_pairs_parquet_is_pairs_or_one_line(folder, data):
    path = folder / "p.parquet"
    path.write_bytes(data)
    table = outcome(pairs.load_pairs, path)
    if table is not None:
        _check_pairs(table)


# ----------------------------------------------------------------------------------------
# Judge outputs: JudgeBench's outputs (.jsonl), LLMBar's dataset.json and result.json


class WhitespaceTokenizer:
    """A stand-in for the MiniLM tokenizer: one token per whitespace-separated word."""

    truncation = None
    padding = None

    def encode_batch(self, texts, add_special_tokens=False):
        return [SimpleNamespace(ids=t.split()) for t in texts]


#: Strings a judgment (a Python literal in JudgeBench's files) or a decision may be.
LITERALS = [
    "{'judge_model': 'j', 'prompt': 'p', 'response': '[[A>B]]'}",
    "{'response': 1}",
    "{'response': '[[B>>A]]', 'judge_model': None}",
    "{'response': b'x'}",
    "{'response': '\\udc80'}",
    "{",
    "[1, 2]",
    "(" * 300,
    "10**10**10",
    "__import__('os')",
    "A>B",
    "B>A",
    "A=B",
]


def _game(text, decision, literal=False):
    judgment = {"judge_model": "judge-x", "prompt": "<|User Prompt|>", "response": text}
    return {"judgment": repr(judgment) if literal else judgment, "decision": decision}


BASE_JUDGEBENCH = [
    {
        "pair_id": f"p{i}",
        "original_id": i,
        "source": source,
        "question": "What is 2 + 2?",
        "response_model": "model-r",
        "response_A": "4",
        "response_B": "5",
        "label": label,
        "judge_name": "arena_hard",
        "judgments": [
            _game("A is right. [[A>>B]]", "A>B", literal=i == 1),
            _game("[[B>A]]", "B>A", literal=i != 1),
        ],
    }
    for i, (source, label) in enumerate(
        [("livebench-math", "A>B"), ("mmlu-pro-law", "B>A"), ("livecodebench", "A>B")]
    )
]
JSON_OR_LITERAL = st.one_of(JSON_VALUES, st.sampled_from(LITERALS))


def _paths(value, prefix=()):
    """The path of every node of a JSON document, the root first."""
    yield prefix
    items = (
        value.items()
        if isinstance(value, dict)
        else enumerate(value)
        if isinstance(value, list)
        else ()
    )
    for key, child in items:
        yield from _paths(child, (*prefix, key))


@st.composite
def json_documents(draw, base):
    """``base`` (a valid document) with up to four nodes replaced, deleted or given a new
    field."""
    doc = copy.deepcopy(base)
    for _ in range(draw(st.integers(0, 4))):
        where = draw(st.sampled_from(list(_paths(doc))))
        kind = draw(st.sampled_from(["replace", "delete", "add"]))
        if not where:
            if kind == "replace":
                doc = draw(JSON_OR_LITERAL)
            continue
        parent = doc
        for key in where[:-1]:
            parent = parent[key]
        if kind == "delete":
            del parent[where[-1]]
        elif kind == "add" and isinstance(parent, dict):
            parent[draw(st.text(max_size=6))] = draw(JSON_OR_LITERAL)
        else:
            parent[where[-1]] = draw(JSON_OR_LITERAL)
    return doc


def as_json_lines(doc) -> bytes:
    lines = doc if isinstance(doc, list) else [doc]
    return "\n".join(json.dumps(line) for line in lines).encode("utf-8", "surrogatepass")


def as_json(doc) -> bytes:
    return json.dumps(doc).encode("utf-8", "surrogatepass")


@given(file_bytes(json_documents(BASE_JUDGEBENCH).map(as_json_lines)))
@example(as_json_lines([{**BASE_JUDGEBENCH[0], "response_A": "\udc80"}]))
@example(as_json_lines([{**BASE_JUDGEBENCH[0], "response_model": []}]))
def test_any_judgebench_outputs_file_is_records_or_one_line(folder, data):
    path = folder / "outputs.jsonl"
    path.write_bytes(data)
    records = outcome(
        lambda p: outputs.judgebench_records(p, p, tokenizer=WhitespaceTokenizer()), path
    )
    if records is not None:
        _check_records(records)


BASE_LLMBAR = [
    {"input": f"Question {i}?", "output_1": f"good {i}", "output_2": f"bad {i}", "label": label}
    for i, label in enumerate([1, 2, 1])
]


@given(file_bytes(json_documents(BASE_LLMBAR).map(as_json)))
def test_any_llmbar_dataset_json_is_pairs_or_one_line(folder, data):
    path = folder / "dataset.json"
    path.write_bytes(data)
    table = outcome(
        lambda p: pairs.validate_pairs(llmbar.read_llmbar_dataset(p, "natural"), p), path
    )
    if table is not None:
        _check_pairs(table)


def _llmbar_results():
    results = []
    for item in BASE_LLMBAR:
        judgments = {
            order: {"completion": [f"Output ({w})", "stop"], "winner": w}
            for order, w in (("swap = False", "1"), ("swap = True", "2"))
        }
        results.append({**item, "results": [judgments]})
    return results


@pytest.fixture(scope="module")
def llmbar_pairs(tmp_path_factory):
    path = tmp_path_factory.mktemp("llmbar") / "dataset.json"
    path.write_text(json.dumps(BASE_LLMBAR))
    return llmbar.read_llmbar_dataset(path, "natural")


@given(
    file_bytes(json_documents(_llmbar_results()).map(as_json)),
    st.sampled_from(list(llmbar.LLMBAR_ORDERS)),
)
def test_any_llmbar_result_json_is_judgments_or_one_line(folder, llmbar_pairs, data, order):
    path = folder / "result.json"
    path.write_bytes(data)
    table = outcome(lambda p: llmbar.read_llmbar_results(p, llmbar_pairs, order), path)
    if table is not None:
        assert list(table["id"]) == list(llmbar_pairs["id"])
        assert set(table["verdict"]) <= set(rec.VERDICTS)


# ----------------------------------------------------------------------------------------
# Routers and embeddings


def _router_bytes() -> bytes:
    layers = init_layers(0, 4, "linear")
    router = Router(layers, "linear", 4, "toy", 10.0, 2.0)
    out = io.BytesIO()
    meta = {k: v for k, v in dataclasses.asdict(router).items() if k != "layers"}
    torch.save(seal({"layers": layers, "meta": meta}), out)
    return out.getvalue()


ROUTER_BYTES = _router_bytes()


@given(
    file_bytes(st.one_of(st.just(ROUTER_BYTES), st.just(pickle.dumps({"layers": [], "meta": {}}))))
)
def test_any_router_file_is_a_router_or_one_line(folder, data):
    path = folder / "router.pt"
    path.write_bytes(data)
    router = outcome(Router.load, path)
    if router is not None:
        assert router.p_reasoning(np.zeros((2, router.in_dim), np.float32)).shape == (2,)


def _embeddings_bytes(embedder: bytes = b"toy") -> bytes:
    out = io.BytesIO()
    values = pa.FixedSizeListArray.from_arrays(pa.array(np.arange(6, dtype=np.float32)), 2)
    table = pa.table({"id": ["a", "b", "c"], "embedding": values})
    pq.write_table(table.replace_schema_metadata({b"embedder": embedder}), out)
    return out.getvalue()


@given(file_bytes(st.just(_embeddings_bytes())))
@example(_embeddings_bytes(b"\xe9"))
def test_any_embeddings_file_is_embeddings_or_one_line(folder, data):
    path = folder / "e.embeddings.parquet"
    path.write_bytes(data)
    emb = outcome(rio.read_embeddings, path)
    if emb is not None:
        assert len(emb.ids) == len(emb.matrix) and np.isfinite(emb.matrix).all()

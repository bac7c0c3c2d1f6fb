"""One line for every odd file (issue 30): a folder where a file should be, a symlink loop, a
FIFO, a socket or a device, bytes that are not UTF-8, a router file that would run code. Each
reader a user hands a file to (records, pairs, embeddings, judge outputs, routers) and each
``racer`` command over them says what is wrong in one line naming the file, exits 2, never
opens a FIFO (it would block) and never unpickles code (:mod:`racer_lib.records.files`).
tests/test_reader_properties.py checks the same of any bytes in a file, by property."""

import errno
import json
import os
import pickle
import signal
import socket
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from racer_lib import cli
from racer_lib.errors import MissingFileError, RacerError, UnreadableFileError
from racer_lib.judging import outputs
from racer_lib.records import files, llmbar, pairs
from racer_lib.records import io as rio
from racer_lib.routing import store
from racer_lib.routing.policy import REFUSED, Router

ROOT = Path(__file__).resolve().parents[1]


def racer(capsys, *argv) -> tuple[int, str, str]:
    """``racer ARGV`` run in this process: its exit status, stdout and stderr."""
    code = cli.main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def says(capsys, message: str, *argv) -> None:
    """``racer ARGV`` exits 2 with exactly one line on stderr, ``error: MESSAGE``."""
    code, _, err = racer(capsys, *argv)
    assert (code, err) == (2, f"error: {message}\n")


@pytest.fixture
def no_hang():
    """A test that would block (a FIFO opened for reading waits for a writer) fails after 30 s
    instead (a blocked ``open`` is interrupted by the alarm and raises)."""

    def stop(signum, frame):
        raise TimeoutError("blocked for 30 s: a reader opened the FIFO")

    before = signal.signal(signal.SIGALRM, stop)
    signal.alarm(30)
    yield
    signal.alarm(0)
    signal.signal(signal.SIGALRM, before)


def loop(folder: Path, name: str) -> Path:
    """``folder/name``, a symlink to a symlink back to it."""
    path, other = folder / name, folder / f"other-{name}"
    path.symlink_to(other.name)
    other.symlink_to(path.name)
    return path


@pytest.fixture(scope="module")
def simulated(tmp_path_factory):
    """Simulated records with their embeddings beside them (what `racer records route` and
    `racer router evaluate` read before the router)."""
    path = tmp_path_factory.mktemp("simulated") / "mix.parquet"
    argv = ["simulator", "generate", "--judge", "qwen3-4b", "--scale", "0.03", "--dim", "16"]
    assert cli.main([*argv, "--out", str(path)]) == 0
    return path


def judgebench_line(pair_id: str) -> dict:
    """One valid line of a JudgeBench outputs file."""
    judgment = {"judge_model": "judge-x", "prompt": "p", "response": "[[A>B]]"}
    return {
        "pair_id": pair_id,
        "source": "livebench-math",
        "question": "What is 2 + 2?",
        "response_model": "model-r",
        "response_A": "4",
        "response_B": "5",
        "label": "A>B",
        "judgments": [{"judgment": judgment, "decision": "A>B"}] * 2,
    }


# ----------------------------------------------------------------------------------------
# A folder where a file should be


@pytest.mark.parametrize("name", ["x.csv", "x.parquet"])
def test_a_folder_named_like_a_records_file_is_named_a_folder(tmp_path, capsys, name):
    """``x.csv`` gave an IsADirectoryError traceback, ``x.parquet`` "missing column 'id'"."""
    path = tmp_path / name
    path.mkdir()
    says(capsys, f"{path}: is a directory, not a records file", "records", "validate", path)


def test_a_folder_named_x_jsonl_is_named_a_folder(tmp_path, capsys):
    """Given as pairs (an IsADirectoryError traceback) or as JudgeBench outputs ("no such
    JudgeBench outputs file")."""
    path = tmp_path / "x.jsonl"
    path.mkdir()
    says(capsys, f"{path}: is a directory, not a pairs file", "pairs", "embed", path)
    with pytest.raises(UnreadableFileError, match="is a directory, not a pairs file$"):
        pairs.load_pairs(path)
    argv = ["records", "import", "--format", "judgebench", "--instruct", path, "--reasoning"]
    message = f"{path}: is a directory, not a JudgeBench outputs file"
    says(capsys, message, *argv, path, "--out", tmp_path / "r.parquet")


# ----------------------------------------------------------------------------------------
# A symlink loop


def test_a_symlink_loop_is_named_by_every_command(tmp_path, simulated, capsys):
    """Records (``racer records validate`` said "no such records file"), a router ("no such
    router file"; `racer records route` a RuntimeError traceback from Path.resolve), JudgeBench
    outputs (a RuntimeError traceback)."""
    records, router = loop(tmp_path, "r.parquet"), loop(tmp_path, "r.pt")
    jsonl = loop(tmp_path, "o.jsonl")
    says(capsys, f"{records}: symlink loop", "records", "validate", records)
    says(capsys, f"{records}: symlink loop", "records", "route", records, "--router", router)
    says(capsys, f"{router}: symlink loop", "records", "route", simulated, "--router", router)
    says(capsys, f"{router}: symlink loop", "router", "info", router)
    says(capsys, f"{router}: symlink loop", "router", "evaluate", simulated, "--router", router)
    argv = ["records", "import", "--format", "judgebench", "--instruct", jsonl, "--reasoning"]
    says(capsys, f"{jsonl}: symlink loop", *argv, jsonl, "--out", tmp_path / "j.parquet")
    with pytest.raises(UnreadableFileError, match="symlink loop$"):
        Router.load(router)
    with pytest.raises(UnreadableFileError, match="symlink loop$"):
        outputs.read_judgebench_outputs(jsonl)


def test_a_symlink_loop_beside_records_is_named_not_missing(tmp_path, simulated, capsys):
    """Embeddings beside the records that are a loop were "no embeddings beside"."""
    records = tmp_path / "mix.parquet"
    records.write_bytes(simulated.read_bytes())
    epath = loop(tmp_path, "mix.embeddings.parquet")
    says(capsys, f"{epath}: symlink loop", "records", "validate", records)
    with pytest.raises(UnreadableFileError, match="symlink loop$"):
        rio.load(records)


# ----------------------------------------------------------------------------------------
# A FIFO, a socket, a device: never opened


def test_a_fifo_is_refused_unopened(tmp_path, simulated, capsys, no_hang):
    """Reading a FIFO blocks until a writer opens it: every reader hung on one."""
    fifo = {}
    for name in ("r.csv", "p.jsonl", "o.jsonl", "r.pt"):
        fifo[name] = tmp_path / name
        os.mkfifo(fifo[name])
    not_regular = {name: f"{path}: a FIFO, not a regular file" for name, path in fifo.items()}
    says(capsys, not_regular["r.csv"], "records", "validate", fifo["r.csv"])
    says(capsys, not_regular["p.jsonl"], "pairs", "embed", fifo["p.jsonl"])
    argv = ["records", "import", "--format", "judgebench", "--instruct", fifo["o.jsonl"]]
    argv += ["--reasoning", fifo["o.jsonl"], "--out", tmp_path / "x.csv"]
    says(capsys, not_regular["o.jsonl"], *argv)
    says(capsys, not_regular["r.pt"], "router", "info", fifo["r.pt"])
    says(capsys, not_regular["r.pt"], "records", "route", simulated, "--router", fifo["r.pt"])
    for read in (rio.read_records, pairs.load_pairs, outputs.read_judgebench_outputs):
        name = {rio.read_records: "r.csv", pairs.load_pairs: "p.jsonl"}.get(read, "o.jsonl")
        with pytest.raises(UnreadableFileError) as info:
            read(fifo[name])
        assert str(info.value) == not_regular[name]


def test_a_socket_and_a_device_are_not_regular_files(tmp_path, capsys):
    path = tmp_path / "s.csv"
    server = socket.socket(socket.AF_UNIX)
    try:
        server.bind(str(path))
        says(capsys, f"{path}: a socket, not a regular file", "records", "validate", path)
    finally:
        server.close()
    with pytest.raises(UnreadableFileError, match=r"^/dev/null: a character device, not a"):
        files.check_file("/dev/null", "pairs file")


# ----------------------------------------------------------------------------------------
# Missing in other ways, or not readable


def test_a_broken_symlink_and_a_file_as_folder_are_missing(tmp_path):
    broken = tmp_path / "r.parquet"
    broken.symlink_to("gone.parquet")
    with pytest.raises(MissingFileError) as info:
        rio.read_records(broken)
    assert str(info.value) == (
        f"{broken}: no such records file (a symlink to gone.parquet, which does not exist)"
    )
    (tmp_path / "f").write_text("x")
    inside = tmp_path / "f" / "r.csv"
    with pytest.raises(MissingFileError, match="no such records file .a part of its folder"):
        rio.read_records(inside)
    with pytest.raises(MissingFileError, match=r"no such pairs file \(or use judgebench"):
        pairs.load_pairs(tmp_path / "none.csv")


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads every file")
def test_a_file_without_read_permission_is_named(tmp_path):
    path = tmp_path / "r.csv"
    path.write_text("id\n")
    path.chmod(0)
    with pytest.raises(UnreadableFileError, match=r"r\.csv: cannot be read \(permission denied\)"):
        rio.read_records(path)


def test_check_file_names_each_kind(tmp_path, monkeypatch):
    """The one check: what each kind of path is told (the errno of a loop, whatever the
    platform's message)."""
    (tmp_path / "d").mkdir()
    (tmp_path / "ok.csv").write_text("a\n")
    assert files.check_file(tmp_path / "ok.csv") == tmp_path / "ok.csv"
    with pytest.raises(UnreadableFileError, match=r"d: is a directory, not an embeddings file$"):
        files.check_file(tmp_path / "d", "embeddings file")

    def eloop(path, *args, **kwargs):
        raise OSError(errno.ELOOP, "Too many levels of symbolic links", str(path))

    monkeypatch.setattr(os, "stat", eloop)
    with pytest.raises(UnreadableFileError, match=r"ok\.csv: symlink loop$"):
        files.check_file(tmp_path / "ok.csv")


# ----------------------------------------------------------------------------------------
# Bytes that are not UTF-8: the file and the offset of the first bad byte


def test_binary_jsonl_names_the_byte(tmp_path, capsys):
    """A JudgeBench outputs file or a pairs file with a byte that is not UTF-8 (a
    UnicodeDecodeError traceback): the file and the byte's offset in it."""
    first = (json.dumps(judgebench_line("p0")) + "\n").encode()
    path = tmp_path / "o.jsonl"
    path.write_bytes(first + b'{"pair_id": "p\xff1"}\n')
    message = f"{path}: not UTF-8 text (byte {len(first) + 14} is b'\\xff')"
    argv = ["records", "import", "--format", "judgebench", "--instruct", path, "--reasoning"]
    says(capsys, message, *argv, path, "--out", tmp_path / "r.parquet")
    noise = tmp_path / "noise.jsonl"
    noise.write_bytes(bytes(range(128, 256)) * 8)
    with pytest.raises(UnreadableFileError, match=r"noise\.jsonl: not UTF-8 text \(byte 0 is"):
        pairs.load_pairs(noise)


def test_binary_llmbar_dataset_json_names_the_byte(tmp_path, capsys, monkeypatch):
    """An LLMBar folder whose dataset.json is binary (a UnicodeDecodeError traceback)."""
    folder = tmp_path / "LLMBar"
    (folder / "Natural").mkdir(parents=True)
    dataset = folder / "Natural" / "dataset.json"
    dataset.write_bytes(b'[{"input": "\xc3(", "output_1": "a"}]')
    monkeypatch.setattr(llmbar, "load_tokenizer", lambda: None)  # no tokens are counted
    argv = ["records", "import", "--format", "llmbar", "--llmbar-dir", folder, "--judge", "GPT-4"]
    says(
        capsys,
        f"{dataset}: not UTF-8 text (byte 12 is b'\\xc3')",
        *argv,
        "--out",
        tmp_path / "r.parquet",
    )


def test_csv_offset_is_in_the_file_not_in_a_buffer(tmp_path):
    """pandas reads in blocks: its UnicodeDecodeError's offset is in one of them."""
    path = tmp_path / "big.csv"
    body = b"id,label\n" + b"".join(b"row-%06d,1\n" % i for i in range(40_000))
    path.write_bytes(body + b"\xe9t\xe9,1\n")
    with pytest.raises(UnreadableFileError) as info:
        rio.read_records(path)
    assert str(info.value) == (
        f"{path}: not UTF-8 text (byte {len(body)} is b'\\xe9'); {rio.FORMATS_TEXT}"
    )


def test_first_non_utf8_across_blocks(tmp_path):
    path = tmp_path / "t.txt"
    path.write_bytes("é".encode() * 5 + b"\xc3")  # a sequence cut by the end of the file
    for block in (1, 2, 3, 1 << 20):
        assert files.first_non_utf8(path, block) == (10, b"\xc3")
    path.write_bytes("aé€😀".encode())
    assert files.first_non_utf8(path, 3) is None
    path.write_bytes(files.BOM + b'{"a": 1}')
    assert files.read_utf8(path) == '{"a": 1}'


# ----------------------------------------------------------------------------------------
# A router file that would run code: refused in one line, the code never runs


class _Payload:
    """A pickle that creates ``marker`` when it is loaded: what any code could do."""

    def __init__(self, marker: Path):
        self.marker = marker

    def __reduce__(self):
        return (open, (str(self.marker), "w"))


@pytest.fixture
def evil(tmp_path):
    """A code-running pickle (protocol 4, whose load PyTorch warns about over two lines) and
    the same payload in a torch file, with the marker their code would create."""
    marker = tmp_path / "payload-ran"
    raw, zipped = tmp_path / "evil.pkl", tmp_path / "evil.pt"
    raw.write_bytes(pickle.dumps({"layers": [], "meta": _Payload(marker)}, protocol=4))
    torch.save({"layers": [], "meta": {}, "payload": _Payload(marker)}, zipped)
    # the payload is real: plain pickle runs it
    proof = tmp_path / "proof"
    pickle.loads(pickle.dumps(_Payload(proof))).close()
    assert proof.exists()
    return raw, zipped, marker


def test_a_code_running_router_is_one_line_and_never_runs(evil, simulated, tmp_path):
    """`racer records route` printed six lines, PyTorch's warning and its advice to load the
    file with weights_only=False among them. Run as a process: its stderr is what a user
    sees, warnings included."""
    raw, zipped, marker = evil
    for router in (raw, zipped):
        argv = ["records", "route", str(simulated), "--router", str(router)]
        argv += ["--out", str(tmp_path / "routes.csv")]
        done = subprocess.run(
            [sys.executable, "-m", "racer_lib", *argv],
            cwd=ROOT,
            text=True,
            capture_output=True,
            timeout=300,
        )
        assert done.returncode == 2, done.stderr
        assert done.stderr == f"error: {router}: {REFUSED}\n"
        assert REFUSED == "not a racer router file: refused to unpickle it"
    assert not marker.exists() and not (tmp_path / "routes.csv").exists()


@pytest.mark.filterwarnings("ignore:Detected pickle protocol 4:UserWarning")  # the store's load
def test_router_commands_and_the_store_say_the_same(evil, simulated, tmp_path, capsys):
    """`racer router info|evaluate`, Router.load, and the router store's discard line (which
    said "truncated or unreadable")."""
    raw, zipped, marker = evil
    for router in (raw, zipped):
        says(capsys, f"{router}: {REFUSED}", "router", "info", router)
        says(capsys, f"{router}: {REFUSED}", "router", "evaluate", simulated, "--router", router)
        with pytest.raises(RacerError) as info:
            Router.load(router)
        assert str(info.value) == f"{router}: {REFUSED}"
    policies = store.PolicyStore(tmp_path / "policies")
    key = "ab" + "0" * 62
    entry = policies.path(key)
    entry.parent.mkdir(parents=True)
    entry.write_bytes(raw.read_bytes())
    assert policies.load(key) is None
    line = f"stored router {entry} is damaged: {REFUSED}; retraining\n"
    assert capsys.readouterr().err == line
    assert (tmp_path / "policies" / store.DAMAGE_LOG).read_text() == line
    assert not entry.exists() and not marker.exists()

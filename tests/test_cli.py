"""The racer command: simulate check / generate, records validate and route; what it does with
a user's error (one line, exit 2) and with a bug (its traceback)."""

import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from racer_lib import cli
from racer_lib import records as rec
from racer_lib.errors import ConfigError, MissingFileError, RacerError

ROOT = Path(__file__).resolve().parents[1]


def test_simulate_check_prints_targets_and_passes(capsys):
    assert cli.main(["simulate", "check"]) == 0
    out = capsys.readouterr().out
    assert "18 of 18 aggregates within tolerance" in out
    assert "19.07" in out and "magpie_ultra" in out  # the paper's 1.7B cost ratio, Table 1


def test_generate_then_validate(tmp_path, capsys):
    out = tmp_path / "jb.parquet"
    assert (
        cli.main(
            [
                "simulate",
                "generate",
                "--judge",
                "qwen3-8b",
                "--recipe",
                "judgebench",
                "--dim",
                "8",
                "--out",
                str(out),
            ]
        )
        == 0
    )
    records, emb = rec.load(out)
    assert len(records) == 620 and emb.shape == (620, 8)
    assert cli.main(["records", "validate", str(out)]) == 0
    assert "620 valid records (simulated)" in capsys.readouterr().out


def test_validate_reports_file_row_and_field(tmp_path, capsys):
    path = tmp_path / "bad.csv"
    df = pd.DataFrame({c: ["x"] for c in rec.REQUIRED_COLUMNS})
    df.to_csv(path, index=False)
    assert cli.main(["records", "validate", str(path)]) == 2
    err = capsys.readouterr().err
    assert f"error: {path}: row 0 (id 'x'), field 'label': 'x' is not a label" in err


# ----------------------------------------------------------------------------------------
# racer route


@pytest.fixture(scope="module")
def routed(tmp_path_factory):
    """Simulated records on disk (embeddings beside them) and a tiny router saved from them."""
    import torch

    from racer_lib import train as tr

    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # tiny tensors: threads cost more than they save
    try:
        folder = tmp_path_factory.mktemp("route")
        path = folder / "mix.parquet"
        assert (
            cli.main(
                [
                    "simulate",
                    "generate",
                    "--judge",
                    "qwen3-4b",
                    "--scale",
                    "0.03",
                    "--dim",
                    "16",
                    "--out",
                    str(path),
                ]
            )
            == 0
        )
        records, emb = rec.load(path)
        unit, sp = tr.splits(records, emb)
        result = tr.train_policies(
            sp["train"],
            sp["valid"],
            [tr.PolicyConfig(budget=2.5)],
            tr.TrainSettings(epochs=1, lr=1e-3),
            unit,
            progress=False,
        )
        router = result.router(0, rec.read_embeddings(rec.embeddings_path(path)).embedder)
        router_path = router.save(folder / "router.pt")
    finally:
        torch.set_num_threads(threads)
    return path, router_path, router, records, emb


def test_route_round_trip(routed, tmp_path, capsys):
    from racer_lib.evaluate import policy_point

    path, router_path, router, records, emb = routed
    capsys.readouterr()
    assert cli.main(["route", str(path), "--router", str(router_path), "--seed", "3"]) == 0
    out = capsys.readouterr().out
    default = path.with_name("mix.routes.csv")
    assert f"wrote {default}: {len(records):,} pairs routed" in out
    routes = pd.read_csv(default)
    assert list(routes.columns) == ["id", "p_reasoning", "decision"]
    assert routes["id"].tolist() == records["id"].tolist()
    p = router.p_reasoning(emb)
    np.testing.assert_allclose(routes["p_reasoning"], p, rtol=1e-7, atol=0)
    assert set(routes["decision"].unique()) == {0, 1}
    # Bernoulli draws from p: reasoning where p is high, instruct where it is low, on average.
    assert abs(routes["decision"].mean() - p.mean()) < 0.05
    draws = np.random.default_rng(3).random(len(p))
    np.testing.assert_array_equal(routes["decision"], (draws < routes["p_reasoning"]).astype(int))
    point = policy_point(records, p)
    assert f"reasoning on {routes['decision'].mean():.1%} (seed 3" in out
    assert f"expected accuracy {point['accuracy']:.2f} %" in out
    assert f"realized cost ratio {point['cost']:.3f}" in out
    assert "router budget C = 2.5 cost units" in out
    assert f"1 unit = {router.tokens_per_unit:.1f} instruct tokens" in out
    unit = rec.CostUnit(router.tokens_per_unit)
    assert f"expected cost here {policy_point(records, p, unit)['train_cost']:.3f} of" in out
    # Seeded: the same seed gives the same decisions, another seed others.
    again, other = tmp_path / "again.csv", tmp_path / "sub" / "other.csv"
    assert (
        cli.main(
            ["route", str(path), "--router", str(router_path), "--seed", "3", "--out", str(again)]
        )
        == 0
    )
    assert (
        cli.main(
            ["route", str(path), "--router", str(router_path), "--seed", "4", "--out", str(other)]
        )
        == 0
    )
    pd.testing.assert_frame_equal(pd.read_csv(again), routes)
    assert not pd.read_csv(other)["decision"].equals(routes["decision"])


def test_route_refuses_another_embedder(routed, tmp_path, capsys):
    path, router_path, _, records, emb = routed
    other = rec.write_records(records, tmp_path / "other.parquet")
    rec.write_embeddings(
        rec.embeddings_path(other), [(records["id"].to_numpy(), emb)], embedder="another-model"
    )
    assert cli.main(["route", str(other), "--router", str(router_path)]) == 2
    err = capsys.readouterr().err
    assert (
        "embeddings come from 'another-model', but this router was trained on embeddings "
        "from 'simulated-16d'"
    ) in err
    assert str(rec.embeddings_path(other)) in err
    assert not other.with_name("other.routes.csv").exists()


def test_route_refuses_another_dimension(routed, tmp_path, capsys):
    path, router_path, _, records, emb = routed
    other = rec.write_records(records, tmp_path / "wide.parquet")
    rec.write_embeddings(
        rec.embeddings_path(other),
        [(records["id"].to_numpy(), np.hstack([emb, emb]))],
        embedder="simulated-16d",
    )
    assert cli.main(["route", str(other), "--router", str(router_path)]) == 2
    assert (
        "embeddings have dimension 32, but this router was trained on 16-dimensional embeddings"
    ) in capsys.readouterr().err


def test_route_refuses_missing_embeddings_and_bad_router(routed, tmp_path, capsys):
    path, router_path, _, records, _ = routed
    bare = rec.write_records(records, tmp_path / "bare.parquet")
    assert cli.main(["route", str(bare), "--router", str(router_path)]) == 2
    assert "bare.embeddings.parquet: no embeddings beside" in capsys.readouterr().err
    assert cli.main(["route", str(path), "--router", str(tmp_path / "none.pt")]) == 2
    assert "none.pt: no such router file" in capsys.readouterr().err
    junk = tmp_path / "junk.pt"
    junk.write_text("not a router")
    assert cli.main(["route", str(path), "--router", str(junk)]) == 2
    assert "junk.pt: not a router file" in capsys.readouterr().err


def test_route_refuses_an_out_that_is_an_input(routed, tmp_path, capsys):
    """``racer route X.parquet --out X.parquet`` once overwrote the records."""
    path, router_path, _, records, _ = routed
    folder = tmp_path / "copy"
    folder.mkdir()
    mine = rec.write_records(records, folder / "mix.parquet")
    epath = rec.embeddings_path(mine)
    epath.write_bytes(rec.embeddings_path(path).read_bytes())
    before = {p: p.read_bytes() for p in (mine, epath)}
    for target, name in [(mine, "records"), (epath, "embeddings"), (router_path, "router")]:
        argv = ["route", str(mine), "--router", str(router_path), "--out", str(target)]
        assert cli.main(argv) == 2
        assert capsys.readouterr().err.startswith(
            f"error: {target}: --out is the {name} file {target}; it would be overwritten"
        )
    assert all(p.read_bytes() == data for p, data in before.items())
    assert not (folder / "mix.routes.csv").exists()


def test_route_refuses_an_out_folder_and_writing_elsewhere_too(routed, tmp_path, capsys):
    """A folder as ``--out`` once gave an IsADirectoryError traceback."""
    path, router_path, _, records, _ = routed
    assert cli.main(["route", str(path), "--router", str(router_path), "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err == f"error: {tmp_path}: --out is a folder; give the path of a CSV file to write\n"
    # every other command writing a file goes through records._atomic_write
    argv = ["simulate", "generate", "--judge", "qwen3-4b", "--recipe", "judgebench"]
    assert cli.main([*argv, "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err == f"error: {tmp_path}: is a folder; give the path of a file to write\n"
    (tmp_path / "file").write_text("x")
    assert cli.main([*argv, "--out", str(tmp_path / "file" / "r.parquet")]) == 2
    assert "a part of its folder is a file" in capsys.readouterr().err


def test_route_refuses_an_unknown_source_kind(routed, tmp_path, capsys):
    path, router_path, _, records, _ = routed
    odd = rec.write_records(records.assign(source="guess:x"), tmp_path / "odd.parquet")
    rec.embeddings_path(odd).write_bytes(rec.embeddings_path(path).read_bytes())
    assert cli.main(["route", str(odd), "--router", str(router_path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: {odd}: field 'source': unknown record source kind(s) ['guess']")
    assert not odd.with_name("odd.routes.csv").exists()


def test_route_refuses_a_router_with_a_nan_weight(routed, tmp_path, capsys):
    import dataclasses

    path, _, router, _, _ = routed
    layers = [(w.clone(), b.clone()) for w, b in router.layers]
    layers[3][0][0, 0] = float("nan")
    bad = dataclasses.replace(router, layers=layers).save(tmp_path / "nan.pt")
    out = tmp_path / "r.csv"
    assert cli.main(["route", str(path), "--router", str(bad), "--out", str(out)]) == 2
    assert capsys.readouterr().err == (
        f"error: {bad}: layer 3 weight holds 1 non-finite value(s) (e.g. nan); the router "
        "cannot be used\n"
    )
    assert not out.exists()


# ----------------------------------------------------------------------------------------
# User errors and bugs


@pytest.mark.parametrize(
    "error",
    [
        ConfigError("--batch-size must be at least 1 (got 0)"),
        MissingFileError("x.parquet: no such records file"),
        rec.RecordsError("x.csv", "label", "2 is not a label", row=3),
    ],
)
def test_a_user_error_is_one_line_and_exit_2(monkeypatch, capsys, error):
    def fails(args):
        raise error

    monkeypatch.setattr(cli, "cmd_records_validate", fails)
    assert cli.main(["records", "validate", "x.parquet"]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err == f"error: {error}\n"  # one line, no traceback
    assert isinstance(error, RacerError)


@pytest.mark.parametrize("bug", [ValueError("an internal invariant broke"), KeyError("column")])
def test_a_bug_keeps_its_traceback(monkeypatch, capsys, bug):
    """A ValueError or KeyError that is no RacerError is a bug in the library: racer does not
    swallow it into an error line, it propagates (and Python prints its traceback)."""

    def fails(args):
        raise bug

    monkeypatch.setattr(cli, "cmd_records_validate", fails)
    with pytest.raises(type(bug)) as info:
        cli.main(["records", "validate", "x.parquet"])
    assert info.value is bug and info.traceback[-1].name == "fails"
    assert "error:" not in capsys.readouterr().err


def test_the_racer_process_prints_a_traceback_only_for_a_bug(tmp_path):
    """End to end: a missing file is one line (exit 2); a bug exits 1 with a traceback."""

    def racer(*args, code=""):
        return subprocess.run(
            [
                sys.executable,
                "-c",
                code + "from racer_lib.cli import main; raise SystemExit(main())",
                *args,
            ],
            cwd=ROOT,
            text=True,
            capture_output=True,
        )

    missing = racer("records", "validate", str(tmp_path / "none.parquet"))
    assert missing.returncode == 2 and "Traceback" not in missing.stderr
    assert missing.stderr == f"error: {tmp_path / 'none.parquet'}: no such records file\n"
    bug = racer(
        "records",
        "validate",
        "x",
        code=("import racer_lib.cli as c; c.cmd_records_validate = lambda a: {}['no such key']; "),
    )
    assert bug.returncode == 1
    assert "Traceback (most recent call last)" in bug.stderr
    assert bug.stderr.rstrip().endswith("KeyError: 'no such key'")

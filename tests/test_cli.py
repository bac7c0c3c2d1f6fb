"""The racer command: its noun-verb grammar (every command in ``racer --help`` with an example
that parses, the old spellings with their note), simulator check / generate, records validate
and route; what it does with a user's error (one line, exit 2) and with a bug (its traceback)."""

import argparse
import shlex
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from racer_lib import cli
from racer_lib.errors import ConfigError, MissingFileError, RacerError
from racer_lib.records import io as rio
from racer_lib.records import schema as rec

ROOT = Path(__file__).resolve().parents[1]


# ----------------------------------------------------------------------------------------
# The grammar: racer NOUN VERB, every command in racer --help with an example, old spellings


def choices(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    """The sub-parsers of ``parser`` by name (its nouns, or a noun's verbs)."""
    action = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return action.choices


def registered_commands() -> list[tuple[str, str]]:
    """Every ``(noun, verb)`` the parser accepts, read from the parser itself."""
    return [
        (noun, verb) for noun, sub in choices(cli.build_parser()).items() for verb in choices(sub)
    ]


def test_racer_help_lists_every_command_with_an_example(capsys):
    with pytest.raises(SystemExit) as info:
        cli.main(["--help"])
    assert info.value.code == 0
    lines = capsys.readouterr().out.splitlines()
    commands = registered_commands()
    assert len(commands) == 18 and {n for n, _ in commands} == {n.name for n in cli.NOUNS}
    for noun, verb in commands:
        at = next(i for i, line in enumerate(lines) if line.startswith(f"  {noun} {verb} "))
        example = next(line for line in lines[at + 1 :] if "racer " in line)
        assert f"racer {noun} {verb}" in example, f"racer --help: no example for {noun} {verb}"
    for old in cli.DEPRECATED:
        assert any(line.startswith(f"  racer {old} ") for line in lines), old
    # the same list from `python -m racer_lib`
    done = subprocess.run(
        [sys.executable, "-m", "racer_lib", "--help"], cwd=ROOT, text=True, capture_output=True
    )
    assert done.returncode == 0 and done.stdout.splitlines() == lines


def test_every_example_parses_as_its_command_and_ends_its_help():
    parser = cli.build_parser()
    verbs = {(noun.name, verb.name): verb for noun in cli.NOUNS for verb in noun.verbs}
    assert sorted(verbs) == sorted(registered_commands())
    for (noun, verb), spec in verbs.items():
        words = shlex.split(spec.example)
        while "=" in words[0]:  # an environment variable before the command
            words.pop(0)
        assert words[:3] == ["racer", noun, verb], spec.example
        args = parser.parse_args(words[1:])
        assert (args.command, args.action) == (noun, verb)
        assert args.handler.__name__ == f"cmd_{noun}_{verb}"
        text = choices(choices(parser)[noun])[verb].format_help()
        assert f"racer {noun} {verb}" in text.replace("\n", " ")


#: An old spelling, the handler it reaches and the words its note names, old and new.
OLD_SPELLINGS = [
    (["run", "--profile", "sim", "--no-book"], "cmd_book_build", "run", "book build"),
    (["book-check", "--html", "site"], "cmd_book_check", "book-check", "book check"),
    (["route", "r.parquet", "--router", "r.pt"], "cmd_records_route", "route", "records route"),
    (["embed", "pairs.csv", "--quiet"], "cmd_pairs_embed", "embed", "pairs embed"),
    (["simulate", "check"], "cmd_simulator_check", "simulate check", "simulator check"),
    (
        ["simulate", "generate", "--judge", "qwen3-4b", "--out", "r.parquet"],
        "cmd_simulator_generate",
        "simulate generate",
        "simulator generate",
    ),
    (
        ["judge", "--dataset", "d.jsonl", "--model", "m", "--out", "run"],
        "cmd_judge_run",
        "judge --dataset",
        "judge run",
    ),
    (["judge-merge", "run", "--out", "r.parquet"], "cmd_judge_merge", "judge-merge", "judge merge"),
]


def test_every_old_spelling_has_a_case():
    assert {argv[0] for argv, *_ in OLD_SPELLINGS} == set(cli.DEPRECATED)


@pytest.mark.parametrize("argv, handler, old, new", OLD_SPELLINGS, ids=lambda v: str(v))
def test_an_old_spelling_is_the_new_command_with_a_one_line_note(argv, handler, old, new, capsys):
    resolved = cli._resolve_deprecated(argv)
    assert capsys.readouterr().err == (
        f"racer: `racer {old} ...` is deprecated and goes in the next release; use "
        f"`racer {new} ...`\n"
    )
    replaced = 1 if old.split()[-1].startswith("-") else len(old.split())  # `judge --dataset`
    assert resolved == [*new.split(), *argv[replaced:]]
    assert cli.build_parser().parse_args(resolved).handler is getattr(cli, handler)
    # the new spelling is left as it is, without a note
    assert cli._resolve_deprecated(resolved) == resolved
    assert capsys.readouterr().err == ""


@pytest.mark.parametrize(
    "argv", [["judge", "run", "--help"], ["judge", "--help"], ["judge"], ["records", "validate"]]
)
def test_a_current_spelling_gets_no_note(argv, capsys):
    assert cli._resolve_deprecated(argv) == argv
    assert capsys.readouterr().err == ""


def test_simulator_check_prints_targets_and_passes(capsys):
    assert cli.main(["simulator", "check"]) == 0
    out = capsys.readouterr().out
    assert "18 of 18 aggregates within tolerance" in out
    assert "19.07" in out and "magpie_ultra" in out  # the paper's 1.7B cost ratio, Table 1


def test_generate_then_validate(tmp_path, capsys):
    out = tmp_path / "jb.parquet"
    assert (
        cli.main(
            [
                "simulator",
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
    records, emb = rio.load(out)
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
# racer records route


@pytest.fixture(scope="module")
def routed(tmp_path_factory):
    """Simulated records on disk (embeddings beside them) and a tiny router saved from them."""
    import torch

    from racer_lib.routing import train as tr

    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # tiny tensors: threads cost more than they save
    try:
        folder = tmp_path_factory.mktemp("route")
        path = folder / "mix.parquet"
        assert (
            cli.main(
                [
                    "simulator",
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
        records, emb = rio.load(path)
        unit, sp = tr.splits(records, emb)
        result = tr.train_policies(
            sp["train"],
            sp["valid"],
            [tr.PolicyConfig(budget=2.5)],
            tr.TrainSettings(epochs=1, lr=1e-3),
            unit,
            progress=False,
        )
        router = result.router(0, rio.read_embeddings(rio.embeddings_path(path)).embedder)
        router_path = router.save(folder / "router.pt")
    finally:
        torch.set_num_threads(threads)
    return path, router_path, router, records, emb


def test_route_round_trip(routed, tmp_path, capsys):
    path, router_path, router, records, emb = routed
    capsys.readouterr()
    argv = ["records", "route", str(path), "--router", str(router_path)]
    assert cli.main(argv) == 0
    out = capsys.readouterr().out
    default = path.with_name("mix.routes.csv")
    assert f"wrote {default}: {len(records):,} pairs routed by the router's rule argmax" in out
    routes = pd.read_csv(default)
    assert list(routes.columns) == ["id", "p_reasoning", "decision"]
    assert routes["id"].tolist() == records["id"].tolist()
    p = router.p_reasoning(emb)
    np.testing.assert_allclose(routes["p_reasoning"], p, rtol=1e-7, atol=0)
    # a router file stating no rule (the book's trainer) routes each pair to its more probable
    # mode, and reports the cost of those decisions in its unit
    np.testing.assert_array_equal(routes["decision"], (routes["p_reasoning"] > 0.5).astype(int))
    d = routes["decision"].to_numpy()
    unit = rec.CostUnit(router.tokens_per_unit)
    cost = float(unit.cost(records)[np.arange(len(d)), d].mean())
    accuracy = 100 * float(rec.correct_matrix(records)[np.arange(len(d)), d].mean())
    assert f"reasoning on {d.mean():.1%}" in out
    assert f"accuracy {accuracy:.2f} %, realized cost {cost:.3f} cost units" in out
    assert "router's budget C = 2.5; 1 unit = " in out
    assert f"1 unit = {router.tokens_per_unit:.1f} instruct tokens" in out
    # the old spelling `racer route` does the same, with a note naming the new one; the
    # decisions are the file's, so a second run gives the same ones
    again = tmp_path / "again.csv"
    argv = ["route", str(path), "--router", str(router_path), "--out", str(again)]
    assert cli.main(argv) == 0
    assert capsys.readouterr().err == (
        "racer: `racer route ...` is deprecated and goes in the next release; use "
        "`racer records route ...`\n"
    )
    pd.testing.assert_frame_equal(pd.read_csv(again), routes)


def test_route_refuses_another_embedder(routed, tmp_path, capsys):
    path, router_path, _, records, emb = routed
    other = rio.write_records(records, tmp_path / "other.parquet")
    rio.write_embeddings(
        rio.embeddings_path(other), [(records["id"].to_numpy(), emb)], embedder="another-model"
    )
    assert cli.main(["records", "route", str(other), "--router", str(router_path)]) == 2
    err = capsys.readouterr().err
    assert (
        "embeddings come from 'another-model', but this router was trained on embeddings "
        "from 'simulated-16d'"
    ) in err
    assert str(rio.embeddings_path(other)) in err
    assert not other.with_name("other.routes.csv").exists()


def test_route_refuses_another_dimension(routed, tmp_path, capsys):
    path, router_path, _, records, emb = routed
    other = rio.write_records(records, tmp_path / "wide.parquet")
    rio.write_embeddings(
        rio.embeddings_path(other),
        [(records["id"].to_numpy(), np.hstack([emb, emb]))],
        embedder="simulated-16d",
    )
    assert cli.main(["records", "route", str(other), "--router", str(router_path)]) == 2
    assert (
        "embeddings have dimension 32, but this router was trained on 16-dimensional embeddings"
    ) in capsys.readouterr().err


def test_route_refuses_missing_embeddings_and_bad_router(routed, tmp_path, capsys):
    path, router_path, _, records, _ = routed
    bare = rio.write_records(records, tmp_path / "bare.parquet")
    assert cli.main(["records", "route", str(bare), "--router", str(router_path)]) == 2
    assert "bare.embeddings.parquet: no embeddings beside" in capsys.readouterr().err
    assert cli.main(["records", "route", str(path), "--router", str(tmp_path / "none.pt")]) == 2
    assert "none.pt: no such router file" in capsys.readouterr().err
    junk = tmp_path / "junk.pt"
    junk.write_text("not a router")
    assert cli.main(["records", "route", str(path), "--router", str(junk)]) == 2
    assert "junk.pt: not a racer router file" in capsys.readouterr().err


def test_route_refuses_an_out_that_is_an_input(routed, tmp_path, capsys):
    """``racer records route X.parquet --out X.parquet`` once overwrote the records."""
    path, router_path, _, records, _ = routed
    folder = tmp_path / "copy"
    folder.mkdir()
    mine = rio.write_records(records, folder / "mix.parquet")
    epath = rio.embeddings_path(mine)
    epath.write_bytes(rio.embeddings_path(path).read_bytes())
    before = {p: p.read_bytes() for p in (mine, epath)}
    for target, name in [(mine, "records"), (epath, "embeddings"), (router_path, "router")]:
        argv = ["records", "route", str(mine), "--router", str(router_path), "--out", str(target)]
        assert cli.main(argv) == 2
        assert capsys.readouterr().err.startswith(
            f"error: {target}: --out is the {name} file {target}; it would be overwritten"
        )
    assert all(p.read_bytes() == data for p, data in before.items())
    assert not (folder / "mix.routes.csv").exists()


def test_route_refuses_an_out_folder_and_writing_elsewhere_too(routed, tmp_path, capsys):
    """A folder as ``--out`` once gave an IsADirectoryError traceback."""
    path, router_path, _, records, _ = routed
    assert (
        cli.main(
            ["records", "route", str(path), "--router", str(router_path), "--out", str(tmp_path)]
        )
        == 2
    )
    err = capsys.readouterr().err
    assert err == f"error: {tmp_path}: --out is a folder; give the path of a CSV file to write\n"
    # every other command writing a file goes through racer_lib.records.io.atomic_write
    argv = ["simulator", "generate", "--judge", "qwen3-4b", "--recipe", "judgebench"]
    assert cli.main([*argv, "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err == f"error: {tmp_path}: is a folder; give the path of a file to write\n"
    (tmp_path / "file").write_text("x")
    assert cli.main([*argv, "--out", str(tmp_path / "file" / "r.parquet")]) == 2
    assert "a part of its folder is a file" in capsys.readouterr().err


def test_route_refuses_an_unknown_source_kind(routed, tmp_path, capsys):
    path, router_path, _, records, _ = routed
    odd = rio.write_records(records.assign(source="guess:x"), tmp_path / "odd.parquet")
    rio.embeddings_path(odd).write_bytes(rio.embeddings_path(path).read_bytes())
    assert cli.main(["records", "route", str(odd), "--router", str(router_path)]) == 2
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
    assert cli.main(["records", "route", str(path), "--router", str(bad), "--out", str(out)]) == 2
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

    monkeypatch.setattr(cli.records, "cmd_records_validate", fails)
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

    monkeypatch.setattr(cli.records, "cmd_records_validate", fails)
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
        code=(
            "import racer_lib.cli.records as c; "
            "c.cmd_records_validate = lambda a: {}['no such key']; "
        ),
    )
    assert bug.returncode == 1
    assert "Traceback (most recent call last)" in bug.stderr
    assert bug.stderr.rstrip().endswith("KeyError: 'no such key'")


def test_a_command_declares_only_its_nouns_arguments_and_imports_no_torch():
    """``racer book build`` starts without torch or scipy: only the noun on the command line
    declares its verbs' arguments (``router train`` reads its defaults from the trainer)."""
    code = (
        "import sys; from racer_lib import cli; p = cli.build_parser('book'); "
        "p.parse_args(['book', 'build', '--profile', 'smoke']); "
        "print(sorted(m for m in ('torch', 'scipy') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
    with pytest.raises(SystemExit):  # the other nouns' verbs are named, not declared
        cli.build_parser("book").parse_args(["router", "train", "r.parquet", "--budget", "3"])
    full = cli.build_parser().parse_args(["router", "train", "r.parquet", "--budget", "3",
                                          "--out", "x.pt"])  # fmt: skip
    assert full.budget == 3.0

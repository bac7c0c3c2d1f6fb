"""The racer command: simulate check / generate and records validate."""

import pandas as pd

from racer_lib import cli, records as rec


def test_simulate_check_prints_targets_and_passes(capsys):
    assert cli.main(["simulate", "check"]) == 0
    out = capsys.readouterr().out
    assert "15 of 15 aggregates within tolerance" in out
    assert "19.07" in out and "magpie_ultra" in out  # the paper's 1.7B cost ratio, Table 1


def test_generate_then_validate(tmp_path, capsys):
    out = tmp_path / "jb.parquet"
    assert cli.main(["simulate", "generate", "--judge", "qwen3-8b", "--recipe", "judgebench",
                     "--dim", "8", "--out", str(out)]) == 0
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

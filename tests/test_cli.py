from rvm_pymc.cli import main


def test_demo_prints_table_and_writes_png(tmp_path, capsys):
    out = tmp_path / "fit.png"
    assert main(["demo", "--n-train", "60", "--gammas", "0.2", "0.5", "--output", str(out)]) == 0
    captured = capsys.readouterr()
    text = captured.out
    assert "test RMSE" in text and "relevance vectors" in text
    rmse = float(text.split("test RMSE (1000 noise-free)")[1].split()[0])
    assert 0 < rmse < 0.1
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["fit.png"]  # no temporary file


def test_demo_rejects_bad_arguments(capsys):
    """Bad values are one error line and status 2 (no SystemExit, no traceback)."""
    assert main(["demo", "--n-train", "1", "--output", "none"]) == 2
    assert "--n-train" in capsys.readouterr().err
    assert main(["demo", "--noise-sd", "-1"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("rvm-pymc: error: argument --noise-sd:") and err.count("\n") == 1

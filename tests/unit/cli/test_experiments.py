"""python -m app.experiments before any server: its arguments, its refusals (exit 2, said on stderr), the arms it
defines over what serves, and the folder the embedded server gets a copy of — --model-repository, else
TBL_MODEL_REPOSITORY as the dashboard takes it, else the lab's own (issue 51 item 6). (On real servers:
tests/contract/cli/test_experiments.py.)"""
from __future__ import annotations

import os
from pathlib import Path
from types import SimpleNamespace

import pytest

import app.cli.headless as headless
from app.cli import studies as cli
from app.paths import MODEL_REPOSITORY, ROOT
from tests.unit.experiments.ab.test_arms import SERVED, USER_FILE

DONE_OK, NOT_MET, FAILED = 0, 1, 2


# --- arguments, before any server ---------------------------------------------------------------------------------
@pytest.fixture
def no_server(monkeypatch):
    """Fail the test if the CLI starts a lab: a refusal must come first."""
    def refuse(*_a, **_k):
        raise AssertionError("a server was started before the arguments were checked")
    monkeypatch.setattr("app.lab.root.Lab.create", refuse)
    monkeypatch.delenv("TRITON_URL", raising=False)
    monkeypatch.delenv("TBL_MODEL_REPOSITORY", raising=False)


def test_a_sweep_and_an_ab_read_their_arguments():
    args = cli.parser().parse_args(["sweep", "--model", "m", "--instances", "1, 2", "--delay-us", "0,2000",
                                    "--preferred", "4,8;8,16", "--rate", "50,100", "--p99-ms", "20",
                                    "--json", "o.json"])
    assert (args.instances, args.delay_us, args.preferred, args.rate, args.concurrency, args.p99_ms) == (
        (1, 2), (0, 2000), ((4, 8), (8, 16)), (50.0, 100.0), None, 20.0)
    assert args.json == Path("o.json") and args.max_batch_size == () and not args.grid
    assert args.p99_headroom == pytest.approx(10.0), "the sweep's own headroom, in % of the budget"
    assert cli.parser().parse_args(["sweep", "--model", "m", "--concurrency", "1", "--p99-ms", "20",
                                    "--p99-headroom", "0"]).p99_headroom == 0.0
    ab = cli.parser().parse_args(["ab", "--model", "m", "--a", "delay_us=0", "--b", "delay_us=5000",
                                  "--c", "@other.pbtxt", "--concurrency", "8", "--trials", "6", "--require-difference"])
    assert (ab.a, ab.b, ab.c, ab.d, ab.concurrency, ab.rate, ab.trials) == (
        "delay_us=0", "delay_us=5000", "@other.pbtxt", None, 8, None, 6)
    assert ab.require_difference and (ab.trial_s, ab.warmup_s, ab.sla_ms, ab.seed) == (5.0, 1.0, 50.0, 1)


@pytest.mark.parametrize("argv, words", [
    (["sweep", "--model", "m", "--concurrency", "1,x", "--p99-ms", "20"], "'1,x' is not a comma-separated list"),
    (["sweep", "--model", "m", "--concurrency", "1", "--rate", "5", "--p99-ms", "20"], "not allowed with argument"),
    (["sweep", "--model", "m", "--concurrency", "1"], "the following arguments are required: --p99-ms"),
    (["ab", "--model", "m", "--a", "serving", "--rate", "5"], "the following arguments are required: --b"),
])
def test_a_malformed_command_line_exits_2_with_the_usage(argv, words, capsys, no_server):
    with pytest.raises(SystemExit) as stopped:
        cli.main(argv)
    err = capsys.readouterr().err
    assert stopped.value.code == FAILED and words in err and "usage:" in err, err


@pytest.mark.parametrize("argv, words", [
    (["ab", "--model", "m", "--a", "serving", "--b", "delay=5", "--rate", "5"], "--b: unknown knob 'delay'"),
    (["ab", "--model", "m", "--a", "instances=0", "--b", "serving", "--rate", "5"], "--a: instances='0' must be"),
    (["ab", "--model", "m", "--a", "serving", "--b", "@/nonexistent/config.pbtxt", "--rate", "5"],
     "--b @/nonexistent/config.pbtxt: cannot read that config.pbtxt"),
    (["ab", "--model", "m", "--a", "serving", "--b", "instances=2", "--rate", "5", "--trials", "1"],
     "at least two trials"),
    (["ab", "--model", "m", "--a", "serving", "--b", "instances=2", "--rate", "9000"], "rate (req/s) must be"),
    (["sweep", "--model", "m", "--concurrency", "1,1000", "--p99-ms", "20"], "concurrency must be between 1 and 256"),
    (["sweep", "--model", "m", "--concurrency", "1", "--p99-ms", "0"], "the p99 budget must be above 0 ms"),
    (["sweep", "--model", "m", "--concurrency", "1", "--p99-ms", "5", "--p99-headroom", "80"],
     "the p99 headroom runs from 0 to 50 % of the budget, got 80 %"),
    (["sweep", "--model", "m", "--concurrency", "1", "--p99-ms", "5", "--window-s", "0"], "window_s must be"),
    (["sweep", "--model", "m", "--concurrency", "1", "--p99-ms", "5", "--model-repository", "/nonexistent/repo"],
     "--model-repository /nonexistent/repo: no such folder"),
])
def test_a_refused_study_exits_2_before_any_server_starts(argv, words, capsys, no_server):
    assert cli.main(argv) == FAILED
    err = capsys.readouterr().err
    assert err.startswith("error: ") and words in err, err


def test_arms_from_knobs_and_from_a_config_file_over_what_serves(tmp_path):
    """The arms' names say what each changes from the serving config; an @FILE is taken as written."""
    pasted = tmp_path / "b.pbtxt"
    pasted.write_text(USER_FILE.replace("max_queue_delay_microseconds: 500", "max_queue_delay_microseconds: 2000"))
    lab = SimpleNamespace(served_config=lambda model: SERVED, file_text=lambda model: USER_FILE)  # the verbs it reads
    typed = [(letter, value, cli._arm_text(value, letter.lower()))
             for letter, value in (("A", "serving"), ("B", f"@{pasted}"), ("C", "instances=2"))]
    arms, defined = cli._define_arms(lab, "ranker", typed)
    assert [a.name for a in arms] == ["A (1 instance, max batch 16, delay 500 µs, preferred [4, 8] (serving))",
                                      "B (pasted: delay 500 → 2000 µs)", "C (instances 1 → 2)"], arms
    assert arms[0].config_text == USER_FILE and arms[1].config_text == pasted.read_text()
    assert "count: 2" in arms[2].config_text and "# tuned last spring" in arms[2].config_text
    assert [d.changes for d in defined] == [(), ("delay 500 → 2000 µs",), ("instances 1 → 2",)]
    with pytest.raises(ValueError, match="--b: preferred sizes \\[32\\] are above max_batch_size 16"):
        cli._define_arms(lab, "ranker", [("B", "preferred=32", "preferred=32")])


def test_a_repository_folder_is_for_the_embedded_server_only(capsys, no_server, monkeypatch):
    monkeypatch.setenv("TRITON_URL", "http://127.0.0.1:9")
    argv = ["sweep", "--model", "m", "--concurrency", "1", "--p99-ms", "5", "--model-repository", str(ROOT)]
    assert cli.main(argv) == FAILED
    assert "with TRITON_URL set, name the server's folder with TRITON_MODEL_REPOSITORY" in capsys.readouterr().err


def test_the_embedded_server_gets_a_temporary_copy_with_large_files_linked(tmp_path, monkeypatch):
    """Configs are copied (a study writes them), weights linked (never written, maybe gigabytes); the copy and its
    state folder go when the run ends."""
    repo = tmp_path / "theirs"
    (repo / "m" / "1").mkdir(parents=True)
    (repo / "m" / "config.pbtxt").write_text('name: "m"\n')
    (repo / "m" / "1" / "model.onnx").write_bytes(b"w" * 2048)
    monkeypatch.setattr(headless, "LINK_ABOVE_BYTES", 1024)
    monkeypatch.delenv("TRITON_URL", raising=False)
    monkeypatch.delenv("TBL_STATE_DIR", raising=False)
    monkeypatch.delenv("TBL_MODEL_REPOSITORY", raising=False)
    seen = {}

    def create(env):
        copy = Path(env["TBL_MODEL_REPOSITORY"])
        seen.update(copy=copy, state=os.environ.get("TBL_STATE_DIR"),
                    config_linked=(copy / "m/config.pbtxt").is_symlink(), weights=os.readlink(copy / "m/1/model.onnx"))
        raise RuntimeError("stop here")
    monkeypatch.setattr("app.lab.root.Lab.create", create)
    with pytest.raises(RuntimeError, match="stop here"), headless.headless_lab(repo, "m"):
        pass
    assert seen["config_linked"] is False and seen["weights"] == str(repo / "m/1/model.onnx"), seen
    assert seen["state"] and Path(seen["state"]).parent == seen["copy"].parent, seen
    assert not seen["copy"].exists() and "TBL_STATE_DIR" not in os.environ


# --- which folder, which model: TBL_MODEL_REPOSITORY as the app takes it (issue 51 item 6) -----------------------
def their_repository(folder: Path) -> Path:
    """Return a repository of two models, m1 and m2 (configs only), at folder."""
    for name in ("m1", "m2"):
        (folder / name).mkdir(parents=True)
        (folder / name / "config.pbtxt").write_text(f'name: "{name}"\n')
    return folder


@pytest.fixture
def created(monkeypatch) -> dict:
    """Stop at Lab.create and say what it was given: the repository copied and where it came from."""
    seen: dict = {}

    def create(env):
        copy = Path(env["TBL_MODEL_REPOSITORY"])
        seen.update(models=sorted(p.name for p in copy.iterdir()), copy=copy)
        raise RuntimeError("stop here")
    monkeypatch.setattr("app.lab.root.Lab.create", create)
    monkeypatch.delenv("TRITON_URL", raising=False)
    return seen


def test_the_embedded_server_serves_a_copy_of_tbl_model_repository_as_the_app_does(tmp_path, monkeypatch, created):
    theirs = their_repository(tmp_path / "theirs")
    monkeypatch.setenv("TBL_MODEL_REPOSITORY", str(theirs))
    with pytest.raises(RuntimeError, match="stop here"), headless.headless_lab(None, "m2"):
        pass
    assert created["models"] == ["m1", "m2"] and created["copy"] != theirs, created
    named = their_repository(tmp_path / "named")  # --model-repository comes first
    (named / "m2").rename(named / "m3")
    with pytest.raises(RuntimeError, match="stop here"), headless.headless_lab(named, "m3"):
        pass
    assert created["models"] == ["m1", "m3"], created
    with pytest.raises(RuntimeError, match="stop here"), headless.headless_lab(None, "gpu_sim", lab_models=True):
        pass  # the scenarios need the lab's own models, whatever TBL_MODEL_REPOSITORY says
    assert created["models"] == sorted(p.name for p in MODEL_REPOSITORY.iterdir() if p.name != "__pycache__")


@pytest.mark.parametrize("model, words", [
    ("nope", "--model: model 'nope' is not in the repository"),
    ("../m1", "--model: model name '../m1' is not valid"),
])
def test_a_bad_model_name_is_refused_like_any_other_config_error(model, words, tmp_path, monkeypatch, capsys,
                                                                  no_server):
    monkeypatch.setenv("TBL_MODEL_REPOSITORY", str(their_repository(tmp_path / "theirs")))
    assert cli.main(["sweep", "--model", model, "--concurrency", "1", "--p99-ms", "5"]) == FAILED
    err = capsys.readouterr().err
    assert err.startswith("error: ") and words in err and "its models: m1, m2" in err, err


def test_a_tbl_model_repository_that_is_no_folder_is_refused_by_name(tmp_path, monkeypatch, capsys, no_server):
    monkeypatch.setenv("TBL_MODEL_REPOSITORY", str(tmp_path / "missing"))
    assert cli.main(["ab", "--model", "m", "--a", "serving", "--b", "instances=2", "--rate", "5"]) == FAILED
    assert f"error: TBL_MODEL_REPOSITORY={tmp_path / 'missing'}: no such folder" in capsys.readouterr().err

"""The repository's model names, refused when they are paths; which repositories the embedded server serves
without Triton's auto-complete (repository.completes_nothing)."""
from __future__ import annotations

import shutil

import pytest

from app.paths import MODEL_REPOSITORY
from app.server.repository import ModelNameError, completes_nothing, model_dir, model_names
from tests.helpers import copy_of_the_lab_repository


def test_the_lab_s_own_models_as_bundled_need_no_auto_complete(tmp_path):
    assert completes_nothing(copy_of_the_lab_repository(tmp_path), MODEL_REPOSITORY)
    assert completes_nothing(MODEL_REPOSITORY, MODEL_REPOSITORY)


def test_a_tuned_config_pbtxt_keeps_them_so(tmp_path):
    repo = copy_of_the_lab_repository(tmp_path)
    config = repo / "gpu_sim" / "config.pbtxt"
    config.write_text(config.read_text() + "\ndynamic_batching { max_queue_delay_microseconds: 20000 }\n")
    (repo / "gpu_sim" / "1" / "__pycache__").mkdir()
    (repo / "gpu_sim" / "1" / "__pycache__" / "model.cpython-311.pyc").write_bytes(b"byte code")
    assert completes_nothing(repo, MODEL_REPOSITORY)


def _changed_code(repo):
    with open(repo / "mlp" / "1" / "model.py", "a") as f:
        f.write("\n# one more line\n")


def _no_config(repo):
    (repo / "stream_acc" / "config.pbtxt").unlink()


def _users_model(repo):
    shutil.copytree(repo / "gpu_sim", repo / "their_model")


def _other_backend(repo):
    config = repo / "mlp" / "config.pbtxt"
    config.write_text(config.read_text().replace('backend: "python"', 'backend: "onnxruntime"'))


def _a_platform(repo):
    config = repo / "mlp" / "config.pbtxt"
    config.write_text('platform: "onnxruntime_onnx"\n' + config.read_text())


def _a_new_version(repo):
    shutil.copytree(repo / "token_sim" / "1", repo / "token_sim" / "2")


def _a_completing_model(repo):
    code = repo / "gpu_sim" / "1" / "model.py"
    code.write_text(code.read_text().replace(
        "class TritonPythonModel", "class TritonPythonModel:\n    @staticmethod\n    def auto_complete_config(c):\n"
        "        return c\n\n\nclass _Was", 1))


@pytest.mark.parametrize("change", [_changed_code, _no_config, _users_model, _other_backend, _a_platform,
                                    _a_new_version, _a_completing_model])
def test_anything_but_the_bundled_models_keeps_auto_complete(tmp_path, change):
    repo = copy_of_the_lab_repository(tmp_path)
    change(repo)
    assert not completes_nothing(repo, MODEL_REPOSITORY), change.__name__


def test_an_empty_or_missing_repository_keeps_auto_complete(tmp_path):
    assert not completes_nothing(tmp_path, MODEL_REPOSITORY)
    assert not completes_nothing(tmp_path / "missing", MODEL_REPOSITORY)


def test_no_bundled_model_defines_auto_complete_config():
    """The rule's premise: auto-complete of a bundled model changes nothing because its code defines no
    auto_complete_config (the only thing the Python backend's auto-complete calls)."""
    code = sorted(MODEL_REPOSITORY.glob("*/[0-9]*/*.py"))
    assert len(code) >= 4, code
    assert [p for p in code if "auto_complete_config" in p.read_text()] == []


def test_shipped_models():
    assert model_names(MODEL_REPOSITORY) == ["gpu_sim", "mlp", "stream_acc", "token_sim"]


@pytest.mark.parametrize("name", ["../etc", "a/b", "", "..", "nope"])
def test_model_names_that_are_paths_or_unknown_are_refused(name):
    with pytest.raises(ModelNameError):
        model_dir(MODEL_REPOSITORY, name)

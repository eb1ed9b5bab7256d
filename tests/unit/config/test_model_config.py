"""config.pbtxt round trips, JSON conversion and atomic writes."""
from __future__ import annotations

import os
import stat

import pytest

from app.config import (
    ConfigParseError, copy_config, format_config, from_json, parse_config, read_config, to_dict,
    to_json, write_text_atomic,
)
from tests.unit.config.shipped import SHIPPED, pristine, shipped_id


def test_every_shipped_config_is_found():
    assert len(SHIPPED) == 8


@pytest.mark.parametrize("path", SHIPPED, ids=shipped_id)
def test_reading_then_writing_gives_the_same_text(path):
    text = path.read_text()
    assert format_config(parse_config(text)) == text


@pytest.mark.parametrize("path", SHIPPED, ids=shipped_id)
def test_json_round_trip_keeps_every_field(path):
    config = read_config(path)
    assert from_json(to_json(config)) == config
    assert from_json(to_dict(config)) == config


def test_json_uses_proto_field_names():
    data = to_dict(pristine("gpu_sim"))
    assert data["max_batch_size"] == 32
    assert data["dynamic_batching"]["preferred_batch_size"] == [4, 8]
    assert data["parameters"]["compute_us_batch1"] == {"string_value": "3000"}


def test_from_json_ignores_unknown_fields():
    config = from_json({"name": "gpu_sim", "max_batch_size": 8, "a_field_from_a_newer_triton": {"x": 1}})
    assert config.name == "gpu_sim" and config.max_batch_size == 8


def test_bad_text_raises_a_parse_error_naming_the_source(tmp_path):
    path = tmp_path / "config.pbtxt"
    path.write_text("max_batch_size: [oops\n")
    with pytest.raises(ConfigParseError, match=str(path)):
        read_config(path)
    with pytest.raises(ConfigParseError):
        from_json("{not json")


def test_copy_is_independent():
    config = pristine("gpu_sim")
    copy = copy_config(config)
    copy.max_batch_size = 1
    assert config.max_batch_size == 32


def test_atomic_write_replaces_and_keeps_the_mode(tmp_path):
    path = tmp_path / "config.pbtxt"
    path.write_text("old\n")
    os.chmod(path, 0o640)
    write_text_atomic(path, "new\n")
    assert path.read_text() == "new\n"
    assert stat.S_IMODE(path.stat().st_mode) == 0o640
    assert [p.name for p in tmp_path.iterdir()] == ["config.pbtxt"]


def test_failed_atomic_write_leaves_the_file_and_no_temp(tmp_path, monkeypatch):
    path = tmp_path / "config.pbtxt"
    path.write_bytes(b"old\n")

    def refuse(src, dst):
        raise OSError("disk full")

    monkeypatch.setattr(os, "replace", refuse)
    with pytest.raises(OSError, match="disk full"):
        write_text_atomic(path, "new\n")
    assert path.read_bytes() == b"old\n"
    assert [p.name for p in tmp_path.iterdir()] == ["config.pbtxt"]

"""config.pbtxt against the real server: what it serves reads back to the file's settings, and a person's own
text (a header, comments, one-line blocks) survives the lab's round trip: written as given, edited token by token,
brought back byte for byte by Undo."""
from __future__ import annotations

from app.config import (
    DynamicBatching, InstanceGroup, Kind, from_json, read_config, set_dynamic_batching, set_instance_group,
    settings_of,
)
from app.config.read import dynamic_batching_of, instance_groups_of


def test_server_config_reads_back_to_the_file_settings(triton, client):
    live = from_json(client.get_model_config("gpu_sim"))
    assert settings_of(live) == settings_of(read_config(triton.repo / "gpu_sim" / "config.pbtxt"))


def _styled(shipped: str) -> str:
    """gpu_sim's config.pbtxt as a person keeps it: a header, trailing comments, a one-line list of groups."""
    groups = "instance_group {\n  count: 1\n  kind: KIND_CPU\n}\n"
    assert groups in shipped and "max_queue_delay_microseconds: 500\n" in shipped
    return ("# Tuned by hand for the batch of four: keep this header.\n\n" + shipped
            .replace(groups, "instance_group [ { count: 1, kind: KIND_CPU } ]  # one instance is enough\n")
            .replace("max_queue_delay_microseconds: 500\n", "max_queue_delay_microseconds: 500  # half a ms\n"))


def test_a_persons_text_is_written_as_given_edited_in_place_and_brought_back_byte_for_byte(service, triton,
                                                                                            restore_model):
    restore_model("gpu_sim")
    path = triton.repo / "gpu_sim" / "config.pbtxt"
    styled = _styled(path.read_text())
    service.apply_text("gpu_sim", styled, "a person's own text")
    assert path.read_text() == styled  # written as given
    assert service.plan("gpu_sim", service.current("gpu_sim")).diff == ""  # what serves, written back: the same text

    config = service.current("gpu_sim")
    config = set_instance_group(config, InstanceGroup(2, Kind.CPU))
    config = set_dynamic_batching(config, DynamicBatching(dynamic_batching_of(config).preferred_batch_sizes, 700))
    result = service.apply("gpu_sim", config, "two instances, 700 µs")
    assert path.read_text() == result.new_text == styled.replace("{ count: 1, kind", "{ count: 2, kind").replace(
        "max_queue_delay_microseconds: 500  #", "max_queue_delay_microseconds: 700  #")  # the two tokens alone
    live = service.live("gpu_sim")
    assert instance_groups_of(live)[0].count == 2 and dynamic_batching_of(live).max_queue_delay_microseconds == 700

    service.undo("gpu_sim")
    assert path.read_text() == styled  # byte for byte, comments and layout included
    live = service.live("gpu_sim")
    assert instance_groups_of(live)[0].count == 1 and dynamic_batching_of(live).max_queue_delay_microseconds == 500

"""The sweep form offers only knobs a model can take, read from its config (issue 25): no queue delay for a model
without a batch dimension unless the sweep also gives it one — a contract change — and none for sequence batching."""
from __future__ import annotations

from app.config.contract import contract_changes
from app.config.model_config import parse_config
from app.experiments.sweep.space import Choice
from app.experiments.sweep.knob_offer import knob_offer
from app.paths import MODEL_REPOSITORY
from tests.third_party import SOURCE as REPOSITORY


def config_of(folder):
    return parse_config((folder / "config.pbtxt").read_text())


def test_a_model_without_a_batch_dimension_gets_queue_delays_only_with_a_max_batch_size_named_a_contract_change():
    served = config_of(REPOSITORY / "two_inputs")
    offer = knob_offer(served)
    print(offer)
    assert served.max_batch_size == 0 and offer.instances and offer.batch_sizes
    assert not offer.delays and not offer.batching([]) and offer.batching([8]) and offer.size_is_contract
    assert "max_batch_size 0" in offer.why and "max_batch_size > 0" in offer.why, offer.why
    changed = Choice(max_batch_size=8, delay_us=2000).config(served)  # what the form then lets the sweep try
    assert changed.dynamic_batching.max_queue_delay_microseconds == 2000
    assert any("max_batch_size" in c.field for c in contract_changes(served, changed)), "not a contract change"


def test_sequence_batching_gets_no_queue_delay_even_with_a_max_batch_size():
    served = config_of(MODEL_REPOSITORY / "stream_acc")
    offer = knob_offer(served)
    assert served.HasField("sequence_batching") and served.max_batch_size > 0
    assert not offer.batching([]) and not offer.batching([4, 8]) and offer.instances and not offer.size_is_contract
    assert "sequence batching" in offer.why, offer.why
    changed = Choice(delay_us=2000).config(served)  # why: a delay would swap its sequence batcher for dynamic batching
    assert not changed.HasField("sequence_batching") and contract_changes(served, changed)


def test_an_ensemble_offers_nothing_and_a_batching_model_or_an_unknown_one_everything():
    ensemble = knob_offer(config_of(REPOSITORY / "pipeline"))
    assert not (ensemble.instances or ensemble.batch_sizes or ensemble.batching([8])) and "ensemble" in ensemble.why
    for offer in (knob_offer(config_of(REPOSITORY / "text_len")), knob_offer(None)):
        assert offer.instances and offer.batch_sizes and offer.batching([]) and not offer.size_is_contract
        assert offer.why == ""

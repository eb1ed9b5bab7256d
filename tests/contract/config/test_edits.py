"""Each pure edit applied to the real server: get_model_config shows it, and so does the config the lab reads."""
from __future__ import annotations

import pytest

from tests.unit.config.test_edits import CASES


@pytest.mark.parametrize("case", CASES)
def test_edit_applied_to_the_server_reads_back(case, service, restore_model):
    model, edit, check = CASES[case]
    restore_model(model)
    service.apply(model, edit(service.current(model)), confirm_contract=True)  # sequence_off drops control inputs
    assert check(service.live(model))
    assert check(service.current(model))

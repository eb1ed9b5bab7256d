"""The process's control key: one random value, and the flags that lock Triton's model-repository API with it."""
from __future__ import annotations

import pytest

from app.server.control_key import lock_flags, process_key


def test_the_process_key_is_one_random_value_and_the_flags_carry_it():
    key = process_key()
    assert key == process_key() and len(key) >= 43, "256 random bits, made once per process"
    assert lock_flags(key) == (f"--http-restricted-api=model-repository:x-tbl-control-key={key}",
                               f"--grpc-restricted-protocol=model-repository:x-tbl-control-key={key}")
    for bad in ("", "a,b", "a:b", "a=b", "a b"):
        with pytest.raises(ValueError, match="control key"):
            lock_flags(bad)

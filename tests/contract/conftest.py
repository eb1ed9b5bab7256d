"""The contract tier: the lab against real programs — one tritonserver per test process (tests/servers.py), servers
started by hand in each control mode (tests/contract/hand_started.py), Docker, Prometheus, Locust. What is asserted is
behaviour: what serves, what is written, what is refused and said; never how fast (that is bench/'s)."""
from tests.servers import _server_idle_after, gpu_sim_lab, restore_model, triton  # noqa: F401 - fixtures
from tests.contract.hand_started import explicit_server, none_server, poll_server  # noqa: F401 - fixtures

"""The GPU panel on a server that reports GPUs (its /metrics served from the hand-written GPU fixture)."""
from __future__ import annotations

import http.server
import threading
from pathlib import Path

from streamlit.testing.v1 import AppTest

FIXTURE = Path(__file__).resolve().parents[1] / "metrics" / "fixtures" / "gpu_lines.prom"


def _panel(http_url: str, metrics_url: str, state: str) -> None:
    import os  # noqa: PLC0415 - AppTest runs this function's body as a script

    import streamlit as st  # noqa: PLC0415

    from app.lab.root import Lab  # noqa: PLC0415
    from app.ui.panels.gpu_panel import gpu_panel  # noqa: PLC0415

    os.environ["TBL_STATE_DIR"] = state
    if "lab" not in st.session_state:
        st.session_state.lab = Lab.create({"TRITON_URL": http_url, "TRITON_METRICS_URL": metrics_url})
    gpu_panel(st.session_state.lab, "gpu_sim")


def test_the_panel_shows_each_gpu_and_hides_on_a_cpu_server(triton, tmp_path):
    class Metrics(http.server.BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802 - the http.server hook
            body = FIXTURE.read_bytes()
            self.send_response(200)
            self.send_header("Content-Type", "text/plain; version=0.0.4")
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Metrics)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        gpu = AppTest.from_function(_panel, args=(triton.url, f"http://127.0.0.1:{server.server_port}/metrics",
                                                  str(tmp_path)), default_timeout=60).run()
        assert not gpu.exception, [e.value for e in gpu.exception]
        assert [h.value for h in gpu.subheader] == ["GPUs"]
        table = gpu.dataframe[0].value
        assert list(table["utilization"]) == ["25%", "75%"] and list(table["power (W)"]) == [120.5, 310.0]
        assert any("change the instance count once" in c.value for c in gpu.caption)
        gpu.session_state.lab.close()
        cpu = AppTest.from_function(_panel, args=(triton.url, triton.endpoint.metrics_url, str(tmp_path)),
                                    default_timeout=60).run()
        assert not cpu.exception and not cpu.subheader and not cpu.dataframe  # a CPU server: no GPU panel
        cpu.session_state.lab.close()
    finally:
        server.shutdown()

"""Another process holding a port the lab chose: an HTTP server that answers 200 to every GET."""
from __future__ import annotations

import http.server
import threading


class Squatter:
    """An HTTP server on a free port that answers 200 to every GET: another process holding a port we chose."""

    def __init__(self) -> None:
        class Ready(http.server.BaseHTTPRequestHandler):
            def do_GET(self):  # noqa: N802 - the http.server hook
                self.send_response(200)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args):
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Ready)
        self.port = self.server.server_port
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def first_choice_takes(self, module, which: int, monkeypatch) -> list:
        """Make module's first choose_ports call return our port at index which (0 HTTP, 2 metrics); return the
        calls."""
        real, calls = module.choose_ports, []

        def choose(preferred, host="127.0.0.1"):
            calls.append(preferred)
            if len(calls) > 1:
                return real(preferred, host)
            ports = list(real((None, None, None), host))
            ports[which] = self.port
            return tuple(ports)

        monkeypatch.setattr(module, "choose_ports", choose)
        return calls

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()

"""Prometheus's answer to a range query, for the rate-trace readers' tests."""

# Prometheus's own example answer to a range query, as its HTTP API documentation gives it
# (docs/querying/api.md, "Range queries": `up` over 30 s at a 15 s step).
PROMETHEUS_EXAMPLE = {
    "status": "success",
    "data": {
        "resultType": "matrix",
        "result": [
            {"metric": {"__name__": "up", "job": "prometheus", "instance": "localhost:9090"},
             "values": [[1435781430.781, "1"], [1435781445.781, "1"], [1435781460.781, "1"]]},
            {"metric": {"__name__": "up", "job": "node", "instance": "localhost:9091"},
             "values": [[1435781430.781, "0"], [1435781445.781, "0"], [1435781460.781, "1"]]},
        ],
    },
}

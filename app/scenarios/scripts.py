"""The presenter's script of each guided scenario: what to say before it runs, during each phase, after the verdict.

Shown to the operator beside the scenario (never to the audience). Each line says only what the scenario
measures and checks (app/scenarios/claims.py); the phase names are the catalog's (a test holds them together).
"""
from __future__ import annotations

from app.scenarios.base import Script

_AGAIN = ("Read which check failed and its measured number; if the caution says the load generator fell behind, the "
          "machine was too busy to send the load asked for. Run it again at full length with less running beside it.")

SCRIPTS: dict[str, Script] = {
    "instance-sweep": Script(
        "We keep 16 requests in flight and change one thing: how many copies of the model serve them, 1, 2, 4, "
        "then 8, all sharing one device. Watch throughput and p99. The claim: throughput rises, then goes flat "
        "once the device is busy all the time.",
        {"1 instance": "One copy: the device idles while it launches and copies data. This is the baseline.",
         "2 instances": "A second copy overlaps its launches with the first one's compute: throughput jumps.",
         "4 instances": "Four copies: the device is busy nearly all the time, so the gain shrinks.",
         "8 instances": "Eight copies only take turns on the same device: throughput goes no higher (it may "
                        "even fall) while compute per request grows."},
        "Throughput rose with the second copy and went flat by eight, while each request's compute grew. Under a "
        "50 ms p99 budget the best choice is fewer than 8 instances: more copies are not more capacity.",
        "The curve did not come out this time. " + _AGAIN),
    "queue-delay": Script(
        "max_queue_delay is how long the batcher may wait for more requests to fill a batch. We try 0 to 10 ms at "
        "light load (40 requests a second), then at heavy load (32 always in flight). The claim: at light load "
        "the delay is added latency; at heavy load batches fill before it runs out, so it costs little.",
        {"low load, delay 0 µs": "Light load, no delay: requests run almost alone. This median is the floor.",
         "low load, delay 500 µs": "Half a millisecond of waiting: hardly visible.",
         "low load, delay 2000 µs": "2 ms: the median rises by about the delay.",
         "low load, delay 10000 µs": "10 ms: the median rises by nearly 10 ms, and the batch size barely moves: "
                                     "the company the delay waits for does not come.",
         "high load, delay 0 µs": "Heavy load, no delay: batches form anyway, because requests are already "
                                  "waiting.",
         "high load, delay 2000 µs": "2 ms at heavy load: batches fill before the delay runs out.",
         "high load, delay 10000 µs": "The same 10 ms that cost light load nearly 10 ms: here the median barely "
                                      "moves."},
        "One knob, two effects: at light load the 10 ms delay added about itself to the median; at heavy load it "
        "cost far less, and batches were larger. Set the delay for the load you actually have.",
        "The two loads did not separate this time. " + _AGAIN),
    "instances-x-batching": Script(
        "The same 16 requests in flight and the same 2 ms batching delay, first on one instance, then on four. The "
        "claim: instances split the queue, so each one's batches get smaller; instances × batch size stays about "
        "the requests in flight.",
        {"1 instance, delay 2000 µs": "One instance batches everything that gathered while it was busy: note the "
                                      "average batch size.",
         "4 instances, delay 2000 µs": "Four instances share the same 16 requests: each finds fewer waiting, so "
                                       "its batches are about a quarter as large."},
        "Batches shrank as instances were added, and 4 × the batch size came back to about the 16 requests in "
        "flight. More instances do not add batching: they divide it.",
        "The batches did not split as expected this time. " + _AGAIN),
    "stateful": Script(
        "This model keeps a running sum per sequence: four clients each send a sequence of numbers and expect "
        "their own total back. The claim: dynamic batching mixes the sequences' state and the answers go wrong; "
        "sequence batching keeps every sum right.",
        {"dynamic batching": "Dynamic batching: requests of different sequences share one state. Watch the "
                             "wrong answers: most sums come back wrong.",
         "sequence batching, oldest": "Sequence batching, oldest first: each sequence keeps its own slot and "
                                      "state. No wrong answers.",
         "sequence batching, direct": "Direct: each sequence pinned to one slot. Again no wrong answers."},
        "Dynamic batching returned wrong sums; both sequence batching strategies got every one right. For a "
        "stateful model the batcher is a question of correctness before speed.",
        "Not every answer came out as claimed this time. " + _AGAIN),
    "mixed-traffic": Script(
        "Two kinds of clients on one model: interactive requests that need an answer within 100 ms, and a bulk "
        "batch job; together about 1.3× what the device serves. The claim: with one queue the interactive p99 "
        "breaks; priority levels, a timeout and a bounded queue keep interactive requests inside their SLA.",
        {"one queue for both": "One first-come queue under overload: it grows every second, and interactive "
                               "requests wait behind every batch request. Their p99 runs far past 100 ms.",
         "priorities, REJECT timeout, bounded queue": "Interactive requests now go first, and the batch queue "
                                                      "holds 32: the excess is rejected at once. Watch the "
                                                      "interactive p99 fall and batch rejections appear."},
        "With priorities the interactive p99 fell to a fraction of what it was and most interactive requests "
        "were answered within 100 ms. The batch class still progressed; the overload was shed as batch "
        "rejections instead of a queue that never stops growing.",
        "Priorities did not protect the interactive class as claimed this time. " + _AGAIN),
    "retry-storm": Script(
        "Clients with a 25 ms timeout that retry at once, against a server that needs longer than that under "
        "this load. The claim: retries multiply the load and goodput collapses; a timeout of 2-3× p99 with "
        "backoff, jitter and a cap restores it.",
        {"immediate retries": "Each request times out and is sent again at once, up to 5 times, while the "
                              "server still computes the abandoned ones. Attempts pile up; goodput falls to "
                              "almost nothing. The diagnosis should call it retry amplification.",
         "timeout 2-3× p99, backoff with jitter, a cap": "The same offer, a 300 ms timeout, backoff with jitter "
                                                         "and at most 2 attempts: the retries stop feeding the "
                                                         "queue and goodput comes back."},
        "Immediate retries multiplied the attempts, the diagnosis named retry amplification and goodput "
        "collapsed; patient retries brought goodput back close to the 120 requests a second offered. The fix was in "
        "the clients, not the server.",
        "The storm or its cure did not show as claimed this time. " + _AGAIN),
    "variable-shapes": Script(
        "A text-like model: each request has its own length, from 1 to 256, and Triton batches only requests "
        "of the same shape. The claim: as they come, requests barely batch; padding them to a few lengths "
        "restores batching and throughput.",
        {"lengths 1-256 as they come": "Lengths as they come: almost every request runs alone. The average "
                                       "batch stays near 1.",
         "padded to 2 buckets": "Padded up to 128 or 256: runs of equal length form and batches grow, paid for "
                                "by copying the padding.",
         "padded to the longest": "Everything padded to 256: one shape, the largest batches and the most "
                                  "throughput."},
        "Batching collapsed with raw lengths and came back with padding; one length batched best and throughput "
        "followed. Padding wastes some work and buys batching.",
        "Padding did not restore batching as claimed this time. " + _AGAIN),
    "patterns": Script(
        "Three classic misconfigurations, produced on purpose. For each, the lab's diagnosis names the pattern "
        "from the measured figures, then its one-click fix is applied. The claim: each pattern is named, and its "
        "fix helps.",
        {"A: long delay, light bursty load": "Pattern A: a 20 ms batching delay at light, bursty load. Requests "
                                             "mostly wait. The diagnosis should name A.",
         "A fixed": "The fix for A shortens the delay: the queue wait and the median fall.",
         "B: no batching, overload": "Pattern B: no dynamic batching at 300 requests a second. Every request "
                                     "runs alone and the queue builds. Expect B.",
         "B fixed": "The fix for B turns dynamic batching on: throughput rises to meet the offer.",
         "C: big batches, slow items": "Pattern C: a device that slows down per item past a batch of 2, fed "
                                       "batches of 3 and 4. Compute per request balloons. Expect C.",
         "C fixed": "The fix for C sets a small preferred batch size: compute per request and the tail fall."},
        "All three patterns were named from the figures alone, and each fix helped where it should: the wait for "
        "A, throughput for B, compute and the tail for C.",
        "A pattern was not named, or its fix did not help, this time. " + _AGAIN),
    "three-batchings": Script(
        "A simulated text generator streams tokens: 8 generations in flight, 4 to 64 tokens each. First the "
        "scheduler batches whole requests, then the model batches decode steps. The claim: in-flight batching "
        "streams more tokens per second, gives the first token far sooner and ends the slowest generations "
        "sooner.",
        {"request-level dynamic batching": "Request-level: a batch decodes until its longest member is done; "
                                           "finished rows idle and new requests wait for the whole batch. Note "
                                           "the time to the first token.",
         "step-level in-flight batching": "In-flight: a finished sequence leaves and a waiting one joins at the "
                                          "next step. More tokens per second, a much earlier first token."},
        "In-flight batching streamed more tokens per second, gave the first token many times sooner and ended "
        "the slowest generations sooner, with every token delivered. This is why LLM servers batch by step.",
        "In-flight batching did not win as claimed this time. " + _AGAIN),
}

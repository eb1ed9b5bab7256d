"""Short explanations shown on each page: the idea, and what to look for on the charts."""

OVERVIEW = """
**Latency is a sum.** A request's time is queue wait + batching wait + compute (input, infer,
output) + transfer. Triton counts each server-side term; this lab turns those counters into
per-request breakdowns every second, next to the p99 your clients really see. The first
question is always: *is p99 made of waiting, or of compute?*
"""

INSTANCES = """
**More runs at once.** One model instance leaves the device idle during copies, launch gaps
and memory-bound phases; a second instance fills those gaps. Throughput rises until the device
is saturated, then goes flat, while latency starts to climb from contention. The operating
point is the highest throughput whose p99 is still inside the SLA (goodput), not the highest
throughput.

*Look for:* throughput stepping up from 1→2 instances and flattening after; compute-infer time
per request growing once instances contend for the one simulated device.
"""

DYNAMIC = """
**One bigger run.** The dynamic batcher holds requests until a preferred batch size is reached
or the oldest has waited `max_queue_delay_microseconds`, then runs them as one batch. Under
heavy load batches fill before the delay expires, so the delay is nearly free; under light
load the delay is pure added latency for little gain. Past some point a longer delay only
adds latency.

*Look for:* the batch-size histogram shifting right and throughput rising as the delay grows,
and the queue band of the breakdown (and p99) growing with it.
"""

SEQUENCE = """
**Stateful models need every request of a sequence on the same slot, in order.** Clients tag
requests with a correlation ID and START/END flags; the sequence batcher routes them and passes
control inputs to the model. `direct` pins a sequence to a batch slot; `oldest` batches the
oldest waiting sequences together. Serving a stateful model with the dynamic batcher mixes
sequences and corrupts state; serving a stateless model with the sequence batcher wastes capacity.

*Look for:* `wrong_output` staying at zero under sequence batching, and climbing as soon as the
model is switched to dynamic batching.
"""

PRIORITY = """
**Mixed traffic on one model.** Give the interactive class the higher priority level (lower
number), a short timeout with REJECT and a bounded queue, so overload sheds the right requests
instead of breaking every SLA. Verify per class: the interactive p99 stays low while the batch
class absorbs the wait and the rejections.
"""

THREE = """
| batching | for | unit | where it happens |
|---|---|---|---|
| dynamic | stateless one-shot (classify, detect, embed) | requests | Triton's scheduler |
| sequence | stateful sessions and streams | sequences | Triton's scheduler |
| in-flight (continuous) | autoregressive LLMs | decode steps | the backend (TensorRT-LLM, vLLM) |

Dynamic batching on an LLM is a misuse: requests finish at different decode steps, so a
batch is only as fast as its longest member. Matching the batching to the model is the first
configuration decision; this page checks each loaded model for it.
"""

DIAGNOSIS = """
**Symptoms → suspects → fixes**, read from the current window. Pattern A: p50 low, p99 high,
the tail is waiting (batching delay or queueing). Pattern B: latency steps up past some rate,
arrivals outrun service and the queue builds. Pattern C: bigger batches are slower per item.
Also: batch size stuck at 1, rejections, retry amplification. Change one knob at a time, warm
up before judging, and judge p99 under the SLA — never the mean.
"""

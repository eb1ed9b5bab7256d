"""A twin-ranked sweep measures the configurations the twin ranks highest, from the load it expects to be their best;
a search starting there walks to the measured boundary."""
from __future__ import annotations

from app.config.model_config import parse_config
from app.experiments.sweep.points import Point
from app.experiments.sweep.space import CONCURRENCY, Choice, SearchSpace
from app.experiments.sweep.sweeper import traffic_spec
from app.experiments.sweep.twin_rank import Ranked, TwinSearch, kept, rank, ranking_error
from app.metrics.statistics_api import ModelStats
from app.paths import MODEL_REPOSITORY
from app.store.database import DONE
from app.timeline.figures import Figures
from app.timeline.sides import ClientFigures
from app.twin.calibrate import calibrate_from_stats
from app.config.read import settings_of

SPACE = SearchSpace(model="gpu_sim", instances=(1, 2), delays_us=(0, 2000), loads=(1, 2, 4, 8, 16),
                    load_kind=CONCURRENCY, p99_budget_ms=22.0)


def _calibration(base):
    """A calibration from made-up executions of gpu_sim's sizes 1-32 at one instance (µs: its cost model's shape)."""
    cost = {b: 2000 + 6000 * (b / 32) ** 0.8 for b in (1, 2, 4, 8, 16, 32)}
    stats = ModelStats(batches={b: 200 for b in cost}, batch_ns={b: int(200 * us * 1e3) for b, us in cost.items()},
                       inference_count=sum(200 * b for b in cost), execution_count=200 * len(cost),
                       counts={"success": sum(200 * b for b in cost)}, ns={"success": 1})
    return calibrate_from_stats(None, stats, settings_of(base), 500.0, window_s=60.0)


def test_the_twin_ranks_two_instances_first_and_a_sweep_keeps_its_top_ones(monkeypatch):
    import app.experiments.sweep.twin_rank as twin_rank  # noqa: PLC0415

    monkeypatch.setattr(twin_rank, "RANK_S", 4.0)  # a short simulation: the order, not the figures, is asserted
    monkeypatch.setattr(twin_rank, "RANK_REPLICATIONS", 1)
    base = parse_config((MODEL_REPOSITORY / "gpu_sim" / "config.pbtxt").read_text())
    choices = SPACE.configurations(base)
    ranked = rank(SPACE, choices, base, _calibration(base), lambda load: traffic_spec(SPACE, load, 1))
    print([(r.choice.key, r.load, round(r.goodput)) for r in ranked])
    assert [r.choice.instances for r in ranked[:2]] == [2, 2], ranked
    assert ranked[0].goodput >= ranked[-1].goodput and ranked[0].load is not None
    room = SPACE.p99_budget_ms * (1 - SPACE.p99_headroom)
    assert all(r.p99_ms is None or r.p99_ms <= room for r in ranked), "a load is ranked where it holds with room"
    assert kept(ranked, 2)[:2] == ranked[:2]
    nothing = [Ranked(Choice(instances=1), None, 0.0, None), Ranked(Choice(instances=2), None, 0.0, None)]
    assert kept(nothing, 2) == nothing  # none holds anywhere: still the top ones, measured to say so


def _ranked(*goodputs: float) -> list[Ranked]:
    return [Ranked(Choice(instances=i + 1), 8, g, 10.0) for i, g in enumerate(goodputs)]


def test_a_sweep_also_measures_what_the_twin_cannot_tell_from_its_last_top_one_and_no_more_than_top_of_them():
    far = _ranked(1000, 900, 700, 600)
    assert kept(far, 2) == far[:2], "a third 22 % below the second is not a tie"
    near = _ranked(1000, 900, 850, 820, 815, 500)
    assert kept(near, 2) == near[:4], "within 10 % of the second: measured, at most 2 more"
    assert kept(near, 1) == near[:2], "within 10 % of the first: one more"


def _point(load: float, p99: float) -> Point:
    client = ClientFigures.from_dict({"p99_ms": p99, "throughput_rps": load * 60, "goodput_rps": load * 60,
                                      "latency_n": 500, "ok": 500})
    return Point(Choice(instances=2), load, DONE, True, 0.0, Figures("gpu_sim", 0, 1, client={"all": client}))


def test_a_search_from_the_predicted_load_walks_up_while_it_holds_and_stops_at_the_boundary():
    search = TwinSearch(SPACE, 4)
    walked = []
    while (load := search.next()) is not None:
        walked.append(load)
        search.record(_point(load, 10.0 if load <= 8 else 40.0))
    assert walked == [4, 8, 16], walked


def test_a_prediction_that_was_too_high_walks_down_to_the_first_load_that_holds():
    search = TwinSearch(SPACE, 16)
    walked = []
    while (load := search.next()) is not None:
        walked.append(load)
        search.record(_point(load, 10.0 if load <= 4 else 40.0))
    assert walked == [16, 8, 4], walked


def test_the_twins_error_on_a_ranked_configuration_is_said_only_where_both_goodputs_are_known():
    """893 predicted against 755 measured: +18 %; no operating point inside the SLA (load None), nothing measured
    inside it, or a configuration not measured: no error to say."""
    record = {"load": 16.0, "predicted_goodput_rps": 893.0, "measured_goodput_rps": 755.0, "measured": True}
    assert round(ranking_error(record), 3) == 0.183
    assert ranking_error({**record, "load": None}) is None
    assert ranking_error({**record, "measured_goodput_rps": None}) is None
    assert ranking_error({"load": 16.0, "predicted_goodput_rps": 893.0, "measured": False}) is None

"""The fair share explained: the trace is a transcript of the engine's own computation, so its last line is
the engine's figure, on random cohorts (weights, sharing, borrowing and lending limits, uncovered capacity)."""

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from scheduling.engine.fairshare_trace import trace_fair_share
from scheduling.engine.scenario import parse_scenario
from scheduling.engine.simulator import Simulation
from tests.engine.test_invariants import scenarios


def _figure(output, team, instance_type, resource) -> float:
    return output["teams"][team]["fair_share"].get(instance_type, {}).get(resource, 0.0)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.one_of(scenarios(with_cluster=True), scenarios(with_cluster=False)))
def test_the_traces_last_line_is_the_engines_fair_share(data):
    simulation = Simulation(parse_scenario(data))
    output = simulation.run()
    for team in output["teams"]:
        trace = trace_fair_share(simulation.s, team)
        assert trace.cells, "every instance type and resource is narrated"
        for (instance_type, resource), note in trace.cells.items():
            lines = note.for_team(team)
            last = lines[-1]
            assert last.kind == "result" and last.team == team
            assert abs(last.value - _figure(output, team, instance_type, resource)) < 1e-6
            assert last.text.startswith(f"Fair share of {team} on {instance_type}:")


def test_the_derivation_names_pool_caps_and_rounds():
    data = {
        "cluster": {"instance_types": [{"name": "p5", "count": 4, "capacity": {"gpu": 8}}]},
        "teams": [
            {"name": "a", "quota": {"p5": {"gpu": 8}}, "borrow_limit_pct": 50},
            {"name": "b", "quota": {"p5": {"gpu": 8}}, "fair_share_weight": 2},
            {"name": "c", "quota": {"p5": {"gpu": 4}}, "sharing": "Lend"},
        ],
        "workloads": [{"name": f"w{i}", "team": t, "requests": {"gpu": 8}} for i, t in enumerate("aaabbbbb")],
    }
    simulation = Simulation(parse_scenario(data))
    simulation.run()
    text = [line.text for line in trace_fair_share(simulation.s, "a").cells[("p5", "gpu")].for_team("a")]
    assert text[-1] == "Fair share of a on p5: 12 GPUs."
    joined = "\n".join(text)
    assert "pools 32 GPUs of p5" in joined and "12 of capacity that no team's quota covers" in joined
    assert "a wants 4 more, capped by its borrow limit" in joined
    assert "c may not borrow (sharing: Lend)" in joined
    assert "Round 1: 16 by weight would give a 5.33, b 10.67; a takes only the 4 it wants" in joined
    assert "Round 2: nobody left is capped, so all 12 is split by weight: b +12." in joined

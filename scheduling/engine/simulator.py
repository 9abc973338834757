"""The scenario simulator: replays submissions and finishes over time and settles at each instant.

Time runs from 0 to max(until, last submission), so every submitted workload is considered. Workloads
submitted before 0 are queued at 0 in submit order; `running` ones are admitted at their `since`.
Finish events at or before the end are processed; a preempted workload restarts its whole duration.
"""

from __future__ import annotations

import heapq
from dataclasses import asdict

from .admission import Scheduler
from .explain import explain
from .queues import PENDING
from .scenario import Scenario, ScenarioError, parse_scenario
from .status import num, team_status

FINISH, SUBMIT = 0, 1


def simulate_scenario(data: dict) -> dict:
    """Validate a scenario dict and run it; returns the output dict. Raises ScenarioError."""
    return Simulation(parse_scenario(data)).run()


def _planned(plan, job):
    hold = plan.holds.get(job) if plan is not None else None
    return None if hold is None else num(hold.start)


def resources_of(instance_types, teams, requests) -> list[str]:
    names: dict[str, None] = {}
    for it in instance_types:
        names.update(dict.fromkeys(it.capacity))
    for team in teams:
        for grid in (team.quota, team.borrowing_limit or {}, team.lending_limit or {}):
            for amounts in grid.values():
                names.update(dict.fromkeys(amounts))
    for request in requests:
        names.update(dict.fromkeys(request))
    return list(names)


class Simulation:
    def __init__(self, scenario: Scenario):
        self.scenario = scenario
        specs = scenario.workloads
        resources = resources_of(scenario.instance_types, scenario.teams, (w.requests for w in specs))
        self.s = Scheduler(scenario.instance_types, scenario.teams, scenario.policy, resources)
        self.jobs = [
            self.s.make_job(w.name, i, w.team, w.requests, w.pods, w.priority, w.submit, w.instance_type, w.duration)
            for i, w in enumerate(specs)
        ]
        self.events: list[dict] = []
        self.heap: list[tuple] = []

    def run(self) -> dict:
        s, specs = self.s, self.scenario.workloads
        running = sorted((i for i, w in enumerate(specs) if w.running_on), key=lambda i: (specs[i].since, i))
        for i in running:
            job, spec = self.jobs[i], specs[i]
            try:
                s.start_running(job, s.fidx[spec.running_on], None, spec.since)
            except ValueError as err:
                raise ScenarioError(f"workloads[{i}].running: {err}") from None
            self._schedule_finish(job, spec.since)
        for i, w in enumerate(specs):
            if not w.running_on:
                heapq.heappush(self.heap, (max(w.submit, 0.0), SUBMIT, i, self.jobs[i], 0))
        end = max([self.scenario.until] + [w.submit for w in specs])
        self._loop(end)
        return self._output()

    def _schedule_finish(self, job, start: float) -> None:
        if job.duration is not None:
            heapq.heappush(self.heap, (start + job.duration, FINISH, job.seq, job, job.run))

    def _loop(self, end: float) -> None:
        s, heap = self.s, self.heap
        first = True
        while first or (heap and heap[0][0] <= end):
            now = max(heap[0][0], 0.0) if heap and heap[0][0] <= end else 0.0
            while heap and max(heap[0][0], 0.0) == now and heap[0][0] <= end:
                t, kind, _, job, run = heapq.heappop(heap)
                if kind == SUBMIT:
                    s.submit(job)
                elif job.run == run and job.state == "running":
                    s.finish(job, t)
                    self.events.append({"t": num(t), "type": "finished", "workload": job.name})
            first = False
            s.settle(now)
            self._record(now)

    def _record(self, now: float) -> None:
        t = num(now)
        for entry in self.s.log:
            if entry[0] == "admitted":
                job, flavor = entry[1], entry[2]
                self.events.append(
                    {"t": t, "type": "admitted", "workload": job.name, "instance_type": self.s.flavor_names[flavor]}
                )
                self._schedule_finish(job, now)
            else:
                job, by, reason = entry[1], entry[2], entry[3]
                self.events.append({"t": t, "type": "preempted", "workload": job.name, "by": by.name, "reason": reason})
        self.s.log.clear()

    def _output(self) -> dict:
        s = self.s
        s.now = max(s.now, self.scenario.until)
        plan = s.current_plan() if s.backfill else None
        workloads = {}
        for job in self.jobs:
            pending = job.state == PENDING or job.state == "waiting"
            workloads[job.name] = {
                "state": "pending" if pending else job.state,
                "instance_type": None if pending or job.flavor is None else s.flavor_names[job.flavor],
                "admitted_at": None if pending or job.admitted_at is None else num(job.admitted_at),
                "finished_at": None if job.finished_at is None else num(job.finished_at),
                "preemptions": job.preemptions,
                "reason": explain(s, job) if job.state == PENDING else None,
                "planned_start": _planned(plan, job),
            }
        teams = {}
        for team in s.teams:
            status = asdict(team_status(s, team))
            if status["borrowing_limit"] is None:
                del status["borrowing_limit"]
            teams[team.name] = status
        return {"workloads": workloads, "teams": teams, "events": self.events}

"""Why a workload waits, in plain words with the numbers that matter."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .quota import CAPACITY, COHORT, EPS, FITS, TEAM

if TYPE_CHECKING:
    from .admission import Scheduler
    from .queues import Job

LABELS = {"gpu": ("GPU", "GPUs"), "cpu": ("vCPU", "vCPUs"), "memory": ("GiB of memory", "GiB of memory")}


def number(x: float) -> str:
    if abs(x - round(x)) < 1e-9:
        return str(int(round(x)))
    return f"{x:.3f}".rstrip("0")


def amount(x: float, resource: str, adjective: str = "") -> str:
    one, many = LABELS.get(resource, (resource, resource))
    return f"{number(x)} {adjective + ' ' if adjective else ''}{one if abs(x - 1) < EPS else many}"


def unit(resource: str) -> str:
    return {"gpu": "GPU", "cpu": "vCPU", "memory": "GiB"}.get(resource, resource)


def label(job: Job) -> str:
    """How a reason names a workload: "job #42" for the portal's numbered jobs, "job big" in scenarios."""
    return f"job #{job.name}" if job.name.isdigit() else f"job {job.name}"


def in_words(seconds: float) -> str:
    if seconds < 1:
        return "now"
    if seconds < 90:
        return f"in {number(round(seconds))} s"
    minutes = round(seconds / 60)
    if minutes < 90:
        return f"in {minutes} min"
    hours, minutes = divmod(minutes, 60)
    return f"in {hours} h {minutes} min" if minutes else f"in {hours} h"


def explain(s: Scheduler, job: Job) -> str:
    flavors = s.flavors_for(job)
    if not flavors:
        return f"{job.team.name} has no quota on any instance type; name an instance_type to borrow on"
    reasons = [_on_flavor(s, job, f) for f in flavors]
    if len(reasons) == 1:
        text = reasons[0]
    else:
        text = "; ".join(f"on {s.flavor_names[f]}: {reason}" for f, reason in zip(flavors, reasons, strict=True))
    return text + _reservation_note(s, job)


def _reservation_note(s: Scheduler, job: Job) -> str:
    """A team's head: its reservation, or why it has none."""
    if not s.backfill or job.team.queue.first() is not job:
        return ""
    hold = s.current_plan(s.scope(job.team)).holds.get(job)
    if hold is None:
        return ""
    waits = hold.waits_for
    when = ""
    if waits:
        names = ", ".join(label(w).removeprefix("job ") for w in waits[:3]) + (" ..." if len(waits) > 3 else "")
        when = f", when job{'s' if len(waits) > 1 else ''} {names} end{'s' if len(waits) == 1 else ''}"
    return f"; reserved: starts {in_words(hold.start - s.now)} on {s.flavor_names[hold.f]}{when}"


def _on_flavor(s: Scheduler, job: Job, f: int) -> str:
    book = job.team.book
    code, _ = s.book.check(book, f, job.total, job.nz)
    if code == TEAM:
        return _team_limit(s, job, f) + _preemption_note(s, job, f, code)
    if code == COHORT:
        return _cohort_limit(s, job, f) + _preemption_note(s, job, f, code)
    if code == CAPACITY:
        return _capacity(s, job, f) + _preemption_note(s, job, f, code)
    pool = s.pools[f]
    if pool is not None and code == FITS:
        nodes = pool.place(job.per_pod, job.nz, job.pods)
        if nodes is None:
            return _placement(s, job, f) + _preemption_note(s, job, f, code)
    else:
        nodes = None
    blocker = s.reservation_blocker(job, (f, nodes, False, ())) if code == FITS else None
    if blocker is not None:
        hold = s.current_plan(s.scope(blocker.team)).holds.get(blocker)
        at = f" (it starts {in_words(hold.start - s.now)})" if hold is not None else ""
        return (
            f"fits now, but would delay {label(blocker)}'s reservation{at}; "
            f"waits behind {label(blocker)} of {blocker.team.name}"
        )
    return "admissible now; waits for the next scheduling pass"


def _first(s: Scheduler, job: Job, f: int, test) -> int:
    return next((r for r in job.nz if test(r)), job.nz[0])


def _needs(s: Scheduler, job: Job, f: int, r: int) -> str:
    res = s.resources[r]
    pods = f" ({job.pods} pods of {number(job.per_pod[r])})" if job.pods > 1 else ""
    return f"needs {amount(job.total[r], res)}{pods} of {s.flavor_names[f]}"


def _team_limit(s: Scheduler, job: Job, f: int) -> str:
    book = job.team.book
    r = _first(s, job, f, lambda r: book.usage[f][r] + job.total[r] > book.limit[f][r] + EPS)
    res = s.resources[r]
    used, nominal, limit = book.usage[f][r], book.nominal[f][r], book.borrow_limit[f][r]
    need = number(job.total[r])
    head = f"{_needs(s, job, f, r)}; {book.name} uses {number(used)} of its {number(nominal)}-{unit(res)} quota"
    if not book.may_borrow:
        why = "it has no cohort" if book.cohort is None else f"sharing is {book.team.sharing}"
        tail = f": {number(used)} in use + {need} > {number(nominal)} quota, and it does not borrow ({why})"
    else:
        if book.team.borrowing_limit and res in book.team.borrowing_limit.get(s.flavor_names[f], {}):
            why = "borrowing limit"
        else:
            why = f"borrow limit ({number(book.team.borrow_limit_pct)}%)"
        tail = f": {number(used)} in use + {need} > {number(nominal)} quota + {number(limit)} {why}"
    if job.total[r] > book.limit[f][r] + EPS:
        tail += "; it can never fit as the quota stands"
    return head + tail


def _cohort_limit(s: Scheduler, job: Job, f: int) -> str:
    book = job.team.book
    cohort = book.cohort
    r = job.nz[0]
    for r in job.nz:
        free = s.book.pool(cohort, f, r) - cohort.draw[f][r] - max(0.0, s.book.excess_total[f][r] - cohort.excess[f][r])
        if free + max(0.0, book.nominal[f][r] - book.usage[f][r]) < job.total[r] - EPS:
            break
    res = s.resources[r]
    others = max(0.0, s.book.excess_total[f][r] - cohort.excess[f][r])
    idle = max(0.0, s.book.pool(cohort, f, r) - cohort.draw[f][r] - others)
    return (
        f"{_needs(s, job, f, r)}; {book.name} uses {number(book.usage[f][r])} of its "
        f"{number(book.nominal[f][r])}-{unit(res)} quota and cohort {cohort.name} has "
        f"{amount(idle, res)} idle to lend"
    )


def _capacity(s: Scheduler, job: Job, f: int) -> str:
    book = job.team.book
    cap_row, used_row = s.book.capacity_total[f], s.book.used[f]
    r = _first(s, job, f, lambda r: used_row[r] + job.total[r] > cap_row[r] + EPS)
    res, name = s.resources[r], s.flavor_names[f]
    cap = cap_row[r]
    in_use = f"{number(used_row[r])} in use"
    if book.nominal[f][r] > cap + EPS:
        return (
            f"quota of {amount(book.nominal[f][r], res)} on {name} exceeds the cluster's {number(cap)}; "
            f"waiting for capacity ({in_use}, {_needs(s, job, f, r)})"
        )
    free = max(0.0, cap - used_row[r])
    return (
        f"{_needs(s, job, f, r)}; only {number(free)} of the cluster's {amount(cap, res)} of {name} are free ({in_use})"
    )


def _placement(s: Scheduler, job: Job, f: int) -> str:
    pool = s.pools[f]
    r = pool.key if job.per_pod[pool.key] > 0 else job.nz[0]
    res = s.resources[r]
    gap = pool.largest_gap(r)
    if job.pods == 1:
        free = amount(job.per_pod[r], res, "free")
        return f"quota allows it, but no node has {free} (the largest gap is {number(gap)})"
    fit = pool.pods_placeable(job.per_pod, job.nz, job.pods)  # below job.pods here, so no node's count was capped
    return (
        f"quota allows it, but it needs {job.pods} pods with {amount(job.per_pod[r], res, 'free')} each on "
        f"{s.flavor_names[f]} nodes; only {fit} fit now (the largest gap is {number(gap)})"
    )


def _key_resource(s: Scheduler, job: Job) -> int:
    """The resource a job is counted in: its first accelerator, else vCPUs, else whatever it asks for."""
    accelerators = [r for r in job.nz if s.resources[r] not in ("cpu", "memory")]
    cpu = [r for r in job.nz if s.resources[r] == "cpu"]
    return (accelerators or cpu or list(job.nz))[0]


def _preemption_note(s: Scheduler, job: Job, f: int, code: int) -> str:
    team = job.team
    book = team.book
    notes = []
    if team.within == "Never" and any(v.priority < job.priority for v in team.running[f]):
        notes.append("its team does not preempt its own lower-priority work")
    if book.cohort is not None:
        r = job.nz[0]
        if all(book.usage[f][r] + job.total[r] <= book.nominal[f][r] + EPS for r in job.nz):
            if team.reclaim == "Never":
                notes.append("its team does not reclaim lent quota (reclaim_within_cohort Never)")
            elif team.reclaim == "LowerPriority":
                notes.append("what it lent runs work of equal or higher priority")
        elif s.fair and book.may_borrow and code == COHORT:
            r = _key_resource(s, job)
            notes.append(f"its fair share is {amount(s.fair_share(team)[f][r], s.resources[r])}")
    return "".join("; " + note for note in notes)

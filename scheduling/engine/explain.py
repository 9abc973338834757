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


def explain(s: Scheduler, job: Job) -> str:
    flavors = s.flavors_for(job)
    if not flavors:
        return f"{job.team.name} has no quota on any instance type; name an instance_type to borrow on"
    reasons = [_on_flavor(s, job, f) for f in flavors]
    if len(reasons) == 1:
        return reasons[0]
    return "; ".join(f"on {s.flavor_names[f]}: {reason}" for f, reason in zip(flavors, reasons, strict=True))


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
        return _placement(s, job, f) + _preemption_note(s, job, f, code)
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
    head = f"{_needs(s, job, f, r)}; {book.name} uses {number(used)} of its {number(nominal)}-{unit(res)} quota"
    if not book.may_borrow:
        why = "it has no cohort" if book.cohort is None else f"sharing is {book.team.sharing}"
        tail = f" and does not borrow ({why})"
    else:
        more = max(0.0, limit - max(0.0, used - nominal))
        if book.team.borrowing_limit and res in book.team.borrowing_limit.get(s.flavor_names[f], {}):
            why = f"borrowing limit {number(limit)}"
        else:
            why = f"borrow limit {number(book.team.borrow_limit_pct)}%"
        tail = f" and may borrow {number(more)} more ({why})"
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
    fit = pool.fits_count(job.per_pod, job.nz)
    return (
        f"quota allows it, but its {job.pods} pods of {amount(job.per_pod[r], res)} need a node each and "
        f"only {fit} fit on the free {s.flavor_names[f]} nodes (the largest gap is {number(gap)})"
    )


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
            notes.append(f"its fair share is {amount(s.fair_share(team)[f][r], s.resources[r])}")
    return "".join("; " + note for note in notes)

"""Pods on nodes: best-fit placement of a gang onto one instance type's nodes.

Nodes are bucketed by the free amount of one key resource (the first accelerator, else vCPUs), and within
that by all their free amounts, so finding the tightest node that fits a pod looks at a few buckets rather
than every node, and never at a node that lacks some other resource the pod needs. A bucket keeps its
nodes in ascending order and buckets are visited in order of their free amounts, so where a gang goes
depends only on what is free where, never on the order of earlier changes (a plan kept across events
places its holds exactly as a plan made afresh would).
"""

from __future__ import annotations

from bisect import bisect_left, insort

from .quota import EPS, is_accelerator


class NodePool:
    def __init__(self, capacity: list[float], count: int, resources: list[str]):
        self.capacity = capacity
        self.free = [list(capacity) for _ in range(count)]
        present = [r for r, amount in enumerate(capacity) if amount > 0]
        accelerators = [r for r in present if is_accelerator(resources[r])]
        cpu = [r for r in present if resources[r] == "cpu"]
        self.key = (accelerators or cpu or present or [0])[0]
        self.buckets: dict[float, dict[tuple, list[int]]] = {}
        self._moved: dict[int, tuple] = {}  # nodes changed since they were filed -> the vector they are filed by
        for node in range(count):
            self._file(node)

    def _refile(self) -> None:
        """File again the nodes whose free amounts changed since the buckets were last read (a plan takes
        and gives back the same room many times between two placements)."""
        buckets, key, free = self.buckets, self.key, self.free
        for node, vector in self._moved.items():
            now = tuple(free[node])
            if now != vector:  # _unfile(node, vector) and _file(node), inlined: a plan refiles thousands of nodes
                shapes = buckets[vector[key]]
                bucket = shapes[vector]
                del bucket[bisect_left(bucket, node)]
                if not bucket:
                    del shapes[vector]
                    if not shapes:
                        del buckets[vector[key]]
                insort(buckets.setdefault(now[key], {}).setdefault(now, []), node)
        self._moved.clear()

    def _file(self, node: int) -> None:
        free = self.free[node]
        insort(self.buckets.setdefault(free[self.key], {}).setdefault(tuple(free), []), node)

    def place(self, per_pod, nz, pods: int, extra: dict[int, list[float]] | None = None) -> list[int] | None:
        """Nodes for every pod of a gang (best fit), or None if they do not all fit.

        `extra` changes the free amounts on some nodes: those it adds to (as if workloads there were
        preempted) are tried first; those it only takes from (room held for others later) are tried in their
        usual turn, with what is left on them.
        """
        if self._moved:
            self._refile()
        key, need = self.key, per_pod[self.key]
        free = self.free
        order = ()
        if extra:
            # the nodes it adds to (some resource above 0), tightest first, as best fit wants
            order = sorted(
                (n for n, more in extra.items() if max(more) > 0),
                key=lambda n: (free[n][key] + extra[n][key], n),
            )
        candidates = None  # the filed buckets that fit one pod, listed once some pod needs them
        placed: dict[int, int] = {}
        out: list[int] = []
        for _ in range(pods):
            node = self._first_fit(order, per_pod, nz, placed, extra)
            if node is None:
                if candidates is None:
                    candidates = [
                        nodes
                        for k in sorted(self.buckets)
                        if k + EPS >= need
                        for vector, nodes in sorted(self.buckets[k].items())
                        if all(vector[r] + EPS >= per_pod[r] for r in nz)
                    ]
                for bucket in candidates:
                    node = self._first_fit(bucket, per_pod, nz, placed, extra)
                    if node is not None:
                        break
            if node is None:
                return None
            placed[node] = placed.get(node, 0) + 1
            out.append(node)
        return out

    def _first_fit(self, nodes, per_pod, nz, placed, extra) -> int | None:
        for node in nodes:
            free = self.free[node]
            more = extra.get(node) if extra else None
            already = placed.get(node, 0) + 1
            if more is None:
                if all(free[r] - already * per_pod[r] >= -EPS for r in nz):
                    return node
            elif all(free[r] + more[r] - already * per_pod[r] >= -EPS for r in nz):
                return node
        return None

    def pods_fit(self, need: float) -> int:
        """How many pods needing `need` of the key resource fit on the free nodes (other resources aside)."""
        if self._moved:
            self._refile()
        return sum(
            len(nodes) * int((k + EPS) // need)
            for k, shapes in self.buckets.items()
            if k + EPS >= need
            for nodes in shapes.values()
        )

    def can_place(self, per_pod, nz, pods: int, extra: dict[int, list[float]] | None = None) -> bool:
        """Whether `place` would find nodes for the gang, without choosing them: pods are all alike, so its first
        fit puts on each node it visits as many as fit there (by its own test), and succeeds exactly when the
        nodes it visits hold `pods` in all. It visits the nodes `extra` adds to and the nodes filed in buckets
        that fit one pod; a node is counted once, with `extra` applied. Reads the buckets and the nodes of
        `extra` only, never every node."""
        key, need = self.key, per_pod[self.key]

        def filed_fits(vector) -> bool:
            return vector[key] + EPS >= need and all(vector[r] + EPS >= per_pod[r] for r in nz)

        extra = extra or {}
        total = self.pods_placeable(per_pod, nz, pods)
        if not extra:
            return total >= pods
        for node, more in extra.items():
            free = self.free[node]
            if filed_fits(free):
                total -= pods_on(free, per_pod, nz, pods)  # counted above without `extra`
            elif not any(b > 0 for b in more):
                continue
            total += pods_on([a + b for a, b in zip(free, more, strict=True)], per_pod, nz, pods)
        return total >= pods

    def pods_placeable(self, per_pod, nz, most: int) -> int:
        """How many pods of this shape `place` would put on the free nodes, counting at most `most` per node
        (the nodes filed in buckets that fit one pod, as can_place counts them: place succeeds exactly when this
        reaches the gang's pods)."""
        if self._moved:
            self._refile()
        need = per_pod[self.key]
        total = 0
        for k, shapes in self.buckets.items():
            if k + EPS < need:
                continue
            for vector, nodes in shapes.items():
                if all(vector[r] + EPS >= per_pod[r] for r in nz):
                    total += pods_on(vector, per_pod, nz, most) * len(nodes)
        return total

    def pods_room_empty(self, per_pod, nz) -> int:
        """At least as many pods of this shape as `place` could ever put on these nodes, whatever runs (a node's
        free room plus what runs on it is at most its capacity; counted a little looser than place's test)."""
        return _room(self.capacity, per_pod, nz) * len(self.free) if nz else 1 << 62

    def still_fits(self, nodes: list[int], per_pod, nz) -> bool:
        pods: dict[int, int] = {}
        for node in nodes:
            pods[node] = pods.get(node, 0) + 1
        return all(self.free[node][r] - count * per_pod[r] >= -EPS for node, count in pods.items() for r in nz)

    def take(self, nodes: list[int], per_pod, nz, sign: int = 1) -> None:
        moved = self._moved
        for node in nodes:
            free = self.free[node]
            if node not in moved:
                moved[node] = tuple(free)
            for r in nz:
                amount = free[r] - sign * per_pod[r]
                free[r] = 0.0 if -EPS < amount < EPS else amount

    def release(self, nodes: list[int], per_pod, nz) -> None:
        self.take(nodes, per_pod, nz, sign=-1)

    def largest_gap(self, r: int) -> float:
        return max((free[r] for free in self.free), default=0.0)


def _room(vector, per_pod, nz) -> int:
    """Pods of this shape that fit in `vector`, a little looser than place's own test (never fewer)."""
    return max(0, min(int((vector[r] + 2 * EPS) // per_pod[r]) for r in nz))


def pods_on(free, per_pod, nz, most: int) -> int:
    """How many pods `place` puts on a node with `free` (its test, pod after pod: the test holds for the first
    k pods and fails from then on), at most `most`. A division guesses k, the test itself settles it."""
    k = min([most] + [int((free[r] + EPS) // per_pod[r]) for r in nz if per_pod[r] > 0])
    k = max(k, 0)

    def fits(n: int) -> bool:
        return all(free[r] - n * per_pod[r] >= -EPS for r in nz)

    while k > 0 and not fits(k):
        k -= 1
    while k < most and fits(k + 1):
        k += 1
    return k

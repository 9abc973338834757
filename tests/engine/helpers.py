"""Small builders shared by the engine tests."""

import copy

from scheduling.engine import simulate_scenario


def match(expected, got, path="$"):
    """The spec's partial-match rule: None when `got` contains everything `expected` names."""
    if isinstance(expected, dict):
        if not isinstance(got, dict):
            return f"{path}: expected an object"
        for key, value in expected.items():
            if key not in got:
                return f"{path}.{key}: missing"
            problem = match(value, got[key], f"{path}.{key}")
            if problem:
                return problem
        return None
    if isinstance(expected, (int, float)) and not isinstance(expected, bool) and isinstance(got, (int, float)):
        return None if abs(expected - got) <= 1e-6 else f"{path}: expected {expected}, got {got}"
    return None if expected == got else f"{path}: expected {expected!r}, got {got!r}"


def gpu_node(count=2, gpus=8, name="gpu-node"):
    return {"name": name, "count": count, "capacity": {"gpu": gpus, "cpu": 8 * gpus, "memory": 64 * gpus}}


def scenario(teams, workloads, cluster=None, policy=None, until=0):
    data = {"teams": teams, "workloads": workloads, "until": until}
    if cluster is not None:
        data["cluster"] = {"instance_types": cluster}
    if policy is not None:
        data["policy"] = policy
    return data


def job(name, team, gpu=1, submit=0, **extra):
    return {"name": name, "team": team, "submit": submit, "requests": {"gpu": gpu}, **extra}


def run(*args, **kwargs):
    return simulate_scenario(scenario(*args, **kwargs))


def with_and_without(owner, flag: str, data: dict) -> tuple[dict, dict]:
    """The scenario's outputs with the class switch `owner.flag` on, then off (put back on afterwards): an
    optimisation that must change no decision is compared with the engine without it."""
    outputs = []
    for value in (True, False):
        setattr(owner, flag, value)
        try:
            outputs.append(simulate_scenario(copy.deepcopy(data)))
        finally:
            setattr(owner, flag, True)
    return outputs[0], outputs[1]


def calls_with_and_without(owner, flag: str, target, name: str, datas) -> tuple[dict, list]:
    """How often `target.name` is called over the scenarios `datas`, with the class switch `owner.flag` on and off
    ({True: calls, False: calls}), and each scenario's outputs with it on and off (see with_and_without): an
    optimisation that saves work must be seen to save it."""
    calls = {True: 0, False: 0}
    original = getattr(target, name)

    def counted(*args, **kwargs):
        calls[getattr(owner, flag)] += 1
        return original(*args, **kwargs)

    setattr(target, name, counted)
    try:
        outputs = [with_and_without(owner, flag, data) for data in datas]
    finally:
        setattr(target, name, original)
    return calls, outputs

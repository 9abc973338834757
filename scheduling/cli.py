"""A small console client for the jobs API, for scientists' laptops: standard library only.

    export PORTAL_URL=http://localhost:8000 PORTAL_TOKEN=gqp_...   # token from your profile page
    python -m scheduling.cli submit --team vision --name vit-ft --accelerators 2 --vcpus 16 --memory 128 \\
        --image nvcr.io/nvidia/pytorch:24.05-py3 --duration 2h
    python -m scheduling.cli list [--state pending] [--team vision] [--all]
    python -m scheduling.cli show 42
    python -m scheduling.cli cancel 42

It needs no Django: copy this one file anywhere with Python 3.11.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import sys
import urllib.error
import urllib.parse
import urllib.request


def duration_seconds(text: str | None) -> int | None:
    if not text:
        return None
    match = re.fullmatch(r"\s*(?:(\d+)h)?\s*(?:(\d+)m)?\s*(?:(\d+)s?)?\s*", text)
    if not match or not any(match.groups()):
        raise SystemExit(f"error: cannot read duration {text!r}; write 45m, 2h, 1h30m or seconds")
    h, m, s = (int(g or 0) for g in match.groups())
    return h * 3600 + m * 60 + s


class Api:
    def __init__(self, url: str, token: str):
        self.url = url.rstrip("/") + "/api/"
        self.token = token

    def call(self, method: str, path: str, body: dict | None = None, query: dict | None = None):
        url = self.url + path + ("?" + urllib.parse.urlencode(query, doseq=True) if query else "")
        data = json.dumps(body).encode() if body is not None else None
        request = urllib.request.Request(url, data=data, method=method)
        request.add_header("Authorization", f"Token {self.token}")
        request.add_header("Accept", "application/json")
        if data is not None:
            request.add_header("Content-Type", "application/json")
        try:
            with urllib.request.urlopen(request, timeout=30) as response:
                return json.loads(response.read() or b"null")
        except urllib.error.HTTPError as exc:
            detail = exc.read().decode(errors="replace")
            with contextlib.suppress(ValueError, AttributeError):
                detail = "; ".join(
                    f"{k}: {' '.join(v) if isinstance(v, list) else v}" for k, v in json.loads(detail).items()
                )
            raise SystemExit(f"error {exc.code}: {detail}") from None
        except urllib.error.URLError as exc:
            raise SystemExit(f"error: cannot reach {self.url}: {exc.reason}") from None


def main(argv=None):
    p = argparse.ArgumentParser(prog="python -m scheduling.cli", description="Jobs on the GPU quota portal")
    p.add_argument("--url", default=os.environ.get("PORTAL_URL", "http://localhost:8000"))
    p.add_argument("--token", default=os.environ.get("PORTAL_TOKEN"))
    sub = p.add_subparsers(dest="action", required=True)
    s = sub.add_parser("submit")
    s.add_argument("--team", required=True)
    s.add_argument("--name", required=True)
    s.add_argument("--image", required=True)
    s.add_argument("--instance-type")
    s.add_argument("--accelerators", type=int, default=0)
    s.add_argument("--vcpus", type=float, default=None, help="per pod (default: proportional share)")
    s.add_argument("--memory", type=float, default=None, help="GiB per pod (default: proportional share)")
    s.add_argument("--pods", type=int, default=1)
    s.add_argument("--priority-class")
    s.add_argument("--command", default="")
    s.add_argument("--duration")
    ls = sub.add_parser("list")
    ls.add_argument("--team")
    ls.add_argument("--state", action="append")
    ls.add_argument("--all", action="store_true", help="everyone's jobs, not only mine")
    for name in ("show", "cancel"):
        sub.add_parser(name).add_argument("job_id", type=int)
    args = p.parse_args(argv)
    if not args.token:
        raise SystemExit("error: set PORTAL_TOKEN (create a token on your profile page) or pass --token")
    api = Api(args.url, args.token)
    if args.action == "submit":
        body = {
            "team": args.team, "name": args.name, "image": args.image, "instance_type": args.instance_type,
            "accelerators": args.accelerators, "vcpus": args.vcpus, "memory_gib": args.memory, "pods": args.pods,
            "priority_class": args.priority_class, "command": args.command,
            "expected_duration_s": duration_seconds(args.duration),
        }  # fmt: skip
        job = api.call("POST", "jobs/", body)
        print(f"submitted job #{job['id']} {job['name']} to {job['team']} ({job['state']})")
    elif args.action == "list":
        query = {"team": args.team or "", "state": args.state or [], "mine": "false" if args.all else "true"}
        jobs = api.call("GET", "jobs/", query={k: v for k, v in query.items() if v})["results"]
        print(f"{'JOBID':>7}  {'NAME':<24} {'TEAM':<16} {'USER':<10} {'STATE':<10} REASON")
        for j in jobs:
            print(f"{j['id']:>7}  {j['name'][:24]:<24} {j['team'][:16]:<16} {j['submitted_by'][:10]:<10} "
                  f"{j['state']:<10} {j['reason'][:80]}")  # fmt: skip
    elif args.action == "show":
        j = api.call("GET", f"jobs/{args.job_id}/")
        print(
            f"job #{j['id']} {j['name']}  team {j['team']}  by {j['submitted_by']}\nstate: {j['state']}  {j['reason']}"
        )
        if j.get("queue_position"):
            q = j["queue_position"]
            print(f"queue: {q['in_team']} of {q['team_queued']} in team, ", end="")
            print(f"{q['in_cluster']} of {q['cluster_queued']} overall")
        if j.get("estimated_start"):
            e = j["estimated_start"]
            label = "reserved start" if e.get("kind") == "reserved" else "estimated start"
            print(f"{label}: {e['at'] or 'unknown'} ({e['note']})")
        for e in j["events"]:
            print(f"  {e['at'][:19]}  {e['from_state'] or '-':>9} -> {e['to_state']:<9} {e['reason']}")
    else:
        j = api.call("POST", f"jobs/{args.job_id}/cancel/", {})
        print(f"cancelled job #{j['id']} {j['name']}")


if __name__ == "__main__":
    sys.exit(main())

"""A small Kubernetes API server for tests: the part of the API the portal's backend uses, over real HTTP.

It keeps namespaces, nodes, batch/v1 Jobs, Kueue objects and Workloads in memory and answers like the
real API server: JSON objects with metadata.resourceVersion, list objects, Status objects for errors
(409 AlreadyExists, 409 Conflict on a stale resourceVersion, 404 NotFound, 422 Invalid), merge and
strategic-merge patches, and watch streams (chunked, newline-delimited JSON events) including a 410
"too old resource version" ERROR event after compaction and connections that drop mid-stream.

The official client talks to it through kubernetes.client.Configuration(host=server.url).
"""

import contextlib
import copy
import json
import re
import socket
import threading
import time
import uuid
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlparse

# (group, plural) -> (kind, namespaced)
RESOURCES = {
    ("", "namespaces"): ("Namespace", False),
    ("", "nodes"): ("Node", False),
    ("batch", "jobs"): ("Job", True),
    ("kueue.x-k8s.io", "resourceflavors"): ("ResourceFlavor", False),
    ("kueue.x-k8s.io", "cohorts"): ("Cohort", False),
    ("kueue.x-k8s.io", "clusterqueues"): ("ClusterQueue", False),
    ("kueue.x-k8s.io", "workloadpriorityclasses"): ("WorkloadPriorityClass", False),
    ("kueue.x-k8s.io", "localqueues"): ("LocalQueue", True),
    ("kueue.x-k8s.io", "workloads"): ("Workload", True),
}
BUILTIN_GROUPS = {"", "batch"}
TRUE = ("1", "t", "T", "true", "True", "TRUE")  # Go's strconv.ParseBool
VERSION = {
    "major": "1",
    "minor": "31",
    "gitVersion": "v1.31.0-fake",
    "gitCommit": "0" * 40,
    "gitTreeState": "clean",
    "buildDate": "2024-08-13T07:28:49Z",
    "goVersion": "go1.22.5",
    "compiler": "gc",
    "platform": "linux/amd64",
}

PATH = re.compile(
    r"^/(?:api/(?P<core>v1)|apis/(?P<group>[^/]+)/(?P<version>[^/]+))"
    r"(?:/namespaces/(?P<ns>[^/]+)(?=/))?/(?P<plural>[^/]+)(?:/(?P<name>[^/]+))?$"
)


def now_iso() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def status_obj(code: int, reason: str, message: str, details: dict | None = None) -> dict:
    return {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure" if code >= 300 else "Success",
        "message": message,
        "reason": reason,
        "details": details or {},
        "code": code,
    }


def merge_patch(target, patch):
    """RFC 7386 JSON merge patch (strategic merge behaves the same for the maps the backend patches)."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    result = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = merge_patch(result.get(key), value)
    return result


def selector_matches(selector: str, labels: dict) -> bool:
    for term in filter(None, (t.strip() for t in (selector or "").split(","))):
        if "!=" in term:
            k, v = term.split("!=", 1)
            if labels.get(k.strip()) == v.strip():
                return False
        elif "=" in term:
            k, v = term.replace("==", "=").split("=", 1)
            if labels.get(k.strip()) != v.strip():
                return False
        elif term.startswith("!"):
            if term[1:] in labels:
                return False
        elif term not in labels:
            return False
    return True


class ApiError(Exception):
    def __init__(self, code, reason, message, details=None):
        super().__init__(message)
        self.status = status_obj(code, reason, message, details)


class FakeApiServer:
    """Start with `FakeApiServer().start()`; `url` is its address; `stop()` closes it and its connections."""

    def __init__(self):
        self.lock = threading.Condition()
        self.rv = 100
        self.objects: dict[tuple[str, str], dict[tuple[str, str], dict]] = {k: {} for k in RESOURCES}
        self.events: dict[tuple[str, str], list[tuple[int, str, dict]]] = {k: [] for k in RESOURCES}
        self.compacted: dict[tuple[str, str], int] = dict.fromkeys(RESOURCES, 0)
        self.requests: list[tuple[str, str, str]] = []  # (method, path, content type)
        self.denied: set[tuple[str, str, str]] = set()  # (group, resource, verb) refused by access reviews
        self.drop_watch_after: int | None = None  # next watch: cut the connection after this many events
        self.interfering_writes = 0  # next PUTs on Jobs: someone else writes first (409 Conflict)
        self.max_watch_seconds = 0.5  # tests do not wait out a real watch timeout
        self.stopping = False
        self.connections: set[socket.socket] = set()
        self.httpd: ThreadingHTTPServer | None = None

    # -- life ---------------------------------------------------------------------------------
    def start(self) -> "FakeApiServer":
        server = self

        class Handler(_Handler):
            fake = server

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()
        return self

    @property
    def port(self) -> int:
        return self.httpd.server_address[1]

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def stop(self) -> None:
        with self.lock:
            self.stopping = True
            self.lock.notify_all()
        self.httpd.shutdown()
        self.httpd.server_close()
        for conn in list(self.connections):
            try:
                conn.shutdown(socket.SHUT_RDWR)
                conn.close()
            except OSError:
                pass

    # -- store ----------------------------------------------------------------------------------
    def _next_rv(self) -> int:
        self.rv += 1
        return self.rv

    def _record(self, res, kind, obj) -> None:
        self.events[res].append((int(obj["metadata"]["resourceVersion"]), kind, copy.deepcopy(obj)))
        self.lock.notify_all()

    def create(self, res, ns, body) -> dict:
        kind, namespaced = RESOURCES[res]
        meta = body.setdefault("metadata", {})
        name = meta.get("name")
        if not name:
            raise ApiError(422, "Invalid", f"{kind} is invalid: metadata.name: Required value: name is required")
        if namespaced:
            if ("", ns) not in self.objects[("", "namespaces")]:
                raise ApiError(404, "NotFound", f'namespaces "{ns}" not found', {"name": ns, "kind": "namespaces"})
            meta["namespace"] = ns
        key = (ns or "", name)
        store = self.objects[res]
        if key in store:
            raise ApiError(
                409,
                "AlreadyExists",
                f'{res[1]}{"." + res[0] if res[0] else ""} "{name}" already exists',
                {"name": name, "group": res[0], "kind": res[1]},
            )
        meta.update(
            uid=str(uuid.uuid4()),
            resourceVersion=str(self._next_rv()),
            creationTimestamp=now_iso(),
            generation=1,
        )
        meta.pop("deletionTimestamp", None)
        if res == ("batch", "jobs"):
            body["spec"].setdefault("suspend", False)
            body["spec"].setdefault("backoffLimit", 6)
            body["status"] = {}
        if res == ("", "namespaces"):
            body["status"] = {"phase": "Active"}
        store[key] = body
        self._record(res, "ADDED", body)
        return body

    def get(self, res, ns, name) -> dict:
        obj = self.objects[res].get((ns or "", name))
        if obj is None:
            group = f".{res[0]}" if res[0] else ""
            raise ApiError(404, "NotFound", f'{res[1]}{group} "{name}" not found', {"name": name, "kind": res[1]})
        return obj

    def update(self, res, ns, name, body, *, from_patch=False) -> dict:
        current = self.get(res, ns, name)
        if res == ("batch", "jobs") and self.interfering_writes > 0 and not from_patch:
            self.interfering_writes -= 1
            self.touch(res, ns, name)  # the Job controller wrote in between
            current = self.get(res, ns, name)
        sent_rv = (body.get("metadata") or {}).get("resourceVersion")
        if not from_patch and not sent_rv:
            raise ApiError(
                422,
                "Invalid",
                f'{RESOURCES[res][0]} "{name}" is invalid: metadata.resourceVersion: '
                "Invalid value: 0x0: must be specified for an update",
            )
        if sent_rv and sent_rv != current["metadata"]["resourceVersion"]:
            group = f".{res[0]}" if res[0] else ""
            raise ApiError(
                409,
                "Conflict",
                f'Operation cannot be fulfilled on {res[1]}{group} "{name}": the object has been modified; '
                "please apply your changes to the latest version and try again",
                {"name": name, "group": res[0], "kind": res[1]},
            )
        if res == ("batch", "jobs"):
            self._validate_job_update(current, body)
            body["status"] = current.get("status", {})  # status is a subresource
        meta = body.setdefault("metadata", {})
        for keep in ("uid", "creationTimestamp", "namespace", "name"):
            if keep in current["metadata"]:
                meta[keep] = current["metadata"][keep]
        changed = body.get("spec") != current.get("spec")
        meta["generation"] = current["metadata"].get("generation", 1) + (1 if changed else 0)
        meta["resourceVersion"] = str(self._next_rv())
        self.objects[res][(ns or "", name)] = body
        self._record(res, "MODIFIED", body)
        return body

    @staticmethod
    def _validate_job_update(old, new):
        # As the real API: the pod template may change only while the Job is suspended.
        if not old["spec"].get("suspend") and new["spec"].get("template") != old["spec"].get("template"):
            raise ApiError(
                422,
                "Invalid",
                f'Job.batch "{old["metadata"]["name"]}" is invalid: spec.template: Invalid value: field is immutable',
            )

    def patch(self, res, ns, name, patch) -> dict:
        current = self.get(res, ns, name)
        merged = merge_patch(copy.deepcopy(current), patch)
        return self.update(res, ns, name, merged, from_patch=True)

    def delete(self, res, ns, name) -> dict:
        obj = self.get(res, ns, name)
        del self.objects[res][(ns or "", name)]
        obj = copy.deepcopy(obj)
        obj["metadata"]["resourceVersion"] = str(self._next_rv())
        self._record(res, "DELETED", obj)
        return obj

    def touch(self, res, ns, name, status: dict | None = None) -> dict:
        """A write by someone else (a controller): merges status, bumps the resourceVersion."""
        obj = self.get(res, ns, name)
        if status is not None:
            obj["status"] = merge_patch(obj.get("status") or {}, status)
        obj["metadata"]["resourceVersion"] = str(self._next_rv())
        self._record(res, "MODIFIED", obj)
        return obj

    # -- helpers for tests (thread-safe) ----------------------------------------------------------
    def add_namespace(self, name):
        with self.lock:
            return self.create(
                ("", "namespaces"), None, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}
            )

    def add_node(
        self,
        name,
        instance_type=None,
        *,
        gpus=0,
        neuron=0,
        cpu="192",
        memory="2147483648Ki",
        ready=True,
        labels=None,
        product="",
    ):
        node_labels = dict(labels or {})
        if instance_type:
            node_labels["node.kubernetes.io/instance-type"] = instance_type
        if product:
            node_labels["nvidia.com/gpu.product"] = product
        capacity = {"cpu": cpu, "memory": memory, "pods": "110"}
        allocatable = {"cpu": f"{int(cpu) * 1000 - 350}m", "memory": "2000000000Ki", "pods": "110"}
        if gpus:
            capacity["nvidia.com/gpu"] = allocatable["nvidia.com/gpu"] = str(gpus)
        if neuron:
            capacity["aws.amazon.com/neurondevice"] = allocatable["aws.amazon.com/neurondevice"] = str(neuron)
        body = {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {"name": name, "labels": node_labels},
            "spec": {},
            "status": {
                "capacity": capacity,
                "allocatable": allocatable,
                "conditions": [{"type": "Ready", "status": "True" if ready else "False", "reason": "KubeletReady"}],
            },
        }
        with self.lock:
            return self.create(("", "nodes"), None, body)

    def job(self, ns, name) -> dict | None:
        with self.lock:
            obj = self.objects[("batch", "jobs")].get((ns, name))
            return copy.deepcopy(obj) if obj else None

    def jobs(self) -> list[dict]:
        with self.lock:
            return [copy.deepcopy(o) for o in self.objects[("batch", "jobs")].values()]

    def set_job_status(self, ns, name, **status):
        with self.lock:
            return self.touch(("batch", "jobs"), ns, name, status)

    def job_running(self, ns, name, pods=1):
        return self.set_job_status(ns, name, active=pods, ready=pods, startTime=now_iso())

    def job_finished(self, ns, name, *, failed=False, message=""):
        kind = "Failed" if failed else "Complete"
        cond = {
            "type": kind,
            "status": "True",
            "lastTransitionTime": now_iso(),
            "reason": "BackoffLimitExceeded" if failed else "",
            "message": message,
        }
        extra = {"failed": 1} if failed else {"succeeded": 1, "completionTime": now_iso()}
        return self.set_job_status(ns, name, active=0, ready=0, conditions=[cond], **extra)

    def delete_job(self, ns, name):
        with self.lock:
            return self.delete(("batch", "jobs"), ns, name)

    def add_workload(
        self, ns, job_name, *, queue, priority=0, conditions=(), cluster_queue="", requeue=None, created=None
    ):
        body = {
            "apiVersion": "kueue.x-k8s.io/v1beta1",
            "kind": "Workload",
            "metadata": {
                "name": f"job-{job_name}-{uuid.uuid4().hex[:5]}",
                "namespace": ns,
                "ownerReferences": [
                    {
                        "apiVersion": "batch/v1",
                        "kind": "Job",
                        "name": job_name,
                        "uid": str(uuid.uuid4()),
                        "controller": True,
                        "blockOwnerDeletion": True,
                    }
                ],
            },
            "spec": {"queueName": queue, "priority": priority, "podSets": [{"name": "main", "count": 1}]},
            "status": {
                "conditions": [dict(c, lastTransitionTime=c.get("lastTransitionTime", now_iso())) for c in conditions]
            },
        }
        if cluster_queue:
            body["status"]["admission"] = {"clusterQueue": cluster_queue, "podSetAssignments": []}
        if requeue:
            body["status"]["requeueState"] = requeue
        with self.lock:
            obj = self.create(("kueue.x-k8s.io", "workloads"), ns, body)
            if created:
                obj["metadata"]["creationTimestamp"] = created
            return obj

    def kueue_object(self, plural, name, ns=None) -> dict | None:
        with self.lock:
            obj = self.objects[("kueue.x-k8s.io", plural)].get((ns or "", name))
            return copy.deepcopy(obj) if obj else None

    def compact(self):
        """Forget history: watches from any older resourceVersion get 410 Gone."""
        with self.lock:
            for res in RESOURCES:
                self.compacted[res] = self.rv
                self.events[res] = []

    # -- queries ----------------------------------------------------------------------------------
    def list(self, res, ns, selector, limit=0, token=None) -> dict:
        kind, _ = RESOURCES[res]
        items = [
            copy.deepcopy(o)
            for (ons, _n), o in sorted(self.objects[res].items())
            if (ns is None or ons == ns) and selector_matches(selector, o["metadata"].get("labels") or {})
        ]
        start = int(token or 0)
        page = items[start : start + limit] if limit else items[start:]
        more = bool(limit) and start + limit < len(items)
        if res[0] in BUILTIN_GROUPS:
            for item in page:
                item.pop("apiVersion", None)
                item.pop("kind", None)
        api_version = f"{res[0]}/v1" if res[0] == "batch" else ("v1" if not res[0] else "kueue.x-k8s.io/v1beta1")
        meta = {"resourceVersion": str(self.rv)}
        if more:
            meta["continue"] = str(start + limit)
        return {"kind": f"{kind}List", "apiVersion": api_version, "metadata": meta, "items": page}


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    fake: FakeApiServer

    def log_message(self, *args):  # quiet
        pass

    def setup(self):
        super().setup()
        self.fake.connections.add(self.connection)

    def finish(self):
        self.fake.connections.discard(self.connection)
        with contextlib.suppress(OSError):
            super().finish()

    def _send(self, code: int, body: dict):
        data = json.dumps(body).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _body(self):
        length = int(self.headers.get("Content-Length") or 0)
        return json.loads(self.rfile.read(length) or b"{}")

    def do_GET(self):
        self._dispatch("GET")

    def do_POST(self):
        self._dispatch("POST")

    def do_PUT(self):
        self._dispatch("PUT")

    def do_PATCH(self):
        self._dispatch("PATCH")

    def do_DELETE(self):
        self._dispatch("DELETE")

    def _dispatch(self, method):
        fake = self.fake
        url = urlparse(self.path)
        query = {k: v[-1] for k, v in parse_qs(url.query).items()}
        fake.requests.append((method, url.path, self.headers.get("Content-Type", "")))
        try:
            if url.path.rstrip("/") == "/version":
                return self._send(200, VERSION)
            if url.path == "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews" and method == "POST":
                review = self._body()
                attrs = review.get("spec", {}).get("resourceAttributes", {})
                denied = (attrs.get("group", ""), attrs.get("resource"), attrs.get("verb")) in fake.denied
                review["status"] = {"allowed": not denied}
                return self._send(201, review)
            match = PATH.match(url.path)
            if not match:
                raise ApiError(404, "NotFound", "the server could not find the requested resource")
            group = "" if match["core"] else match["group"]
            res = (group, match["plural"])
            if res not in RESOURCES:
                raise ApiError(404, "NotFound", "the server could not find the requested resource")
            ns, name = match["ns"], match["name"]
            if RESOURCES[res][1] is False and ns:
                raise ApiError(404, "NotFound", "the server could not find the requested resource")
            if method == "GET" and not name and query.get("watch") in TRUE:
                return self._watch(res, ns, query)
            with fake.lock:
                code, body = self._handle(method, res, ns, name, query)
            self._send(code, body)
        except ApiError as exc:
            self._send(exc.status["code"], exc.status)

    def _handle(self, method, res, ns, name, query):
        fake = self.fake
        if method == "GET" and not name:
            return 200, fake.list(
                res, ns, query.get("labelSelector", ""), int(query.get("limit") or 0), query.get("continue")
            )
        if method == "GET":
            return 200, fake.get(res, ns, name)
        if method == "POST" and not name:
            return 201, fake.create(res, ns, self._body())
        if method == "PUT" and name:
            return 200, fake.update(res, ns, name, self._body())
        if method == "PATCH" and name:
            kind = self.headers.get("Content-Type", "")
            if kind not in ("application/merge-patch+json", "application/strategic-merge-patch+json"):
                raise ApiError(415, "UnsupportedMediaType", f"the body of the request was in an unknown format: {kind}")
            return 200, fake.patch(res, ns, name, self._body())
        if method == "DELETE" and name:
            obj = fake.delete(res, ns, name)
            out = status_obj(200, "", "", {"name": name, "kind": res[1], "uid": obj["metadata"]["uid"]})
            return 200, out
        raise ApiError(405, "MethodNotAllowed", f"{method} is not supported here")

    # -- watch ----------------------------------------------------------------------------------
    def _chunk(self, event: dict):
        data = json.dumps(event).encode() + b"\n"
        self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
        self.wfile.flush()

    def _watch(self, res, ns, query):
        fake = self.fake
        selector = query.get("labelSelector", "")
        timeout = min(float(query.get("timeoutSeconds") or 1800), fake.max_watch_seconds)
        deadline = time.monotonic() + timeout
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        with fake.lock:
            drop_after, fake.drop_watch_after = fake.drop_watch_after, None
            since = query.get("resourceVersion")
            if since and int(since) < fake.compacted[res]:
                msg = f"too old resource version: {since} ({fake.compacted[res]})"
                self._chunk({"type": "ERROR", "object": status_obj(410, "Expired", msg)})
                self.wfile.write(b"0\r\n\r\n")
                return
            if since:
                cursor = int(since)
                backlog = []
            else:  # no resourceVersion: the current objects as ADDED, then changes
                cursor = fake.rv
                backlog = [
                    ("ADDED", copy.deepcopy(o))
                    for (ons, _), o in sorted(fake.objects[res].items())
                    if ns is None or ons == ns
                ]
        sent = 0

        def send(kind, obj):
            nonlocal sent
            if drop_after is not None and sent >= drop_after:
                self.connection.shutdown(socket.SHUT_RDWR)  # cut mid-stream, no final chunk
                self.close_connection = True
                raise ConnectionAbortedError
            self._chunk({"type": kind, "object": obj})
            sent += 1

        try:
            for kind, obj in backlog:
                if selector_matches(selector, obj["metadata"].get("labels") or {}):
                    send(kind, obj)
            while True:
                with fake.lock:
                    pending = [e for e in fake.events[res] if e[0] > cursor]
                    if not pending:
                        remaining = deadline - time.monotonic()
                        if remaining <= 0 or fake.stopping:
                            break
                        fake.lock.wait(remaining)
                        continue
                for rv, kind, obj in pending:
                    cursor = rv
                    if (ns is None or obj["metadata"].get("namespace") == ns) and selector_matches(
                        selector, obj["metadata"].get("labels") or {}
                    ):
                        send(kind, obj)
            self.wfile.write(b"0\r\n\r\n")
            self.wfile.flush()
        except (ConnectionAbortedError, BrokenPipeError, ConnectionResetError, OSError):
            self.close_connection = True

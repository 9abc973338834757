"""A list+watch cache of the portal's Jobs: relist when the resourceVersion is too old, reconnect on drops.

One watcher per API server lives for the life of the process, so a worker that looks every few seconds
keeps its last resourceVersion and only reads what changed since.
"""

import json
import logging
import math
import threading
import time

import urllib3
from kubernetes import client
from kubernetes.client.rest import ApiException
from kubernetes.watch.watch import iter_resp_lines

from scheduling.backends.base import ClusterUnreachable

from .client import call, request_timeout, translate
from .manifests import JOB_SELECTOR

log = logging.getLogger(__name__)

MAX_RECONNECTS = 5


class ResourceVersionGone(Exception):
    """410 Gone: the watch's resourceVersion is older than the API server keeps; list again."""


def key_of(obj: dict) -> tuple[str, str]:
    meta = obj.get("metadata") or {}
    return meta.get("namespace", ""), meta.get("name", "")


class JobWatcher:
    def __init__(self, selector: str = JOB_SELECTOR):
        self.selector = selector
        self.jobs: dict[tuple[str, str], dict] = {}
        self.resource_version: str | None = None
        self.relists = 0
        self.reconnects = 0
        self.lock = threading.Lock()

    def relist(self, batch: client.BatchV1Api) -> None:
        jobs: dict[tuple[str, str], dict] = {}
        token = None
        while True:
            kwargs = {"label_selector": self.selector, "limit": 500, "_preload_content": False}
            if token:
                kwargs["_continue"] = token
            resp = call("list Jobs", batch.list_job_for_all_namespaces, **kwargs)
            page = json.loads(resp.data)
            for obj in page.get("items") or []:
                jobs[key_of(obj)] = obj
            meta = page.get("metadata") or {}
            token = meta.get("continue")
            if not token:
                break
        self.jobs, self.resource_version = jobs, meta.get("resourceVersion")
        self.relists += 1

    def sync(self, batch: client.BatchV1Api, *, wait: float) -> dict[tuple[str, str], dict]:
        """Bring the cache up to date: list once, then watch for `wait` seconds, reconnecting on drops."""
        with self.lock:
            if self.resource_version is None:
                self.relist(batch)
            deadline = time.monotonic() + wait
            drops = 0
            while True:
                try:
                    self._watch(batch, max(1, math.ceil(deadline - time.monotonic())))
                except ResourceVersionGone:
                    log.info("Job watch: resourceVersion %s expired, listing again", self.resource_version)
                    self.relist(batch)
                except ClusterUnreachable:
                    drops += 1
                    self.reconnects += 1
                    if drops > MAX_RECONNECTS:
                        raise
                    log.info("Job watch dropped; reconnecting from resourceVersion %s", self.resource_version)
                    continue
                if time.monotonic() >= deadline:
                    return dict(self.jobs)

    def _watch(self, batch: client.BatchV1Api, seconds: int) -> None:
        resp = call(
            "watch Jobs",
            batch.list_job_for_all_namespaces,
            label_selector=self.selector,
            watch=True,
            allow_watch_bookmarks=True,
            resource_version=self.resource_version,
            timeout_seconds=seconds,
            _preload_content=False,
            _request_timeout=(request_timeout(), seconds + request_timeout()),
            ok_status=(410,),
        )
        if isinstance(resp, ApiException):
            raise ResourceVersionGone()
        try:
            for line in iter_resp_lines(resp):
                if line:
                    self._apply(json.loads(line))
        except (urllib3.exceptions.HTTPError, OSError) as exc:
            raise translate(exc, "watch Jobs") from exc
        finally:
            resp.release_conn()

    def _apply(self, event: dict) -> None:
        kind, obj = event.get("type"), event.get("object") or {}
        if kind == "ERROR":
            if obj.get("code") == 410:
                raise ResourceVersionGone()
            raise ClusterUnreachable(f"watch Jobs: {obj.get('reason')}: {obj.get('message')}")
        rv = (obj.get("metadata") or {}).get("resourceVersion")
        if kind in ("ADDED", "MODIFIED"):
            self.jobs[key_of(obj)] = obj
        elif kind == "DELETED":
            self.jobs.pop(key_of(obj), None)
        if rv:
            self.resource_version = rv


_watchers: dict[str, JobWatcher] = {}
_registry_lock = threading.Lock()


def watcher_for(host: str) -> JobWatcher:
    with _registry_lock:
        return _watchers.setdefault(host, JobWatcher())

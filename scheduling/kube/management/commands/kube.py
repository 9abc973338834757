"""`manage.py kube check|inventory|kueue-apply|workloads`: the Kubernetes backend from the command line."""

import json

from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError

from scheduling.backends.base import ClusterUnreachable
from scheduling.kube import services


class Command(BaseCommand):
    help = "Check the connection to Kubernetes, read its inventory, apply Kueue objects, read Kueue workloads."

    def add_arguments(self, parser):
        sub = parser.add_subparsers(dest="action", required=True)
        sub.add_parser("check", help="reach the API server and verify the RBAC the portal needs")
        inv = sub.add_parser("inventory", help="read the nodes and show how they differ from the configured inventory")
        inv.add_argument("--apply", action="store_true", help="apply the differences (as with the page's button)")
        inv.add_argument("--admin", default="", help="username of the admin applying (recorded with the change)")
        kq = sub.add_parser("kueue-apply", help="create or replace the Kueue objects rendered from allocations")
        kq.add_argument("--dry-run", action="store_true", help="print the objects as JSON instead")
        sub.add_parser("workloads", help="read Kueue's Workloads back into the portal (Kueue mode)")

    def handle(self, *args, action, **opts):
        try:
            getattr(self, "do_" + action.replace("-", "_"))(**opts)
        except ClusterUnreachable as exc:
            raise CommandError(str(exc)) from exc
        except ValidationError as exc:
            raise CommandError(" ".join(exc.messages)) from exc

    def do_check(self, **opts):
        checks = services.kubernetes_backend().check()
        for c in checks:
            self.stdout.write(f"{'ok  ' if c.ok else 'FAIL'} {c.name}: {c.detail}")
        failed = [c.name for c in checks if not c.ok]
        if failed:
            raise CommandError(f"failed: {', '.join(failed)} (see above)")

    def do_inventory(self, *, apply, admin, **opts):
        snapshot = services.inventory_sync()
        if snapshot.error:
            raise CommandError(snapshot.error)
        for item in snapshot.items:
            acc = (
                f"{item['accelerators']} x {item['accelerator_resource']}"
                if item["accelerators"]
                else "no accelerators"
            )
            self.stdout.write(
                f"{item['extra'].get('node_group')}: {item['node_count']} x {item['instance_type']} "
                f"({acc}, {item['vcpus']} vCPUs, {item['memory_gib']} GiB)"
            )
        for warning in snapshot.warnings:
            self.stdout.write(f"warning: {warning}")
        if not snapshot.changes:
            self.stdout.write("The cluster matches the configured inventory.")
            return
        for c in snapshot.changes:
            fields = "; ".join(f"{k}: {v[0]} -> {v[1]}" for k, v in c["fields"].items())
            self.stdout.write(f"{c['action']} {c['kind']} {c['name']}: {fields}")
        if apply:
            from quotas.models import User

            user = User.objects.filter(username=admin).first()
            if user is None or not user.is_portal_admin:
                raise CommandError("--apply needs --admin <username of a portal admin>")
            services.inventory_apply(snapshot_id=snapshot.pk, user=user)
            self.stdout.write(f"Applied {len(snapshot.changes)} changes.")
        else:
            self.stdout.write("Review and apply on the Kubernetes page, or run again with --apply --admin <you>.")

    def do_kueue_apply(self, *, dry_run, **opts):
        try:
            objects = services.kueue_objects()
        except ImportError as exc:
            raise CommandError(f"Kueue objects cannot be rendered here: {exc}") from exc
        if dry_run:
            self.stdout.write(json.dumps(objects, indent=2))
            return
        for kind, name, outcome in services.kubernetes_backend().apply_objects(objects):
            self.stdout.write(f"{kind} {name}: {outcome}")

    def do_workloads(self, **opts):
        self.stdout.write(f"{services.workload_status_sync()} jobs updated from Kueue workloads.")

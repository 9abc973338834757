"""deploy/rbac.yaml grants exactly what the backend uses."""

from pathlib import Path

import yaml

from scheduling.backends.kubernetes import required_permissions


def test_the_cluster_role_grants_exactly_the_verbs_the_backend_uses():
    docs = list(yaml.safe_load_all((Path(__file__).parents[2] / "deploy" / "rbac.yaml").read_text()))
    role = next(d for d in docs if d["kind"] == "ClusterRole")
    granted = {
        (g, r, v) for rule in role["rules"] for g in rule["apiGroups"] for r in rule["resources"] for v in rule["verbs"]
    }
    needed = {(g, r, v) for mode in ("portal", "kueue") for g, r, verbs in required_permissions(mode) for v in verbs}
    assert granted == needed
    kinds = {d["kind"] for d in docs}
    assert {"ServiceAccount", "ClusterRole", "ClusterRoleBinding"} <= kinds

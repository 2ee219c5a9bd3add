from __future__ import annotations

from webhook.install import chart, dashboard, kustomize, rbac


def test_the_dashboard_runs_under_its_own_account_never_the_managers() -> None:
    sa, role, binding, deployment, service, _ = dashboard.objects("kueue-system", image="img:1", pull_policy="Always")
    assert binding["subjects"] == [{"kind": "ServiceAccount", "name": dashboard.NAME, "namespace": "kueue-system"}]
    assert deployment["spec"]["template"]["spec"]["serviceAccountName"] == sa["metadata"]["name"] == dashboard.NAME
    verbs = {v for rule in role["rules"] for v in rule["verbs"]}
    assert verbs == {"list", "watch", "create"}  # reads, and creates only token/access reviews
    creates = {r for rule in role["rules"] if "create" in rule["verbs"] for r in rule["resources"]}
    assert creates == {"tokenreviews", "subjectaccessreviews"}
    container = deployment["spec"]["template"]["spec"]["containers"][0]
    assert container["args"][:2] == ["dashboard", "--in-cluster"] and container["image"] == "img:1"
    # TLS (issue 27, finding 5): never --plain-http; its certificate names the Service; probed over HTTPS.
    assert "--plain-http" not in container["args"]
    assert f"--tls-host={dashboard.NAME}.kueue-system.svc" in container["args"]
    assert container["readinessProbe"]["httpGet"]["scheme"] == "HTTPS"
    assert service["spec"]["ports"][0]["port"] == dashboard.PORT
    manager_roles = {r["metadata"]["name"] for r in rbac.manager_rbac("kueue-system", "kueue-controller-manager")}
    assert not any("dashboard" in name for name in manager_roles)


def test_the_dashboard_is_optional_in_both_installs() -> None:
    assert "../dashboard" not in kustomize.render()["default/kustomization.yaml"]
    rendered = chart.render()
    assert rendered["templates/dashboard.yaml"].startswith("{{- if .Values.enableKueueViz }}")
    assert "enableKueueViz: false" in rendered["values.yaml"]


def test_the_dashboard_reads_no_pod_or_event_cluster_wide() -> None:
    """Pods and Events only in namespaces that bind the details role to it (issue 27, Low)."""
    objects = dashboard.objects("kueue-system", image="img:1", pull_policy="Always")
    roles = {o["metadata"]["name"]: o for o in objects if o["kind"] == "ClusterRole"}
    bound = {o["roleRef"]["name"] for o in objects if o["kind"].endswith("Binding")}
    core = lambda role: {r for rule in role["rules"] if rule["apiGroups"] == [""] for r in rule["resources"]}  # noqa: E731
    assert all(core(roles[name]) == set() for name in bound)
    details = roles[dashboard.DETAILS_ROLE]
    assert dashboard.DETAILS_ROLE not in bound and core(details) == {"events", "pods"}
    assert {v for rule in details["rules"] for v in rule["verbs"]} == {"list"}

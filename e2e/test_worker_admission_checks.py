"""AdmissionChecks end to end: the test plays the external check controller.

It creates an AdmissionCheck with a made-up `controllerName`, sets its `Active` condition through
the status subresource, and sets each check's state on the Workload (`status.admissionChecks`)
the way ProvisioningRequest or MultiKueue would. The worker lists the checks on reservation, keeps
the Job suspended until every check is Ready, then starts it with the checks' podSetUpdates;
evicts and requeues on Retry; deactivates on Rejected; and keeps a ClusterQueue inactive while a
check it names is missing or inactive.
"""

from __future__ import annotations

import json
import time
from datetime import UTC, datetime, timedelta
from typing import Any

from e2e.conftest import Kubectl
from e2e.helpers import (
    ClusterObjects,
    cond,
    events,
    flavor,
    job,
    local_queue,
    submit,
    suspended,
    wait_for,
    wait_workload,
    when,
    workload_of,
)

CONTROLLER = "pykueue.e2e/fake-check-controller"
FINALIZER = "kueue.x-k8s.io/resource-in-use"


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def admission_check(name: str) -> dict[str, Any]:
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "AdmissionCheck",
        "metadata": {"name": name},
        "spec": {"controllerName": CONTROLLER},
    }


def checked_queue(name: str, rf: str, checks: list[str], cpu: str = "4") -> dict[str, Any]:
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "ClusterQueue",
        "metadata": {"name": name},
        "spec": {
            "namespaceSelector": {},
            "resourceGroups": [
                {
                    "coveredResources": ["cpu"],
                    "flavors": [{"name": rf, "resources": [{"name": "cpu", "nominalQuota": cpu}]}],
                }
            ],
            "admissionChecksStrategy": {"admissionChecks": [{"name": c} for c in checks]},
        },
    }


def set_active(kubectl: Kubectl, ac: str, status: str) -> None:
    """What the check's own controller does: the AdmissionCheck's Active condition."""
    cond_ = {
        "type": "Active",
        "status": status,
        "reason": "FakeController" if status == "True" else "NotReady",
        "message": "set by the e2e test",
        "lastTransitionTime": _now(),
    }
    kubectl(
        "patch",
        "admissioncheck",
        ac,
        "--subresource=status",
        "--type=merge",
        "-p",
        json.dumps({"status": {"conditions": [cond_]}}),
    )


def set_check(
    kubectl: Kubectl, ns: str, wl: dict[str, Any], ac: str, state: str, message: str = "", **extra: Any
) -> None:
    """What the check's controller does on the Workload: its entry in status.admissionChecks."""
    entry = {"name": ac, "state": state, "message": message, "lastTransitionTime": _now(), **extra}
    checks = [entry if c["name"] == ac else c for c in wl["status"]["admissionChecks"]]
    kubectl(
        "patch",
        "workload",
        "-n",
        ns,
        wl["metadata"]["name"],
        "--subresource=status",
        "--type=merge",
        "-p",
        json.dumps({"status": {"admissionChecks": checks}}),
    )


def setup(kubectl: Kubectl, objs: ClusterObjects, ns: str, *, active: bool = True) -> tuple[str, str]:
    """A flavor, a ClusterQueue requiring one check, a LocalQueue; the check Active if asked."""
    rf, cq, ac = objs.name("ac-rf"), objs.name("ac-cq"), objs.name("ac")
    objs.apply(admission_check(ac))
    if active:
        set_active(kubectl, ac, "True")
    objs.apply(flavor(rf))
    objs.apply(checked_queue(cq, rf, [ac]))
    objs.apply(local_queue(ns, "lq", cq))
    if active:
        wait_for(
            "ClusterQueue active",
            lambda: when(kubectl.get("clusterqueue", cq), lambda o: cond(o, "Active").get("status") == "True"),
        )
    return cq, ac


def brief(c: dict[str, Any]) -> tuple[str, str, str]:
    return c.get("status", ""), c.get("reason", ""), c.get("message", "")


def reserved_with_checks(kubectl: Kubectl, ns: str, job_name: str) -> dict[str, Any]:
    return wait_for(
        "QuotaReserved with the check listed",
        lambda: when(
            workload_of(kubectl, ns, job_name) or {},
            lambda w: (
                cond(w, "QuotaReserved").get("status") == "True"
                and bool((w.get("status") or {}).get("admissionChecks"))
            ),
        ),
    )


def test_job_starts_only_once_the_check_is_ready_with_its_pod_set_updates(
    kubectl: Kubectl, namespace: str, objs: ClusterObjects
) -> None:
    started = time.monotonic()
    cq, ac = setup(kubectl, objs, namespace)
    submit(kubectl, job(namespace, "checked", "lq"))
    wl = reserved_with_checks(kubectl, namespace, "checked")
    assert brief(cond(wl, "QuotaReserved")) == ("True", "QuotaReserved", f"Quota reserved in ClusterQueue {cq}")
    wl = wait_workload(kubectl, namespace, "checked", "Admitted", "False", reason="UnsatisfiedAdmissionChecks")
    assert cond(wl, "Admitted")["message"] == "The workload has not all checks ready"
    [check] = wl["status"]["admissionChecks"]
    assert check | {"lastTransitionTime": None} == {
        "name": ac,
        "state": "Pending",
        "message": "",
        "lastTransitionTime": None,
    }
    assert suspended(kubectl, namespace, "checked")

    # A Pending message reaches the Job as an event; the Job stays suspended.
    set_check(kubectl, namespace, wl, ac, "Pending", "provisioning")
    wait_for(
        "UpdatedAdmissionCheck on the Job",
        lambda: ("Normal", "UpdatedAdmissionCheck", f"{ac}: provisioning") in events(kubectl, namespace, "checked"),
    )
    assert suspended(kubectl, namespace, "checked")
    assert cond(workload_of(kubectl, namespace, "checked") or {}, "Admitted")["status"] == "False"

    updates = [
        {
            "name": "main",
            "labels": {"e2e.pykueue/checked": "yes"},
            "annotations": {"e2e.pykueue/by": ac},
            "nodeSelector": {"e2e.pykueue/zone": "z1"},
            "tolerations": [{"key": "e2e.pykueue/check", "operator": "Exists", "effect": "NoSchedule"}],
        }
    ]
    set_check(
        kubectl,
        namespace,
        workload_of(kubectl, namespace, "checked") or {},
        ac,
        "Ready",
        "capacity found",
        podSetUpdates=updates,
    )
    wl = wait_workload(kubectl, namespace, "checked", "Admitted", "True")
    assert brief(cond(wl, "Admitted")) == ("True", "Admitted", "The workload is admitted")
    assert cond(wl, "QuotaReserved")["status"] == "True"
    spec = wait_for(
        "Job started",
        lambda: when(kubectl.get("job", "-n", namespace, "checked")["spec"], lambda s: s.get("suspend") is False),
    )
    template = spec["template"]
    assert template["metadata"]["labels"]["e2e.pykueue/checked"] == "yes"
    assert template["metadata"]["annotations"]["e2e.pykueue/by"] == ac
    assert template["spec"]["nodeSelector"] == {"instance-type": "on-demand", "e2e.pykueue/zone": "z1"}
    assert {"key": "e2e.pykueue/check", "operator": "Exists", "effect": "NoSchedule"} in template["spec"]["tolerations"]
    # The workload controller's Admitted event is sent asynchronously, after its Admitted=True write.
    admitted = wait_for(
        "the Admitted event",
        lambda: [e for e in events(kubectl, namespace, wl["metadata"]["name"]) if e[1] == "Admitted"],
    )
    assert len(admitted) == 1 and admitted[0][2].startswith(
        f"Admitted by ClusterQueue {cq}, wait time since reservation was "
    )
    print(f"admission checks Ready → Job started: {time.monotonic() - started:.1f}s total")


def test_retry_evicts_releases_quota_and_requeues_after_the_checks_delay(
    kubectl: Kubectl, namespace: str, objs: ClusterObjects
) -> None:
    started = time.monotonic()
    _, ac = setup(kubectl, objs, namespace)
    submit(kubectl, job(namespace, "retried", "lq"))
    wl = reserved_with_checks(kubectl, namespace, "retried")
    first_reservation = cond(wl, "QuotaReserved")["lastTransitionTime"]
    set_check(kubectl, namespace, wl, ac, "Retry", "try again", requeueAfterSeconds=3)

    # The check's delay becomes the requeue time; the workload keeps its quota until then.
    wl = wait_for(
        "requeueAt",
        lambda: when(
            workload_of(kubectl, namespace, "retried") or {},
            lambda w: bool((w["status"].get("requeueState") or {}).get("requeueAt")),
        ),
    )
    check_time = datetime.fromisoformat(wl["status"]["admissionChecks"][0]["lastTransitionTime"].replace("Z", "+00:00"))
    requeue_at = wl["status"]["requeueState"]["requeueAt"]
    assert requeue_at == (check_time + timedelta(seconds=3)).strftime("%Y-%m-%dT%H:%M:%SZ")
    assert cond(wl, "QuotaReserved")["status"] == "True" and cond(wl, "Evicted").get("status") != "True"

    message = f'Evicted due to AdmissionCheck in Retry state: "{ac}" (try again)'

    def readmitted(w: dict[str, Any]) -> bool:
        qr = cond(w, "QuotaReserved")
        return (
            qr.get("status") == "True"
            and qr.get("lastTransitionTime") != first_reservation
            and cond(w, "Requeued").get("status") == "True"
        )

    wl = wait_for(
        "evicted and reserved again",
        lambda: when(workload_of(kubectl, namespace, "retried") or {}, readmitted),
        timeout=20,
    )
    assert cond(wl, "QuotaReserved")["lastTransitionTime"] >= requeue_at  # not before the check's delay
    assert brief(cond(wl, "Evicted")) == ("False", "QuotaReserved", f"Previously: {message}")
    assert brief(cond(wl, "Requeued")) == ("True", "BackoffFinished", "The workload backoff was finished")
    assert brief(cond(wl, "Admitted")) == (
        "False",
        "UnsatisfiedAdmissionChecks",
        "The workload has not all checks ready",
    )
    [check] = wl["status"]["admissionChecks"]
    assert (check["state"], check["message"], check["retryCount"]) == (
        "Pending",
        "Reset to Pending after eviction. Previously: Retry",
        1,
    )
    assert "requeueAt" not in (wl["status"].get("requeueState") or {})
    # The scheduler's QuotaReserved event is sent asynchronously: the second may still be queued.
    reasons = wait_for(
        "the second QuotaReserved event",
        lambda: when(
            [
                (t, r, n)
                for t, r, n in events(kubectl, namespace, wl["metadata"]["name"])
                if r in ("EvictedDueToAdmissionCheck", "QuotaReserved")
            ],
            lambda rs: [r for _, r, _ in rs].count("QuotaReserved") >= 2,
        ),
    )
    assert [r for _, r, _ in reasons] == ["QuotaReserved", "EvictedDueToAdmissionCheck", "QuotaReserved"]
    assert reasons[1] == ("Normal", "EvictedDueToAdmissionCheck", message)
    assert suspended(kubectl, namespace, "retried")
    print(f"Retry → evicted and reserved again: {time.monotonic() - started:.1f}s total")


def test_rejected_deactivates_the_workload(kubectl: Kubectl, namespace: str, objs: ClusterObjects) -> None:
    started = time.monotonic()
    cq, ac = setup(kubectl, objs, namespace)
    submit(kubectl, job(namespace, "rejected", "lq"))
    wl = reserved_with_checks(kubectl, namespace, "rejected")
    set_check(kubectl, namespace, wl, ac, "Rejected", "no capacity")
    detail = f'AdmissionCheck in Rejected state: "{ac}" (no capacity)'
    wl = wait_for(
        "deactivated and released",
        lambda: when(
            workload_of(kubectl, namespace, "rejected") or {},
            lambda w: w["spec"].get("active") is False and cond(w, "QuotaReserved").get("reason") == "Deactivated",
        ),
    )
    assert brief(cond(wl, "Evicted")) == (
        "True",
        "DeactivatedDueToAdmissionCheck",
        f"The workload is deactivated due to {detail}",
    )
    assert brief(cond(wl, "QuotaReserved")) == ("False", "Deactivated", "The workload is deactivated")
    assert not cond(wl, "DeactivationTarget")
    assert "admission" not in wl["status"]
    [check] = wl["status"]["admissionChecks"]
    assert (check["state"], check["message"]) == ("Pending", "Reset to Pending after eviction. Previously: Rejected")
    # Sent asynchronously by the workload controller when it saw the Rejected check.
    rejected = wait_for(
        "the AdmissionCheckRejected event",
        lambda: when(
            events(kubectl, namespace, wl["metadata"]["name"]),
            lambda evs: any(r == "AdmissionCheckRejected" for _, r, _ in evs),
        ),
    )
    assert ("Warning", "AdmissionCheckRejected", f"Deactivated due to {detail}") in rejected
    cq_obj = wait_for(
        "quota released",
        lambda: when(kubectl.get("clusterqueue", cq), lambda o: o["status"].get("reservingWorkloads") == 0),
    )
    assert cq_obj["status"].get("pendingWorkloads") == 0  # inactive workloads are not queued
    assert suspended(kubectl, namespace, "rejected")
    print(f"Rejected → deactivated: {time.monotonic() - started:.1f}s total")


def test_cluster_queue_is_inactive_while_its_check_is_missing_or_inactive(
    kubectl: Kubectl, namespace: str, objs: ClusterObjects
) -> None:
    started = time.monotonic()
    rf, cq, ac = objs.name("ac-rf"), objs.name("ac-cq"), objs.name("ac")
    objs.apply(flavor(rf))
    objs.apply(checked_queue(cq, rf, [ac]))
    objs.apply(local_queue(namespace, "lq", cq))

    def active(status: str, reason: str) -> dict[str, Any]:
        return wait_for(
            f"Active={status} ({reason})",
            lambda: when(
                cond(kubectl.get("clusterqueue", cq), "Active"),
                lambda c: (c.get("status"), c.get("reason")) == (status, reason),
            ),
        )

    assert brief(active("False", "AdmissionCheckNotFound")) == (
        "False",
        "AdmissionCheckNotFound",
        f"Can't admit new workloads: references missing AdmissionCheck(s): {ac}.",
    )
    submit(kubectl, job(namespace, "blocked", "lq"))
    wl = wait_workload(kubectl, namespace, "blocked", "QuotaReserved", "False", reason="Inadmissible")  # gate off
    assert cond(wl, "QuotaReserved")["message"] == f"ClusterQueue {cq} is inactive"

    objs.objects.insert(0, ("admissioncheck", ac))  # deleted after the ClusterQueue that holds it
    kubectl.apply(admission_check(ac))  # no Active condition yet: present but inactive
    assert brief(active("False", "AdmissionCheckInactive")) == (
        "False",
        "AdmissionCheckInactive",
        f"Can't admit new workloads: references inactive AdmissionCheck(s): {ac}.",
    )
    ac_obj = wait_for(
        "the resource-in-use finalizer",
        lambda: when(kubectl.get("admissioncheck", ac), lambda o: FINALIZER in (o["metadata"].get("finalizers") or ())),
    )
    assert ac_obj["spec"]["controllerName"] == CONTROLLER
    assert not (ac_obj.get("status") or {}).get("conditions")  # core Kueue never sets Active itself
    assert suspended(kubectl, namespace, "blocked")

    set_active(kubectl, ac, "True")
    assert brief(active("True", "Ready")) == ("True", "Ready", "Can admit new workloads")
    reserved_with_checks(kubectl, namespace, "blocked")
    set_active(kubectl, ac, "False")
    active("False", "AdmissionCheckInactive")

    # Deleting the check waits for the ClusterQueue naming it to go.
    kubectl("delete", "jobs", "-n", namespace, "--all")
    kubectl("delete", "admissioncheck", ac, "--wait=false")
    time.sleep(1)
    assert kubectl.get("admissioncheck", ac)["metadata"].get("deletionTimestamp")
    kubectl("delete", "clusterqueue", cq, "--wait=false")
    wait_for("the AdmissionCheck gone", lambda: kubectl("get", "admissioncheck", ac, check=False).returncode != 0)
    print(f"CQ inactive while its check is missing/inactive: {time.monotonic() - started:.1f}s total")

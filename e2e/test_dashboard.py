"""The dashboard in a real headless Chromium (Debian's chromium + chromium-driver, driven by selenium).

Signs in with ServiceAccount tokens, as a user would: an admin sees the overview and watches a Job
go from pending to admitted without reloading; a user bound to one namespace sees that namespace's
Workloads only, and is refused another's (upstream KueueViz leaked them, kueue#11143); an account
without the localqueues grant sees no LocalQueue, whatever namespace it asks for (issue 27). The seeds' GPU
example (`make run`'s objects, from e2e/demo.py) shows on the overview: ClusterQueue research, its
nvidia.com/gpu usage while the Job runs and back to 0 once it finishes.
Screenshots go to the test's pytest tmp dir (printed; pytest keeps the last three runs).
"""

from __future__ import annotations

import base64
import hashlib
import shutil
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from e2e import demo
from e2e.conftest import Kubectl, local_stack
from e2e.helpers import create, wait_for
from e2e.host import BROWSER_PACKAGES, HostError, ensure_packages
from webhook.dashboard.app import COOKIE
from webhook.dashboard.auth import AUDIENCE


def _browser_binaries() -> tuple[str, str]:
    """Debian's chromium and chromedriver, installed with apt-get when missing and we are root; a clear
    failure naming the command otherwise (never a skip)."""
    try:
        ensure_packages(BROWSER_PACKAGES)
    except HostError as exc:
        pytest.fail(f"the dashboard e2e needs a real browser: {exc}", pytrace=False)
    return str(shutil.which("chromium")), str(shutil.which("chromedriver"))


def _spki_pin(cert_pem: bytes) -> str:
    """Chromium's pin of a certificate: base64 SHA-256 of its SubjectPublicKeyInfo."""
    from cryptography import x509
    from cryptography.hazmat.primitives import serialization

    spki = (
        x509.load_pem_x509_certificate(cert_pem)
        .public_key()
        .public_bytes(serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo)
    )
    return base64.b64encode(hashlib.sha256(spki).digest()).decode()


@pytest.fixture
def browser(kubectl: Kubectl) -> Iterator[Any]:
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    chromium, chromedriver = _browser_binaries()
    options = webdriver.ChromeOptions()
    options.binary_location = chromium
    # The dashboard serves TLS with the stack's certificate (its own CA, not in the browser's store):
    # trust exactly that key, not every certificate.
    pin = _spki_pin((local_stack(kubectl).cert_dir / "tls.crt").read_bytes())
    for arg in (
        "--headless=new",
        "--no-sandbox",
        "--disable-dev-shm-usage",
        "--window-size=1280,900",
        f"--ignore-certificate-errors-spki-list={pin}",
    ):
        options.add_argument(arg)
    driver = webdriver.Chrome(service=Service(chromedriver), options=options)
    try:
        yield driver
    finally:
        driver.quit()


@pytest.fixture
def shots(tmp_path: Path) -> Path:
    """pytest's tmp dir, which outlives the session (the stack's state dir is removed at its end)."""
    print(f"dashboard screenshots: {tmp_path}")
    return tmp_path


def token(kubectl: Kubectl, namespace: str, name: str, *, audience: str = AUDIENCE) -> str:
    """A new ServiceAccount's token, bound to the dashboard's audience as its sign-in page asks."""
    kubectl("create", "serviceaccount", name, "-n", namespace)
    return kubectl("create", "token", name, "-n", namespace, "--duration=1h", f"--audience={audience}").stdout.strip()


def sign_in(driver: Any, url: str, tok: str) -> None:
    from selenium.webdriver.common.by import By

    driver.delete_all_cookies()
    driver.get(f"{url}/login")
    driver.find_element(By.ID, "token").send_keys(tok)
    driver.find_element(By.ID, "sign-in").click()
    wait_for("the overview after sign-in", lambda: driver.find_elements(By.ID, "live"), timeout=15)


def row_state(driver: Any, key: str) -> str | None:
    """Read in one script: the live refresh may replace the table between two WebDriver calls."""
    return driver.execute_script(  # type: ignore[no-any-return]
        'const r = document.querySelector(`tr.wl[data-name="${arguments[0]}"]`); return r ? r.dataset.state : null;',
        key,
    )


def text_of(driver: Any, element_id: str) -> str:
    return driver.execute_script(  # type: ignore[no-any-return]
        "const e = document.getElementById(arguments[0]); return e ? e.innerText : '';", element_id
    )


def bar_text(driver: Any, cq: str, label: str) -> str | None:
    """The numbers of one flavor/resource row of a ClusterQueue card, read in one script (see row_state)."""
    return driver.execute_script(  # type: ignore[no-any-return]
        "const card = document.getElementById(`cq-${arguments[0]}`); if (!card) return null;"
        "const row = [...card.querySelectorAll('table.bars tr')].find(r => r.querySelector('th')?.innerText.trim() === arguments[1]);"
        "return row ? row.querySelector('td.nums').innerText.trim() : null;",
        cq,
        label,
    )


def job(ns: str, name: str, queue: str) -> dict[str, Any]:
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name, "namespace": ns, "labels": {"kueue.x-k8s.io/queue-name": queue}},
        "spec": {
            "parallelism": 1,
            "completions": 1,
            "suspend": True,
            "template": {
                "spec": {
                    "restartPolicy": "Never",
                    "containers": [{"name": "c", "image": "busybox", "resources": {"requests": {"cpu": "500m"}}}],
                }
            },
        },
    }


@pytest.mark.local_stack
def test_dashboard_in_a_browser(kubectl: Kubectl, browser: Any, shots: Path) -> None:
    from selenium.webdriver.common.by import By

    url = local_stack(kubectl).dashboard_url
    s = uuid.uuid4().hex[:6]
    team_a, team_b, cq = f"dash-a-{s}", f"dash-b-{s}", f"dash-cq-{s}"
    for ns in (team_a, team_b):
        kubectl("create", "namespace", ns)
    kubectl.apply({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ResourceFlavor", "metadata": {"name": f"dash-{s}"}})
    kubectl.apply(
        {
            "apiVersion": "kueue.x-k8s.io/v1beta2",
            "kind": "ClusterQueue",
            "metadata": {"name": cq},
            "spec": {
                "namespaceSelector": {},
                "stopPolicy": "Hold",
                "resourceGroups": [
                    {
                        "coveredResources": ["cpu"],
                        "flavors": [{"name": f"dash-{s}", "resources": [{"name": "cpu", "nominalQuota": "2"}]}],
                    }
                ],
            },
        }
    )
    for ns in (team_a, team_b):
        kubectl.apply(
            {
                "apiVersion": "kueue.x-k8s.io/v1beta2",
                "kind": "LocalQueue",
                "metadata": {"name": "lq", "namespace": ns},
                "spec": {"clusterQueue": cq},
            }
        )
    admin = token(kubectl, team_a, "dash-admin")
    kubectl(
        "create",
        "clusterrolebinding",
        f"dash-admin-{s}",
        "--clusterrole=cluster-admin",
        f"--serviceaccount={team_a}:dash-admin",
    )
    viewer = token(kubectl, team_a, "viewer")
    kubectl(
        "create",
        "role",
        "kueue-viewer",
        "-n",
        team_a,
        "--verb=get,list,watch",
        "--resource=workloads.kueue.x-k8s.io,localqueues.kueue.x-k8s.io",
    )
    kubectl(
        "create",
        "rolebinding",
        "kueue-viewer",
        "-n",
        team_a,
        "--role=kueue-viewer",
        f"--serviceaccount={team_a}:viewer",
    )
    # Finding 3 of issue 27: neither an account with no grant nor one granted Workloads but not
    # LocalQueues may see a LocalQueue, whatever namespace the URL asks for.
    nobody = token(kubectl, team_a, "nobody")
    workloads_only = token(kubectl, team_a, "workloads-only")
    kubectl("create", "role", "workloads-only", "-n", team_a, "--verb=get,list", "--resource=workloads.kueue.x-k8s.io")
    kubectl(
        "create",
        "rolebinding",
        "workloads-only",
        "-n",
        team_a,
        "--role=workloads-only",
        f"--serviceaccount={team_a}:workloads-only",
    )
    try:
        wait_for(
            "RBAC to reach the authorizer",
            lambda: (
                kubectl(
                    "auth",
                    "can-i",
                    "list",
                    "workloads.kueue.x-k8s.io",
                    "-n",
                    team_a,
                    f"--as=system:serviceaccount:{team_a}:viewer",
                    check=False,
                ).stdout.strip()
                == "yes"
            ),
        )
        create(kubectl, job(team_b, "other-team", "lq"))

        # A token bound to the API server's audience (kubectl's default) is refused: only one made
        # for the dashboard signs in, so no token it holds works against the API server.
        browser.get(f"{url}/login")
        browser.find_element(By.ID, "token").send_keys(
            kubectl("create", "token", "dash-admin", "-n", team_a, "--duration=1h").stdout.strip()
        )
        browser.find_element(By.ID, "sign-in").click()
        wait_for("the refusal", lambda: browser.find_elements(By.ID, "login-failed"), timeout=15)

        # The overview loads, with our ClusterQueue held; the session cookie is Secure, HttpOnly, expiring.
        sign_in(browser, url, admin)
        cookie = browser.get_cookie(COOKIE)
        assert cookie and cookie["secure"] and cookie["httpOnly"] and cookie.get("expiry"), cookie
        wait_for("the ClusterQueue on the overview", lambda: browser.find_elements(By.ID, f"cq-{cq}"))
        browser.save_screenshot(str(shots / "overview.png"))

        # A Job submitted now shows up pending, then admitted, with no reload in between.
        browser.get(f"{url}/workloads?namespace={team_a}")
        browser.execute_script("window.__notReloaded = true")
        create(kubectl, job(team_a, "mine", "lq"))
        wl = wait_for(
            "the Job's Workload",
            lambda: [w["metadata"]["name"] for w in kubectl.get("workloads", "-n", team_a)["items"]],
        )[0]
        wait_for("the Workload pending in the page", lambda: row_state(browser, f"{team_a}/{wl}") == "Pending")
        browser.save_screenshot(str(shots / "pending.png"))
        kubectl("patch", "clusterqueue", cq, "--type=merge", "-p", '{"spec":{"stopPolicy":"None"}}')
        wait_for(
            "the Workload admitted in the page", lambda: row_state(browser, f"{team_a}/{wl}") == "Admitted", timeout=60
        )
        assert browser.execute_script("return window.__notReloaded === true"), "the page reloaded"
        browser.save_screenshot(str(shots / "admitted.png"))
        browser.get(f"{url}/workloads/{team_a}/{wl}")
        page = text_of(browser, "live")
        assert "Conditions" in page and "QuotaReserved" in page and "kind: Workload" in page, page[:500]
        browser.save_screenshot(str(shots / "workload.png"))

        # A user of team-a sees team-a only, and is refused team-b's Workload by URL.
        other = kubectl.get("workloads", "-n", team_b)["items"][0]["metadata"]["name"]
        sign_in(browser, url, viewer)
        browser.get(f"{url}/workloads")
        wait_for("team-a's Workload", lambda: row_state(browser, f"{team_a}/{wl}"))
        assert row_state(browser, f"{team_b}/{other}") is None
        assert team_b not in text_of(browser, "workloads")
        assert browser.find_elements(By.ID, f"cq-{cq}") == []
        browser.save_screenshot(str(shots / "namespace-user.png"))
        browser.get(f"{url}/workloads/{team_b}/{other}")
        assert "may not see" in text_of(browser, "denied")
        browser.get(f"{url}/usage")  # every team's usage: not for a namespace's user
        assert "may not list UsageRecords" in text_of(browser, "usage-denied")
        browser.get(f"{url}/fragment/workloads?namespace={team_b}")
        assert other not in browser.page_source

        # No LocalQueue without the localqueues grant: not team-b's by URL, not team-a's through the
        # Workloads grant (the page once showed both: names, ClusterQueue and counts).
        for account, ns in ((nobody, team_b), (nobody, team_a), (workloads_only, team_b), (workloads_only, "")):
            sign_in(browser, url, account)
            for path in ("workloads", "fragment/workloads"):  # the page, and what its live refresh fetches
                browser.get(f"{url}/{path}" + (f"?namespace={ns}" if ns else ""))
                wait_for("the LocalQueues table", lambda: text_of(browser, "local-queues"))
                queues = text_of(browser, "local-queues")
                assert cq not in queues and "No LocalQueues you may list." in queues, (path, ns, queues)
        browser.get(f"{url}/workloads")
        wait_for("team-a's Workload for a Workloads-only account", lambda: row_state(browser, f"{team_a}/{wl}"))
        browser.save_screenshot(str(shots / "workloads-only-user.png"))
    finally:
        kubectl("delete", "clusterrolebinding", f"dash-admin-{s}", check=False)
        for ns in (team_a, team_b):
            kubectl("delete", "jobs", "-n", ns, "--all", "--wait=false", check=False)
            kubectl("delete", "namespace", ns, "--wait=false", check=False)
        kubectl("delete", "clusterqueue", cq, "--wait=false", check=False)
        kubectl("delete", "resourceflavor", f"dash-{s}", "--wait=false", check=False)


@pytest.mark.local_stack
def test_dashboard_shows_the_gpu_example(kubectl: Kubectl, browser: Any, shots: Path) -> None:
    """What `make up` + `make run` show: ClusterQueue research with its GPU usage while the Job runs,
    then its GPU-hours on the usage page."""
    from selenium.common.exceptions import StaleElementReferenceException
    from selenium.webdriver.common.by import By

    url = local_stack(kubectl).dashboard_url
    ns = demo.NAMESPACE
    kubectl.apply({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns, "labels": demo.NAMESPACE_LABELS}})
    kubectl("apply", "-f", str(demo.GPU_QUOTA))
    _, cq, _ = yaml.safe_load_all(demo.GPU_QUOTA.read_text())
    fr = cq["spec"]["resourceGroups"][0]["flavors"][0]
    label, nominal = f"{fr['name']} / nvidia.com/gpu", fr["resources"][0]["nominalQuota"]  # gpu-nodes, 64
    gpu_job: dict[str, Any] = yaml.safe_load(demo.GPU_JOB.read_text())
    # The example Job as is, except that its pod runs long enough for the usage to be seen.
    gpu_job["spec"]["template"].setdefault("metadata", {})["annotations"] = {
        "pod-complete.stage.kwok.x-k8s.io/delay": "20s"
    }
    account = f"dash-gpu-{uuid.uuid4().hex[:6]}"
    admin = token(kubectl, ns, account)
    kubectl("create", "clusterrolebinding", account, "--clusterrole=cluster-admin", f"--serviceaccount={ns}:{account}")
    name = ""
    try:
        sign_in(browser, url, admin)
        wait_for("ClusterQueue research idle on the overview", lambda: bar_text(browser, "research", label), timeout=15)
        assert bar_text(browser, "research", label) == f"0 / {nominal}"  # no cohort: no borrowing limit shown
        browser.execute_script("window.__notReloaded = true")

        name = create(kubectl, gpu_job)
        wait_for(
            "2 GPUs used in the page", lambda: bar_text(browser, "research", label) == f"2 / {nominal}", timeout=30
        )
        pods = kubectl.get("pods", "-n", ns, "-l", f"job-name={name}")["items"]
        assert [p["status"].get("phase") for p in pods] == ["Running"], "the usage should show while the Job runs"
        browser.save_screenshot(str(shots / "gpu-running.png"))

        wait_for(
            "the usage back to 0 in the page",
            lambda: bar_text(browser, "research", label) == f"0 / {nominal}",
            timeout=60,
        )
        assert kubectl.get("job", "-n", ns, name)["status"].get("succeeded") == 1
        assert browser.execute_script("return window.__notReloaded === true"), "the page reloaded"
        browser.save_screenshot(str(shots / "gpu-finished.png"))

        # The usage page: the namespace's GPU-hours from the UsageRecords, drawn per hour.
        def gpu_hours() -> float | None:
            browser.get(f"{url}/usage?by=namespace&resource=nvidia.com/gpu&hours=2")
            try:
                rows = browser.find_elements(By.ID, f"usage-team-{ns}")
                return float(rows[0].text.split()[-1]) if rows else None
            except StaleElementReferenceException:  # the live page replaced the table meanwhile: look again
                return None

        held = wait_for("the namespace's GPU-hours on the usage page", gpu_hours, timeout=60, interval=2)
        assert held >= 2 * 20 / 3600 * 0.9, held  # two GPUs for the pod's 20 s at least, rounded
        assert browser.find_elements(By.CSS_SELECTOR, "#usage-chart svg"), "no chart"
        browser.save_screenshot(str(shots / "usage.png"))
    finally:
        kubectl("delete", "clusterrolebinding", account, check=False)
        kubectl("delete", "serviceaccount", "-n", ns, account, check=False)
        if name:
            kubectl("delete", "job", "-n", ns, name, "--wait=false", check=False)

"""`webhook.kube.informer` over a real HTTP connection: a watch cut mid-stream (an API server
restart) must lead to a fresh list, never to a dead informer thread with a stale cache; cached
copies come without managedFields."""

from __future__ import annotations

import http.server
import json
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes.client import Configuration

from webhook import kube as k
from webhook.worker.store import Store

MANAGED = [{"manager": "kubectl-client-side-apply", "operation": "Update", "fieldsV1": {"f:spec": {}}}]


class APIServer(http.server.ThreadingHTTPServer):
    """Lists return `lists[n]` for the n-th list; the first watch sends one event and then drops
    the connection inside a chunked body; later watches stay open until the test ends."""

    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), Handler)
        self.lists = [["a"], ["a", "b", "c"]]
        self.list_calls = 0
        self.watch_calls = 0
        self.done = threading.Event()
        self.authorization: list[str | None] = []
        self.writes: list[str] = []


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: APIServer

    def log_message(self, *args: Any) -> None:
        pass

    def _write(self) -> None:
        self.server.writes.append(f"{self.command} {self.path}")
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", "2")
        self.end_headers()
        self.wfile.write(b"{}")

    do_POST = do_PUT = do_PATCH = do_DELETE = _write

    def do_GET(self) -> None:
        self.server.authorization.append(self.headers.get("Authorization"))
        if "watch=true" not in self.path:
            names = self.server.lists[min(self.server.list_calls, len(self.server.lists) - 1)]
            self.server.list_calls += 1
            body = json.dumps(
                {
                    "items": [
                        {"metadata": {"name": n, "resourceVersion": "5", "managedFields": MANAGED}} for n in names
                    ],
                    "metadata": {"resourceVersion": "5"},
                }
            ).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
            return
        self.server.watch_calls += 1
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        if self.server.watch_calls == 1:
            line = (
                json.dumps(
                    {
                        "type": "ADDED",
                        "object": {"metadata": {"name": "b", "resourceVersion": "6", "managedFields": MANAGED}},
                    }
                ).encode()
                + b"\n"
            )
            self.wfile.write(b"%x\r\n%s\r\n" % (len(line), line))
            self.wfile.write(b'40\r\n{"type":')  # a chunk announced but cut short: the server died
            self.wfile.flush()
            self.close_connection = True
            return
        self.server.done.wait(10)
        self.wfile.write(b"0\r\n\r\n")


@pytest.fixture
def api(tmp_path: Path) -> Iterator[tuple[APIServer, k.Kube]]:
    server = APIServer()
    threading.Thread(target=server.serve_forever, daemon=True).start()
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(
        json.dumps(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "current-context": "t",
                "clusters": [{"name": "t", "cluster": {"server": f"http://127.0.0.1:{server.server_address[1]}"}}],
                "contexts": [{"name": "t", "context": {"cluster": "t", "user": "t"}}],
                "users": [{"name": "t", "user": {"token": "abc"}}],
            }
        )
    )
    kube = k.Kube(str(kubeconfig))
    yield server, kube
    server.done.set()
    server.shutdown()
    server.server_close()
    kube.close()  # the pooled connections, or their sockets outlive the test


def test_informer_relists_after_a_watch_is_cut_mid_stream(api: tuple[APIServer, k.Kube]) -> None:
    server, kube = api
    lists: list[list[str]] = []
    events: list[tuple[str, str]] = []
    seen: list[dict[str, Any]] = []
    stop = threading.Event()
    thread = threading.Thread(
        target=k.informer,
        daemon=True,
        kwargs={
            "kube": kube,
            "path": "/api/v1/namespaces",
            "stop": stop,
            "on_list": lambda items: (seen.extend(items), lists.append([i["metadata"]["name"] for i in items])),
            "on_event": lambda etype, obj: (seen.append(obj), events.append((etype, obj["metadata"]["name"]))),
        },
    )
    thread.start()
    deadline = time.monotonic() + 60  # generous: a loaded CI machine
    # the second watch follows the relist's handlers: wait for it too, not only for the relist
    while (len(lists) < 2 or server.watch_calls < 2) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert lists == [["a"], ["a", "b", "c"]]  # the event before the cut, then a full relist
    assert events == [("ADDED", "b")]
    assert len(seen) == 5 and not any("managedFields" in o["metadata"] for o in seen)
    assert thread.is_alive() and server.watch_calls == 2
    stop.set()
    server.done.set()
    thread.join(timeout=10)
    assert not thread.is_alive()


def test_shared_informer_reads_each_stream_once_and_replays_it_to_a_late_subscriber(
    api: tuple[APIServer, k.Kube],
) -> None:
    server, kube = api
    stop = threading.Event()
    informers = k.SharedInformers(kube, stop)
    early: list[tuple[str, list[str]]] = []
    late: list[tuple[str, list[str]]] = []

    def recorder(out: list[tuple[str, list[str]]]) -> dict[str, Any]:
        return {
            "on_list": lambda items: out.append(("list", sorted(i["metadata"]["name"] for i in items))),
            "on_event": lambda etype, obj: out.append((etype, [obj["metadata"]["name"]])),
            "on_synced": lambda: out.append(("synced", [])),
        }

    informers.subscribe("/api/v1/namespaces", **recorder(early))
    deadline = time.monotonic() + 60
    while server.watch_calls < 2 and time.monotonic() < deadline:
        time.sleep(0.05)
    time.sleep(0.2)  # the second watch is open: the relist has been delivered
    informers.subscribe("/api/v1/namespaces", **recorder(late))
    # The early one saw the list, the event before the cut and the relist; the late one starts from
    # the objects as they are now, with no request of its own.
    assert early == [
        ("list", ["a"]),
        ("synced", []),
        ("ADDED", ["b"]),
        ("list", ["a", "b", "c"]),
        ("synced", []),
    ]
    assert late == [("list", ["a", "b", "c"]), ("synced", [])]
    assert (server.list_calls, server.watch_calls) == (2, 2)
    # Another query is another stream.
    informers.subscribe("/api/v1/namespaces", **recorder([]), query={"labelSelector": "team=a"})
    while server.list_calls < 3 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert server.list_calls == 3
    stop.set()
    server.done.set()


def test_credentials_are_sent_and_re_read_every_few_seconds(
    api: tuple[APIServer, k.Kube], monkeypatch: pytest.MonkeyPatch
) -> None:
    server, kube = api
    read = Configuration.auth_settings
    refreshed: list[float] = []

    def counting(cfg: Any) -> Any:
        refreshed.append(time.monotonic())
        return read(cfg)

    monkeypatch.setattr(Configuration, "auth_settings", counting)
    for _ in range(20):
        kube.list("/api/v1/namespaces")
    assert server.authorization == ["Bearer abc"] * 20
    assert len(refreshed) == 1  # running the kubeconfig loader's refresh hook costs ~0.3 ms a request
    monkeypatch.setattr(k, "AUTH_REFRESH_S", 0.0)
    for _ in range(5):
        kube.list("/api/v1/namespaces")
    assert len(refreshed) == 6 and server.authorization[-1] == "Bearer abc"


@pytest.mark.parametrize(
    ("path", "resource"),
    [
        ("/api/v1/namespaces", "v1/namespaces"),
        ("/api/v1/namespaces/team-a", "v1/namespaces"),
        ("/api/v1/namespaces/team-a/events", "v1/events"),
        ("/apis/kueue.x-k8s.io/v1beta2/namespaces/team-a/workloads/wl/status", "kueue.x-k8s.io/v1beta2/workloads"),
        ("/apis/kueue.x-k8s.io/v1beta2/clusterqueues/cq/status", "kueue.x-k8s.io/v1beta2/clusterqueues"),
        ("/apis/events.k8s.io/v1/namespaces/team-a/events", "events.k8s.io/v1/events"),
    ],
)
def test_resource_of_a_path(path: str, resource: str) -> None:
    assert k._resource(path) == resource


def test_one_resource_running_out_of_tokens_does_not_throttle_another(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(
        json.dumps(
            {
                "apiVersion": "v1",
                "kind": "Config",
                "current-context": "t",
                "clusters": [{"name": "t", "cluster": {"server": "http://127.0.0.1:1"}}],
                "contexts": [{"name": "t", "context": {"cluster": "t", "user": "t"}}],
                "users": [{"name": "t", "user": {}}],
            }
        )
    )
    kube = k.Kube(str(kubeconfig), qps=0.01, burst=1)
    waits: list[float] = []
    monkeypatch.setattr(k.time, "sleep", waits.append)
    kube._throttle("/apis/kueue.x-k8s.io/v1beta2/namespaces/a/workloads/x/status")
    kube._throttle("/apis/events.k8s.io/v1/namespaces/a/events")
    assert waits == []
    kube._throttle("/apis/kueue.x-k8s.io/v1beta2/namespaces/b/workloads/y/status")
    assert len(waits) == 1 and waits[0] > 50
    kube.close()


def test_the_worker_store_keeps_no_managed_fields() -> None:
    """Writers put the API's answers to their PUTs into the store: those are stripped too."""
    store = Store()
    store.put("jobs", {"metadata": {"namespace": "a", "name": "j", "resourceVersion": "7", "managedFields": MANAGED}})
    store.replace("workloads", [{"metadata": {"namespace": "a", "name": "w", "managedFields": MANAGED}}])
    assert store.get("jobs", "a/j") == {"metadata": {"namespace": "a", "name": "j", "resourceVersion": "7"}}
    assert store.get("workloads", "a/w") == {"metadata": {"namespace": "a", "name": "w"}}


def _workload(name: str, cpu: str, version: str = "5") -> dict[str, Any]:
    container = {"name": "c", "resources": {"requests": {"cpu": cpu}}}
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "Workload",
        "metadata": {"name": name, "namespace": "ns", "resourceVersion": version},
        "spec": {"podSets": [{"name": "main", "template": {"spec": {"containers": [container]}}}]},
    }


class ScriptedKube:
    """A list, then one watch stream of the given events; later watches end at once."""

    def __init__(self, items: list[dict[str, Any]], events: list[tuple[str, dict[str, Any]]], stop: threading.Event):
        self.items, self.events, self.stop = items, events, stop
        self.watches = 0
        self.gate = threading.Event()  # lists wait for it: subscribers are in place
        self.gate.set()

    def list(self, path: str, query: Any = None) -> tuple[list[dict[str, Any]], str]:
        assert self.gate.wait(10)
        return [json.loads(json.dumps(i)) for i in self.items], "5"

    def watch(self, path: str, rv: str, query: Any = None) -> Iterator[dict[str, Any]]:
        self.watches += 1
        if self.watches == 1:
            for etype, obj in self.events:
                yield {"type": etype, "object": json.loads(json.dumps(obj))}
        self.stop.set()


WORKLOADS = "/apis/kueue.x-k8s.io/v1beta2/workloads"


def test_objects_go_cannot_decode_are_set_aside_and_reported_once_per_version() -> None:
    stop = threading.Event()
    kube = ScriptedKube(
        [_workload("good", "1"), _workload("poison", "1e1.5")],
        [
            ("MODIFIED", _workload("good", "1e1.5", "6")),  # a valid copy turned bad: forgotten
            ("MODIFIED", _workload("poison", "1e1.5", "7")),
            ("MODIFIED", _workload("poison", "2", "8")),  # fixed: back as an ordinary event
            ("DELETED", _workload("good", "1e1.5", "9")),
        ],
        stop,
    )
    lists: list[list[str]] = []
    events: list[tuple[str, str, bool]] = []
    invalid: list[tuple[str, str, str]] = []
    k.informer(
        kube,  # type: ignore[arg-type]
        WORKLOADS,
        lambda items: lists.append([i["metadata"]["name"] for i in items]),
        lambda etype, obj: events.append((etype, obj["metadata"]["name"], "spec" in obj)),
        stop=stop,
        on_invalid=lambda obj, field, error: invalid.append((obj["metadata"]["name"], field, error[:11])),
    )
    assert lists == [["good"]]
    assert events == [
        ("DELETED", "good", False),  # handed on as a deletion, with nothing left to parse
        ("DELETED", "poison", False),
        ("MODIFIED", "poison", True),
        ("DELETED", "good", False),
    ]
    field = "spec.podSets[0].template.spec.containers[0].resources.requests.cpu"
    assert invalid == [
        ("poison", field, "quantities "),
        ("good", field, "quantities "),
        ("poison", field, "quantities "),
    ]


def test_a_subscriber_that_comes_later_hears_of_the_objects_set_aside_now() -> None:
    """A new leader subscribes after the visibility feed has listed: it is told of the bad Workload
    all the same (its owner gets a Warning Event), and not of one fixed since."""
    stop = threading.Event()
    kube = ScriptedKube(
        [_workload("poison", "1e1.5"), _workload("fixed", "1e1.5")],
        [("MODIFIED", _workload("fixed", "2", "6")), ("ADDED", _workload("marker", "1", "7"))],
        stop,
    )
    informers = k.SharedInformers(kube, stop)  # type: ignore[arg-type]
    caught_up = threading.Event()

    def on_event(etype: str, obj: dict[str, Any]) -> None:
        if obj["metadata"]["name"] == "marker":
            caught_up.set()

    informers.subscribe(WORKLOADS, lambda items: None, on_event)
    assert caught_up.wait(10)
    heard: list[str] = []
    informers.subscribe(
        WORKLOADS, lambda items: None, lambda *_: None, on_invalid=lambda obj, *_: heard.append(obj["metadata"]["name"])
    )
    assert heard == ["poison"]


def test_a_failing_subscriber_does_not_keep_an_object_from_the_others() -> None:
    stop = threading.Event()
    kube = ScriptedKube([_workload("a", "1")], [("ADDED", _workload("b", "1", "6"))], stop)
    kube.gate.clear()
    informers = k.SharedInformers(kube, stop)  # type: ignore[arg-type]
    seen: list[str] = []
    synced = threading.Event()

    def fail(*_: Any) -> None:
        raise ValueError("a handler bug")

    informers.subscribe(WORKLOADS, fail, fail, on_synced=lambda: fail())
    informers.subscribe(
        WORKLOADS,
        lambda items: seen.extend(f"list:{i['metadata']['name']}" for i in items),
        lambda etype, obj: (seen.append(f"{etype}:{obj['metadata']['name']}"), synced.set()),
    )
    kube.gate.set()
    assert synced.wait(10)
    assert seen == ["list:a", "ADDED:b"]


def test_a_fenced_client_sends_no_write_while_the_lease_is_not_held(api: tuple[APIServer, k.Kube]) -> None:
    """A leader paused past its renew deadline may have been replaced: until a renewal proves
    otherwise, nothing it still has in hand (a status write, an unsuspend, a delete, a retry) leaves."""
    server, kube = api
    held = [False]
    fenced = kube.fenced(lambda: held[0])
    path = "/api/v1/namespaces/ns/pods/p"
    writes = (
        lambda: fenced.create("/api/v1/namespaces/ns/pods", {"metadata": {"name": "p"}}),
        lambda: fenced.replace(path, {"metadata": {"name": "p"}}),
        lambda: fenced.patch(path, {"metadata": {"labels": {"a": "b"}}}),
        lambda: fenced.delete(path),
    )
    for write in writes:
        with pytest.raises(k.NotLeader):
            write()
    assert server.writes == []
    assert fenced.get("/api/v1/namespaces") is not None  # reads are not fenced
    kube.delete(path)  # the unfenced client (the lease itself, reviews) is not affected
    held[0] = True
    fenced.delete(path)
    assert server.writes == [f"DELETE {path}", f"DELETE {path}"]


class _NotServedYet(ScriptedKube):
    """A path the API server refuses `misses` lists of (404: its CRD not installed yet; 403: the Role
    that lets us read it not applied yet), then serves."""

    def __init__(self, misses: int, items: list[dict[str, Any]], stop: threading.Event, status: int = 404) -> None:
        super().__init__(items, [], stop)
        self.misses = misses
        self.status = status

    def list(self, path: str, query: Any = None) -> tuple[list[dict[str, Any]], str]:
        if self.misses:
            self.misses -= 1
            if self.status == 404:
                raise k.NotFound(404, "the server could not find the requested resource")
            raise k.KubeError(self.status, 'secrets is forbidden: cannot list resource "secrets"')
        return super().list(path, query)


@pytest.mark.parametrize(
    ("absent_is_empty", "status", "want"),
    [
        pytest.param(
            True, 404, [("list", []), ("synced", []), ("list", ["w"]), ("synced", [])], id="empty until served"
        ),
        pytest.param(
            True, 403, [("list", []), ("synced", []), ("list", ["w"]), ("synced", [])], id="empty until permitted"
        ),
        pytest.param(False, 404, [("list", ["w"]), ("synced", [])], id="not synced until served"),
        pytest.param(False, 403, [("list", ["w"]), ("synced", [])], id="not synced until permitted"),
    ],
)
def test_an_unserved_path_lists_as_empty_once_when_asked_to(
    absent_is_empty: bool, status: int, want: list[tuple[str, list[str]]]
) -> None:
    """An integration whose operator's CRD is not installed, or a MultiKueue install without the Role
    for its Secrets, must not hold the scheduler back (upstream defers its controller, `waitForAPI`);
    it is picked up once the CRD is served or the Role applied."""
    stop = threading.Event()
    kube = _NotServedYet(2, [_workload("w", "1")], stop, status)
    seen: list[tuple[str, list[str]]] = []
    k.informer(
        kube,  # type: ignore[arg-type]
        WORKLOADS,
        lambda items: seen.append(("list", [i["metadata"]["name"] for i in items])),
        lambda etype, obj: None,
        stop=stop,
        on_synced=lambda: seen.append(("synced", [])),
        absent_is_empty=absent_is_empty,
    )
    assert seen == want


def test_a_shared_informer_says_whether_its_path_is_served() -> None:
    """An unserved path lists as empty; a reader that must tell "none exist" from "none known yet"
    (the budget check before the Budget CRD is established) asks `served`, which turns true only
    once the objects are in the subscribers' hands."""
    stop = threading.Event()
    kube = _NotServedYet(1, [_workload("w", "1")], stop)
    informers = k.SharedInformers(kube, stop)  # type: ignore[arg-type]
    seen: list[tuple[str, bool]] = []
    done = threading.Event()

    def on_list(items: list[dict[str, Any]]) -> None:
        seen.append((f"list {len(items)}", informers.served(WORKLOADS)))

    def on_synced() -> None:
        seen.append(("synced", informers.served(WORKLOADS)))
        if len(seen) == 4:
            done.set()

    assert not informers.served(WORKLOADS)
    informers.subscribe(WORKLOADS, on_list, lambda etype, obj: None, on_synced=on_synced, absent_is_empty=True)
    assert done.wait(10)
    assert seen == [("list 0", False), ("synced", False), ("list 1", False), ("synced", False)]
    deadline = time.monotonic() + 5
    while not informers.served(WORKLOADS) and time.monotonic() < deadline:
        time.sleep(0.01)
    assert informers.served(WORKLOADS)
    assert not informers.served(WORKLOADS, {"labelSelector": "a=b"})  # another stream, never subscribed
    stop.set()


def test_closing_the_client_ends_an_open_watch_at_once(api: tuple[APIServer, k.Kube]) -> None:
    """A stopped MultiKueue worker's watch must end now, not at its server-side timeout: the
    server here keeps the second watch open for 10 s."""
    server, kube = api
    stop = threading.Event()
    errors: list[str] = []
    thread = threading.Thread(
        target=k.informer,
        daemon=True,
        kwargs={
            "kube": kube,
            "path": "/api/v1/namespaces",
            "stop": stop,
            "on_list": lambda items: None,
            "on_event": lambda etype, obj: None,
            "on_error": lambda exc: (errors.append(type(exc).__name__), stop.set()),
        },
    )
    thread.start()
    deadline = time.monotonic() + 60
    while not errors and time.monotonic() < deadline:  # the first watch is cut mid-stream
        time.sleep(0.05)
    assert errors == ["ServerError"]
    assert server.watch_calls == 1  # the error ended the loop: no relist, no second watch
    thread.join(timeout=10)
    assert not thread.is_alive()

    stop = threading.Event()
    thread = threading.Thread(
        target=k.informer,
        daemon=True,
        kwargs={
            "kube": kube,
            "path": "/api/v1/namespaces",
            "stop": stop,
            "on_list": lambda items: None,
            "on_event": lambda e, o: None,
        },
    )
    thread.start()
    while server.watch_calls < 2 and time.monotonic() < deadline:
        time.sleep(0.05)
    time.sleep(0.1)
    started = time.monotonic()
    stop.set()
    kube.close()
    thread.join(timeout=5)
    assert not thread.is_alive() and time.monotonic() - started < 5

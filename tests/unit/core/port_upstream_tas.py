"""Regenerate `data/tas_find_topology_assignments.json` from upstream's TestFindTopologyAssignments.

Run by hand when moving to a new upstream version (not collected by pytest):

    git -C /work/.mirror/kubernetes-sigs+kueue/repo show v0.19.2:pkg/cache/scheduler/tas_cache_test.go \\
        | python -m tests.unit.core.port_upstream_tas > tests/unit/core/data/tas_find_topology_assignments.json
    git -C /work/.mirror/kubernetes-sigs+kueue/repo show v0.19.2:pkg/util/tas/tas_assignment_test.go \\
        | python -m tests.unit.core.port_upstream_tas encoding > tests/unit/core/data/tas_assignment_encoding.json
    for f in tas_flavor_snapshot_test.go tas_balanced_placement_test.go; do
        git -C /work/.mirror/kubernetes-sigs+kueue/repo show v0.19.2:pkg/cache/scheduler/$f \\
            | python -m tests.unit.core.port_upstream_tas tables $f > tests/unit/core/data/${f%_test.go}.json
    done

It reads the Go case table with a small expression parser (composite literals, builder chains,
`new(...)`) and evaluates the builders the cases use into plain data: nodes, non-TAS pods, the pod
sets with their topology requests, and the wanted assignment or reason. A case using something the
engine does not take is kept with a `skip` note so the port stays countable.
"""

from __future__ import annotations

import contextlib
import json
import re
import sys
from dataclasses import dataclass
from typing import Any

from webhook.core.resources import parse_amount

_TOKEN = re.compile(
    r"""(?P<ws>\s+)|(?P<comment>//[^\n]*|/\*.*?\*/)|(?P<raw>`[^`]*`)|(?P<str>"(?:\\.|[^"\\])*")"""
    r"""|(?P<num>\d+(?:\.\d+)?)|(?P<ident>[A-Za-z_][A-Za-z0-9_]*)|(?P<op>:=|[{}()\[\],:.&*+\-/=])""",
    re.S,
)


def tokenize(src: str) -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    pos = 0
    while pos < len(src):
        m = _TOKEN.match(src, pos)
        if m is None:
            raise SyntaxError(f"bad token at {src[pos : pos + 40]!r}")
        pos = m.end()
        kind = m.lastgroup or ""
        if kind in ("ws", "comment"):
            continue
        text = m.group()
        if kind == "raw":
            out.append(("str", text[1:-1]))
        elif kind == "str":
            out.append(("str", json.loads(text)))
        else:
            out.append((kind, text))
    return out


@dataclass
class Parser:
    toks: list[tuple[str, str]]
    i: int = 0

    def peek(self, k: int = 0) -> tuple[str, str]:
        return self.toks[self.i + k] if self.i + k < len(self.toks) else ("eof", "")

    def take(self, text: str | None = None) -> tuple[str, str]:
        tok = self.peek()
        if text is not None and tok[1] != text:
            raise SyntaxError(f"expected {text!r}, got {tok!r} near {self.toks[self.i - 5 : self.i + 5]}")
        self.i += 1
        return tok

    def expr(self) -> Any:
        left = self.unary()
        while self.peek()[1] in ("*", "+", "-", "/"):
            op = self.take()[1]
            right = self.unary()
            left = ("binop", op, left, right)
        return left

    def unary(self) -> Any:
        text = self.peek()[1]
        if text in ("&", "*"):
            self.take()
            return self.unary()
        if text == "-":
            self.take()
            return ("binop", "-", ("lit", 0), self.unary())
        return self.postfix(self.primary())

    def type_expr(self) -> Any:
        """A type: []T, map[K]V, pkg.T, T, *T."""
        text = self.peek()[1]
        if text == "*":
            self.take()
            return self.type_expr()
        if text == "[":
            self.take()
            if self.peek()[0] == "num":  # an array type [N]T
                self.take()
            self.take("]")
            return ("slice", self.type_expr())
        if text == "map":
            self.take()
            self.take("[")
            k = self.type_expr()
            self.take("]")
            return ("map", k, self.type_expr())
        name = self.take()[1]
        while self.peek()[1] == "." and self.peek(1)[0] == "ident":
            self.take()
            name += "." + self.take()[1]
        return ("type", name)

    def primary(self) -> Any:
        kind, text = self.peek()
        if kind == "str":
            self.take()
            return ("lit", text)
        if kind == "num":
            self.take()
            return ("lit", float(text) if "." in text else int(text))
        if text == "(":
            self.take()
            e = self.expr()
            self.take(")")
            return e
        if text in ("[", "map"):
            t = self.type_expr()
            return ("composite", t, self.elements())
        if text == "{":
            return ("composite", None, self.elements())
        if text == "func":
            # A function literal builds the value in code: keep it opaque.
            while self.peek()[1] != "{":
                self.take()
            depth = 0
            while True:
                t = self.take()[1]
                depth += {"{": 1, "}": -1}.get(t, 0)
                if depth == 0:
                    return ("opaque", "function literal")
        if kind == "ident":
            self.take()
            return ("ident", text)
        raise SyntaxError(f"unexpected {self.peek()!r} near {self.toks[self.i - 5 : self.i + 5]}")

    def postfix(self, node: Any) -> Any:
        while True:
            text = self.peek()[1]
            if text == "." and self.peek(1)[0] == "ident":
                self.take()
                node = ("sel", node, self.take()[1])
            elif text == "(":
                self.take()
                args = []
                while self.peek()[1] != ")":
                    args.append(self.expr())
                    if [self.peek(k)[1] for k in range(3)] == [".", ".", "."]:
                        self.i += 3
                        args[-1] = ("spread", args[-1])
                    if self.peek()[1] == ",":
                        self.take()
                self.take(")")
                node = ("call", node, args)
            elif text == "{" and node[0] in ("ident", "sel"):
                node = ("composite", node, self.elements())
            elif text == "[":
                self.take()
                idx = self.expr()
                self.take("]")
                node = ("index", node, idx)
            else:
                return node

    def elements(self) -> list[tuple[Any, Any]]:
        self.take("{")
        out: list[tuple[Any, Any]] = []
        while self.peek()[1] != "}":
            value = self.expr()
            key = None
            if self.peek()[1] == ":":
                self.take()
                key, value = value, self.expr()
            out.append((key, value))
            if self.peek()[1] == ",":
                self.take()
        self.take("}")
        return out


_CONSTS: dict[str, Any] = {
    "corev1.LabelHostname": "kubernetes.io/hostname",
    "corev1.ResourceCPU": "cpu",
    "corev1.ResourceMemory": "memory",
    "corev1.ResourcePods": "pods",
    "corev1.TaintEffectNoSchedule": "NoSchedule",
    "corev1.TaintEffectNoExecute": "NoExecute",
    "corev1.TaintEffectPreferNoSchedule": "PreferNoSchedule",
    "corev1.TolerationOpEqual": "Equal",
    "corev1.TolerationOpExists": "Exists",
    "corev1.NodeSelectorOpIn": "In",
    "corev1.NodeSelectorOpNotIn": "NotIn",
    "corev1.NodeSelectorOpExists": "Exists",
    "corev1.NodeSelectorOpDoesNotExist": "DoesNotExist",
    "corev1.PodRunning": "Running",
    "corev1.NodeNetworkUnavailable": "NetworkUnavailable",
    "corev1.ConditionTrue": "True",
    "corev1.PodPending": "Pending",
    "corev1.PodFailed": "Failed",
    "corev1.PodSucceeded": "Succeeded",
    "podconstants.IsGroupWorkloadAnnotationKey": "kueue.x-k8s.io/is-group-workload",
    "podconstants.IsGroupWorkloadAnnotationValue": "true",
    "true": True,
    "false": False,
    "nil": None,
}


class Unsupported(Exception):
    """A case uses an input the engine does not take."""


@dataclass
class Qty:
    text: str


class Builder:
    """A fixture builder chain (node, pod, topology assignment); methods record into `data`."""

    def __init__(self, kind: str, data: dict[str, Any]) -> None:
        self.kind, self.data = kind, data

    def call(self, method: str, args: list[Any]) -> Any:
        d = self.data
        if method == "Obj":
            return d
        if method == "TopologyAssignment" and self.kind == "ta" and not args:
            return d
        if self.kind == "node":
            if method == "Label":
                d["labels"][args[0]] = args[1]
            elif method == "StatusAllocatable":
                d["allocatable"] = {k: parse_amount(k, v.text) for k, v in args[0].items()}
            elif method == "Ready":
                d["ready"] = True
            elif method == "NotReady":
                d["ready"] = False
            elif method == "StatusConditions":
                pass  # only extra non-Ready conditions in these cases
            elif method == "Unschedulable":
                d["unschedulable"] = True
            elif method == "Taints":
                d["taints"] += [{"key": t["Key"], "value": t.get("Value", ""), "effect": t["Effect"]} for t in args]
            else:
                raise Unsupported(f"node.{method}")
            return self
        if self.kind == "pod":
            if method == "NodeName":
                d["node_name"] = args[0]
            elif method == "Request":
                d["requests"][args[0]] = parse_amount(args[0], args[1])
            elif method == "StatusPhase":
                d["phase"] = args[0]
            else:
                raise Unsupported(f"pod.{method}")
            return self
        if self.kind == "ta" and method == "Domain":
            d["Domains"].append(args[0])
            return self
        if self.kind == "wl":
            if method == "OwnerReference":
                gvk = args[0]
                api_version = f"{gvk['Group']}/{gvk['Version']}" if gvk.get("Group") else gvk["Version"]
                d["owners"].append({"apiVersion": api_version, "kind": gvk["Kind"]})
            elif method == "Annotations":
                d["annotations"].update(args[0])
            elif method == "Admission":
                d["assignments"] = args[0]
            elif method == "UnhealthyNodes":
                d["unhealthy"] += list(args)
            else:
                raise Unsupported(f"wl.{method}")
            return self
        if self.kind == "adm" and method == "PodSets":
            self.data = {psa["name"]: psa["ta"] for psa in args}
            return self
        if self.kind == "psa":
            if method == "Count":
                d["count"] = args[0]
            elif method == "TopologyAssignment":
                d["ta"] = args[0]
            else:
                raise Unsupported(f"psa.{method}")
            return self
        raise Unsupported(f"{self.kind}.{method}")


class Evaluator:
    def __init__(self, env: dict[str, Any]) -> None:
        self.env = env

    def eval(self, node: Any) -> Any:
        tag = node[0]
        if tag == "lit":
            return node[1]
        if tag == "ident":
            name = node[1]
            if name in _CONSTS:
                return _CONSTS[name]
            if name in self.env:
                return self.env[name]
            raise Unsupported(f"identifier {name}")
        if tag == "sel":
            full = _dotted(node)
            if full in _CONSTS:
                return _CONSTS[full]
            if full and full.startswith("features."):
                return full.removeprefix("features.")
            target = self.eval(node[1])
            if isinstance(target, Builder) and target.kind == "ta" and node[2] == "TopologyAssignment":
                return target.data
            if isinstance(target, Builder):
                return ("method", target, node[2])
            raise Unsupported(f"selector {full}")
        if tag == "binop":
            a, b = self.eval(node[2]), self.eval(node[3])
            return {"*": a * b, "+": a + b, "-": a - b, "/": a // b}[node[1]]
        if tag == "composite":
            return self.composite(node[1], node[2])
        if tag == "spread":
            return self.eval(node[1])
        if tag == "call":
            if node[1][0] == "opaque":
                raise Unsupported(node[1][1])
            return self.call(node[1], [self.eval(a) for a in node[2]])
        raise Unsupported(tag)

    def composite(self, typ: Any, elements: list[tuple[Any, Any]]) -> Any:
        keyed = any(k is not None for k, _ in elements)
        if not elements and (typ is None or typ[0] != "slice"):
            return {}  # an empty struct or map literal
        if not keyed:
            return [self.eval(v) for _, v in elements]
        out: dict[Any, Any] = {}
        for k, v in elements:
            key = k[1] if k[0] == "ident" and k[1] not in _CONSTS and k[1] not in self.env else self.eval(k)
            out[key] = self.eval(v)
        return out

    def call(self, fn: Any, args: list[Any]) -> Any:
        name = _dotted(fn)
        if name in ("new", "ptr.To", "int32", "int64", "string", "corev1.ResourceName", "kueue.PodSetReference"):
            return args[0]
        if name == "append":
            return [*args[0], *args[1]]
        if name == "resource.MustParse":
            return Qty(args[0])
        if name == "newTopologyTree":
            return {"levels": args[0], "nodes": _finish(args[1])}
        if name in ("testingnode.MakeNode", "node.MakeNode"):
            return Builder(
                "node",
                {
                    "name": args[0],
                    "labels": {},
                    "allocatable": {},
                    "taints": [],
                    "ready": False,
                    "unschedulable": False,
                },
            )
        if name == "testingpod.MakePod":
            return Builder("pod", {"name": args[0], "node_name": "", "requests": {}, "phase": "Pending"})
        if name == "utiltestingapi.MakeTopologyAssignment":
            return Builder("ta", {"Levels": args[0], "Domains": []})
        if name == "utiltesting.MakeNodeSelectorTerms":
            return Builder("terms", {"terms": []})
        if name == "resources.NewRequestsFromMap":
            return args[0]
        if name == "utiltesting.MakePreferredSchedulingTerms":
            return Builder("preferred", {"terms": []})
        if name == "tas.V1Beta2From":
            return args[0]  # kept in the internal form, which it round-trips to
        if name == "utiltestingapi.MakeWorkload":
            return Builder("wl", {"owners": [], "annotations": {}, "assignments": {}, "unhealthy": []})
        if name == "utiltestingapi.MakeAdmission":
            return Builder("adm", {})
        if name == "utiltestingapi.MakePodSetAssignment":
            return Builder("psa", {"name": args[0], "count": None, "ta": None})
        if name and name.endswith(".SchemeGroupVersion.WithKind"):
            group = name.split(".")[0]
            return {"Group": "" if group == "corev1" else group.removesuffix("v1"), "Version": "v1", "Kind": args[0]}
        target = self.eval(fn)
        if isinstance(target, tuple) and target[0] == "method":
            builder, method = target[1], target[2]
            if builder.kind == "terms" and method == "Term":
                builder.data["terms"].append({"key": args[0], "operator": args[1], "values": list(args[2:])})
                return builder
            if builder.kind == "terms" and method == "Obj":
                return [{"match_expressions": [t]} for t in builder.data["terms"]]
            if builder.kind == "preferred" and method == "Term":
                requirement = {"key": args[1], "operator": args[2], "values": list(args[3:])}
                builder.data["terms"].append({"weight": args[0], "preference": {"match_expressions": [requirement]}})
                return builder
            if builder.kind == "preferred" and method == "Obj":
                return builder.data["terms"]
            return builder.call(method, args)
        raise Unsupported(f"call {name}")


def _dotted(node: Any) -> str | None:
    if node[0] == "ident":
        return str(node[1])
    if node[0] == "sel":
        base = _dotted(node[1])
        return None if base is None else f"{base}.{node[2]}"
    return None


def _finish(v: Any) -> Any:
    if isinstance(v, Builder):
        return v.data
    if isinstance(v, dict):
        return {k: _finish(x) for k, x in v.items()}
    if isinstance(v, list):
        return [_finish(x) for x in v]
    return v


def _topology_request(tr: dict[str, Any] | None) -> dict[str, Any] | None:
    if tr is None:
        return None
    out: dict[str, Any] = {}
    names = {
        "Required": "required",
        "Preferred": "preferred",
        "Unconstrained": "unconstrained",
        "PodSetSliceRequiredTopology": "podSetSliceRequiredTopology",
        "PodSetSliceSize": "podSetSliceSize",
        "PodSetGroupName": "podSetGroupName",
        "PodIndexLabel": "podIndexLabel",
    }
    for k, v in tr.items():
        if k == "PodsetSliceRequiredTopologyConstraints":
            out["podsetSliceRequiredTopologyConstraints"] = [{"topology": c["Topology"], "size": c["Size"]} for c in v]
        elif k in names:
            out[names[k]] = v
        else:
            raise Unsupported(f"topologyRequest.{k}")
    return out


def _term(term: dict[str, Any]) -> dict[str, Any]:
    """A NodeSelectorTerm from the builder (already plain) or from a Go literal."""
    if "match_expressions" in term:
        return term
    return {
        "match_expressions": [
            {"key": r["Key"], "operator": r["Operator"], "values": r.get("Values") or []}
            for r in term.get("MatchExpressions") or []
        ],
        "match_fields": [
            {"key": r["Key"], "operator": r["Operator"], "values": r.get("Values") or []}
            for r in term.get("MatchFields") or []
        ],
    }


def _replacement_case(raw: dict[str, Any], env: dict[str, Any]) -> dict[str, Any]:
    """A TestFindTopologyAssignmentsMultiLayerReplacement case in TestFindTopologyAssignments' shape:
    its harness admits pod set "main" with `existingTA`, marks `unhealthyNode`, requests 1 cpu a pod."""
    return {
        **raw,
        "levels": raw.get("levels") or env["defaultLevels"],
        "workload": {
            "owners": [],
            "annotations": {},
            "assignments": {"main": raw["existingTA"]},
            "unhealthy": [raw["unhealthyNode"]],
        },
        "podSets": [
            {
                "podSetName": "main",
                "topologyRequest": raw.get("topologyRequest"),
                "requests": {"cpu": 1000},
                "count": raw["count"],
                "wantAssignment": raw.get("wantAssignment"),
                "wantReason": raw.get("wantReason", ""),
            }
        ],
    }


def _replacement(wl: dict[str, Any] | None) -> dict[str, Any] | None:
    """A Workload with unhealthy nodes, as the engine's Replacement (`OwnedBySinglePod` folded in)."""
    if wl is None or not wl["unhealthy"]:
        return None
    owners = wl["owners"]
    single_pod = (
        len(owners) == 1
        and wl["annotations"].get("kueue.x-k8s.io/is-group-workload") != "true"
        and owners[0] == {"apiVersion": "v1", "kind": "Pod"}
    )
    return {
        "unhealthy_node": wl["unhealthy"][0],
        "owned_by_single_pod": single_pod,
        "assignments": {name: _assignment(ta) for name, ta in wl["assignments"].items() if ta is not None},
    }


def _assignment(ta: Any) -> dict[str, Any] | None:
    if ta is None:
        return None
    ta = _finish(ta)
    return {"levels": ta["Levels"], "domains": [{"values": d["Values"], "count": d["Count"]} for d in ta["Domains"]]}


def convert_case(name: str, fields: dict[str, Any], ev: Evaluator) -> dict[str, Any]:
    out: dict[str, Any] = {"name": name}
    try:
        raw = {k: ev.eval(v) for k, v in fields.items()}
        if "existingTA" in raw:
            raw = _replacement_case(raw, ev.env)
        out["replacement"] = _replacement(_finish(raw.get("workload")))
        out["feature_gates"] = raw.get("featureGates") or {}
        out["levels"] = raw["levels"]
        out["nodes"] = _finish(raw.get("nodes") or [])
        out["pods"] = _finish(raw.get("pods") or [])
        out["node_labels"] = raw.get("nodeLabels") or {}
        for key in ("priorOwnUsage", "priorFlavorUsage"):
            usage = raw.get(key) or []
            out[key] = [{"values": u["Values"], "requests": u["SinglePodRequests"], "count": u["Count"]} for u in usage]
        if raw.get("aggregatedDomainUsages"):
            raise Unsupported("aggregatedDomainUsages")
        pod_sets = []
        for ps in raw["podSets"]:
            affinity = ps.get("nodeAffinity") or {}
            required = None
            if affinity.get("RequiredDuringSchedulingIgnoredDuringExecution") is not None:
                terms = affinity["RequiredDuringSchedulingIgnoredDuringExecution"]["NodeSelectorTerms"]
                required = [_term(t) for t in terms]
            preferred = [
                {"weight": t["weight"], "preference": _term(t["preference"])}
                if "preference" in t
                else {"weight": t["Weight"], "preference": _term(t["Preference"])}
                for t in affinity.get("PreferredDuringSchedulingIgnoredDuringExecution") or []
            ]
            pod_sets.append(
                {
                    "name": ps.get("podSetName", ""),
                    "topology_request": _topology_request(ps.get("topologyRequest")),
                    "requests": ps.get("requests") or {},
                    "count": ps.get("count", 0),
                    "tolerations": [
                        {
                            "key": t.get("Key", ""),
                            "operator": t.get("Operator", ""),
                            "value": t.get("Value", ""),
                            "effect": t.get("Effect", ""),
                        }
                        for t in ps.get("tolerations") or []
                    ],
                    "node_selector": ps.get("nodeSelector") or {},
                    "required_affinity": required,
                    "preferred_affinity": preferred,
                    "pod_set_group_name": ps.get("podSetGroupName"),
                    "previous_assignment": _assignment(ps.get("previousAssignment")),
                    "want_assignment": _assignment(ps.get("wantAssignment")),
                    "want_reason": ps.get("wantReason", ""),
                }
            )
        out["pod_sets"] = pod_sets
    except Unsupported as e:
        return {"name": name, "skip": str(e)}
    return out


def convert(src: str) -> list[dict[str, Any]]:
    """Both placement tables of tas_cache_test.go, each case tagged with its test function."""
    return [
        {"test": func, **case}
        for func in ("TestFindTopologyAssignments", "TestFindTopologyAssignmentsMultiLayerReplacement")
        for case in _convert_function(src, func)
    ]


def _convert_function(src: str, func: str) -> list[dict[str, Any]]:
    start = src.index(f"func {func}(")
    body = src[start:]
    body = body[: body.index("\tfor name, tc := range cases")]
    toks = tokenize(body)
    p = Parser(toks)
    env: dict[str, Any] = {}
    ev = Evaluator(env)
    while p.peek()[1] != "{":
        p.take()
    p.take("{")
    cases: list[dict[str, Any]] = []
    while p.peek()[0] != "eof":
        kind, text = p.peek()
        if text == "const":
            p.take()
            p.take("(")
            while p.peek()[1] != ")":
                name = p.take()[1]
                p.take("=")
                env[name] = ev.eval(p.expr())
            p.take(")")
        elif kind == "ident" and p.peek(1)[1] == ":=" and text != "cases":
            p.take()
            p.take(":=")
            env[text] = ev.eval(p.expr())
        elif text == "cases":
            p.take()
            p.take(":=")
            p.type_expr()
            while p.peek()[1] != "{":  # skip the struct type
                p.take()
            depth = 0
            while True:
                t = p.take()[1]
                depth += {"{": 1, "}": -1}.get(t, 0)
                if depth == 0:
                    break
            for key, value in p.elements():
                fields = {k[1]: v for k, v in value[2]}
                cases.append(convert_case(ev.eval(key), fields, ev))
            break
        else:
            p.take()
    return cases


def _lower_keys(v: Any) -> Any:
    """Go field names to their JSON names (all of these only lower the first letter)."""
    if isinstance(v, dict):
        return {(k[:1].lower() + k[1:] if isinstance(k, str) else k): _lower_keys(x) for k, x in v.items()}
    if isinstance(v, list):
        return [_lower_keys(x) for x in v]
    return v


def convert_encoding(src: str) -> list[dict[str, Any]]:
    """The encoding tables of `pkg/util/tas/tas_assignment_test.go`: `bothWaysTestCases`,
    `oneWayTestCases` (decoded only) and the cases of
    TestCompactTopologyAssignmentEncodingWithHostnamePrefixRuns, as
    {test, name, internal, v1beta2} with JSON field names."""
    ev = Evaluator({})
    out: list[dict[str, Any]] = []
    for var, end, test in (
        ("bothWaysTestCases", "var oneWayTestCases", "TestV1Beta2FromInternal"),
        ("oneWayTestCases", "var twoDomains", "TestInternalFromV1Beta2"),
    ):
        start = src.index(f"var {var}")
        p = Parser(tokenize(src[start : src.index(end)]))
        while p.peek()[1] != "=":
            p.take()
        p.take("=")
        p.type_expr()
        for _, case in p.elements():
            c = _lower_keys({k[1]: ev.eval(v) for k, v in case[2]})
            out.append({"test": test, "name": c["name"], "internal": c["internal"], "v1beta2": c["v1beta2"]})
    start = src.index("func TestCompactTopologyAssignmentEncodingWithHostnamePrefixRuns(")
    body = src[start : src.index("\tfor name, tc := range tests", start)]
    p = Parser(tokenize(body[body.index("tests :=") :]))
    p.take()
    p.take(":=")
    p.type_expr()
    while p.peek()[1] != "{":
        p.take()
    depth = 0
    while True:
        t = p.take()[1]
        depth += {"{": 1, "}": -1}.get(t, 0)
        if depth == 0:
            break
    for key, case in p.elements():
        c = _lower_keys({k[1]: ev.eval(v) for k, v in case[2]})
        out.append(
            {
                "test": "TestCompactTopologyAssignmentEncodingWithHostnamePrefixRuns",
                "name": ev.eval(key),
                "internal": c["internal"],
                "v1beta2": c["want"],
            }
        )
    return out


# The table-driven unit tests of the engine's parts, per upstream file: (test function, table variable).
_TABLES = {
    "tas_flavor_snapshot_test.go": [
        ("TestHasLevel", "testCases"),
        ("TestSortedDomainsWithLeader", "testCases"),
        ("TestSortedDomains", "testCases"),
        ("TestCountPodsInAssignment", "cases"),
        ("TestComputeAssumedUsageFromAssignment", "cases"),
        ("TestAddAssumedUsage", "cases"),
        ("TestIsTopologyAssignmentStale", "cases"),
        ("TestMergeTopologyAssignments", "cases"),
        ("TestTruncateAssignment", "cases"),
    ],
    "tas_balanced_placement_test.go": [
        ("TestSelectOptimalDomainSetToFit", "testCases"),
        ("TestPlaceSlicesOnDomainsBalanced", "testCases"),
        ("TestFindBestDomainsForBalancedPlacement", "testCases"),
    ],
}


def convert_tables(src: str, file: str) -> list[dict[str, Any]]:
    """The named case tables of one upstream unit-test file, each case as {test, name, **fields}
    with the Go field names; the variables a function declares before its table are evaluated too."""
    out: list[dict[str, Any]] = []
    for func, var in _TABLES[file]:
        start = src.index(f"func {func}(")
        body = src[start:]
        body = body[: body.index("\n}\n")]
        body = body[: body.index(f"for name, tc := range {var}")]
        p = Parser(tokenize(body))
        env: dict[str, Any] = {}
        ev = Evaluator(env)
        while p.peek()[1] != "{":
            p.take()
        p.take("{")
        while p.peek()[0] != "eof":
            kind, text = p.peek()
            if text == "const" and p.peek(1)[0] == "ident" and p.peek(2)[1] == "=":
                p.take()
                const = p.take()[1]
                p.take("=")
                env[const] = ev.eval(p.expr())
            elif kind == "ident" and p.peek(1)[1] == ":=" and text != var:
                p.take()
                p.take(":=")
                expr = p.expr()
                with contextlib.suppress(Unsupported):  # a variable no case of the table needs
                    env[text] = _finish(ev.eval(expr))
            elif text == var and p.peek(1)[1] == ":=":
                p.take()
                p.take(":=")
                p.type_expr()
                while p.peek()[1] != "{":
                    p.take()
                depth = 0
                while True:
                    t = p.take()[1]
                    depth += {"{": 1, "}": -1}.get(t, 0)
                    if depth == 0:
                        break
                for key, case in p.elements():
                    name = ev.eval(key)
                    try:
                        fields = {k[1]: _finish(ev.eval(v)) for k, v in case[2]}
                    except Unsupported as e:
                        out.append({"test": func, "name": name, "skip": str(e)})
                        continue
                    out.append({"test": func, "name": name, **fields})
                break
            else:
                p.take()
    return out


if __name__ == "__main__":
    # One case per line: diffs stay per case and a case is found by its name.
    if sys.argv[1:2] == ["tables"]:
        cases = convert_tables(sys.stdin.read(), sys.argv[2])
        sys.stdout.write("[\n" + ",\n".join(json.dumps(c) for c in cases) + "\n]\n")
        sys.exit(0)
    table = convert_encoding if sys.argv[1:] == ["encoding"] else convert
    sys.stdout.write("[\n" + ",\n".join(json.dumps(c) for c in table(sys.stdin.read())) + "\n]\n")

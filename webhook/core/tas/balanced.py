"""Balanced placement (TASBalancedPlacement, alpha and off by default in v0.19.2).

Mirrors upstream v0.19.2's `pkg/cache/scheduler/tas_balanced_placement.go`: for a preferred pod set,
find the sibling domains (children of one domain a level above the requested one) where the pods can
be spread so every chosen domain gets at least a "threshold" of slices, using as few domains as the
greedy placement would; then give each chosen domain the threshold plus what is left. Works on clones
of the domains so the BestFit fallback still sees the counts of phase 1.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING

from webhook.core.tas.tree import Domain, clone_subtree, lower_domains

if TYPE_CHECKING:
    from webhook.core.tas.assign import Params, Placer

__all__ = [
    "apply",
    "capacity_and_entropy_key",
    "evaluate_greedy",
    "find_best_domains",
    "place_slices_balanced",
    "prune_below_threshold",
    "select_optimal_domain_set",
]

_NO_OPTIMAL_SET = "TAS Balanced Placement: Cannot find optimal domain set to fit the request"


def evaluate_greedy(
    placer: Placer, domains: Sequence[Domain], slice_count: int, leader_count: int
) -> tuple[bool, int, Domain | None, Domain | None]:
    """Whether BestFit order fits the request on `domains`, how many domains it takes, and the last
    domain taken with and without a leader (`evaluateGreedyAssignment`)."""
    used = 0
    last_with_leader: Domain | None = None
    last: Domain | None = None
    remaining_slices, remaining_leaders = slice_count, leader_count
    idx = 0
    if leader_count > 0:
        with_leader = placer.sorted_domains_with_leader(domains, False)
        while remaining_leaders > 0 and idx < len(with_leader) and with_leader[idx].leader_count > 0:
            used += 1
            last_with_leader = with_leader[idx]
            remaining_leaders -= last_with_leader.leader_count
            remaining_slices -= last_with_leader.slice_count_with_leader
            idx += 1
        without_leader = placer.sorted_domains(with_leader[idx:], False)
    else:
        without_leader = placer.sorted_domains(domains, False)
    if remaining_leaders > 0:
        return False, 0, None, None
    for dom in without_leader:
        if remaining_slices <= 0 or dom.slice_count <= 0:
            break
        used += 1
        last = dom
        remaining_slices -= dom.slice_count
    if remaining_slices > 0:
        return False, 0, None, None
    return True, used, last_with_leader, last


def _entropy(domains: Sequence[Domain]) -> float:
    total = sum(d.pod_count for d in domains)
    if total == 0:
        return 0.0
    return -sum(d.pod_count / total * math.log2(d.pod_count / total) for d in domains if d.pod_count > 0)


def capacity_and_entropy_key(d: Domain) -> tuple[int, int, float, tuple[str, ...]]:
    """Leaders, then capacity with a leader, then the most evenly filled children first
    (`compareDomainCapacityAndEntropy`)."""
    return (-d.leader_count, -d.slice_count_with_leader, -_entropy(d.children), d.level_values)


def select_optimal_domain_set(
    placer: Placer, domains: Sequence[Domain], slice_count: int, leader_count: int, slice_size: int, by_entropy: bool
) -> list[Domain] | None:
    """Among sets of as many domains as the greedy placement uses, the one that fits with the least
    capacity to spare, found by dynamic programming over (domains used, leaders left, pods left)
    (`selectOptimalDomainSetToFit`)."""
    fit, size, _, _ = evaluate_greedy(placer, domains, slice_count, leader_count)
    if not fit:
        return None
    if by_entropy:
        ordered = sorted(domains, key=capacity_and_entropy_key)
    else:
        ordered = sorted(domains, key=lambda d: d.level_values)
    table: list[dict[int, dict[int, list[Domain]]]] = [{} for _ in range(size + 1)]
    table[0][leader_count] = {slice_count * slice_size: []}
    for dom in ordered:
        for i in range(size, 0, -1):
            before = table[i - 1]
            for leaders_left in sorted(before):
                for pods_left in sorted(before[leaders_left]):
                    placement = before[leaders_left][pods_left]
                    if leaders_left <= 0 and pods_left <= 0:
                        continue
                    extended = [*placement, dom]
                    if leaders_left > 0 and dom.leader_count > 0:
                        after = table[i].setdefault(leaders_left - dom.leader_count, {})
                        after.setdefault(pods_left - dom.pod_count_with_leader, extended)
                    if dom.slice_count > 0:
                        after = table[i].setdefault(leaders_left, {})
                        after.setdefault(pods_left - dom.pod_count, extended)
    done = table[size].get(0, {})
    fitting = [left for left in done if left <= 0]
    return done[max(fitting)] if fitting else None


def place_slices_balanced(
    placer: Placer, domains: Sequence[Domain], slice_count: int, leader_count: int, slice_size: int, threshold: int
) -> tuple[list[Domain], str]:
    """Give each domain of the optimal set `threshold` slices plus a share of the rest, leaders first
    (`placeSlicesOnDomainsBalanced`)."""
    chosen = select_optimal_domain_set(placer, domains, slice_count, leader_count, slice_size, False)
    if chosen is None:
        return [], _NO_OPTIMAL_SET
    if slice_count < len(chosen) * threshold:
        return [], "TAS Balanced Placement: Not enough slices to meet the threshold"
    chosen = placer.sorted_domains_with_leader(chosen, False)
    extra = slice_count - len(chosen) * threshold
    leaders_left = leader_count
    for dom in chosen:
        if leaders_left > 0:
            take = min(dom.slice_count_with_leader - threshold, extra)
            dom.leader_count = 1
            leaders_left -= 1
        elif extra > 0:
            take = min(dom.slice_count - threshold, extra)
            dom.leader_count = 0
        else:
            take = 0
            dom.leader_count = 0
        dom.slice_count = dom.slice_count_with_leader = threshold + take
        dom.pod_count = dom.slice_count * slice_size
        dom.pod_count_with_leader = dom.pod_count - dom.leader_count
        extra -= take
    if extra > 0 or leaders_left > 0:
        return [], "TAS Balanced Placement: Not all slices or leaders could be placed"
    return chosen, ""


def _clear(dom: Domain) -> None:
    dom.clear_state()
    for c in dom.children:
        _clear(c)


def _clear_leader_capacity(dom: Domain) -> None:
    dom.pod_count_with_leader = dom.slice_count_with_leader = dom.leader_count = 0
    for c in dom.children:
        _clear_leader_capacity(c)


def _prune_node(dom: Domain, threshold: int, leader_required: bool) -> None:
    if dom.slice_count < threshold:
        _clear(dom)
    elif leader_required and dom.leader_count > 0 and dom.slice_count_with_leader < threshold:
        # Still usable for workers, but not as the leader's host at this threshold.
        _clear_leader_capacity(dom)


def prune_below_threshold(
    placer: Placer,
    domains: Sequence[Domain],
    threshold: int,
    slice_size: int,
    slice_level: int,
    level: int,
    leader_required: bool,
) -> None:
    """Drop the capacity of `domains`' children below the threshold, recount `domains` (at `level`)
    and drop theirs too (`pruneDomainsBelowThreshold`)."""
    for dom in domains:
        for c in dom.children:
            _prune_node(c, threshold, leader_required)
    for dom in domains:
        placer.tree.fill_in_counts(dom, slice_size, slice_level, level, None, leader_required)
        _prune_node(dom, threshold, leader_required)


def find_best_domains(placer: Placer, p: Params) -> tuple[list[Domain], int]:
    """The sibling set with the highest balance threshold (then the fewest domains), as clones, and
    that threshold; 0 when no balanced placement exists (`findBestDomainsForBalancedPlacement`)."""
    tree = placer.tree
    slice_count = p.count // p.slice_size
    if p.requested_level == 0:
        groups = [list(tree.per_level[0].values())]
    else:
        higher = sorted(tree.per_level[p.requested_level - 1].values(), key=lambda d: d.level_values)
        groups = [h.children for h in higher]
    best_threshold = best_count = 0
    best: list[Domain] = []
    for siblings in groups:
        candidates = [clone_subtree(d) for d in siblings]
        lower = lower_domains(candidates) if p.requested_level < p.slice_level else candidates
        fits, used, last_with_leader, last = evaluate_greedy(placer, lower, slice_count, p.leader_count)
        if not fits or used == 0:
            continue
        threshold = slice_count // used
        if last_with_leader is not None:
            threshold = min(threshold, last_with_leader.slice_count_with_leader)
        if last is not None:
            threshold = min(threshold, last.slice_count)
        with_reservation = threshold
        if p.leader_count > 0 and last is not None:
            with_reservation = min(threshold, last.slice_count_with_leader)
        if threshold < best_threshold:
            continue
        prune_below_threshold(
            placer, candidates, threshold, p.slice_size, p.slice_level, p.requested_level, p.leader_count > 0
        )
        fits, count, _, _ = evaluate_greedy(placer, candidates, slice_count, p.leader_count)
        if not fits and with_reservation < threshold:
            # Retry with a lower threshold that keeps room for the leader.
            if with_reservation <= 0 or with_reservation < best_threshold:
                continue
            threshold = with_reservation
            candidates = [clone_subtree(d) for d in siblings]
            prune_below_threshold(
                placer, candidates, threshold, p.slice_size, p.slice_level, p.requested_level, p.leader_count > 0
            )
            fits, count, _, _ = evaluate_greedy(placer, candidates, slice_count, p.leader_count)
        if not fits:
            continue
        if threshold > best_threshold or (threshold == best_threshold and count < best_count):
            best_threshold, best_count, best = threshold, count, candidates
    return best, best_threshold


def apply(placer: Placer, p: Params, threshold: int, domains: list[Domain]) -> tuple[list[Domain], int, str]:
    """The balanced domains, the level they are at, or why balancing failed (`applyBalancedPlacementAlgorithm`)."""
    slice_count = p.count // p.slice_size
    level = p.requested_level
    if p.requested_level < p.slice_level:
        chosen = select_optimal_domain_set(placer, domains, slice_count, p.leader_count, p.slice_size, True)
        if chosen is None:
            return [], 0, _NO_OPTIMAL_SET
        domains = lower_domains(chosen)
        level = p.requested_level + 1
    placed, reason = place_slices_balanced(placer, domains, slice_count, p.leader_count, p.slice_size, threshold)
    if reason:
        return [], 0, reason
    return placed, level, ""

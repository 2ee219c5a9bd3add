"""Names the Kueue API fixes: groups, labels, annotations, finalizers, gates, conditions, reasons.

Every string a user or dashboard can see lives here once, spelled exactly as upstream
(`pkg/controller/constants/constants.go`, `apis/kueue/v1beta2/*`, `pkg/controller/jobs/pod/constants`).
"""

from __future__ import annotations

from enum import StrEnum

GROUP = "kueue.x-k8s.io"
V1BETA1 = "kueue.x-k8s.io/v1beta1"
V1BETA2 = "kueue.x-k8s.io/v1beta2"
CONFIG_GROUP = "config.kueue.x-k8s.io"

# Labels and annotations on Jobs and Pods.
QUEUE_LABEL = "kueue.x-k8s.io/queue-name"
PRIORITY_CLASS_LABEL = "kueue.x-k8s.io/priority-class"
MAX_EXEC_TIME_LABEL = "kueue.x-k8s.io/max-exec-time-seconds"
# FailureRecoveryPolicy (`pkg/controller/constants`, `pkg/controller/failurerecovery`): a pod opted in
# with this annotation is force-deleted once stuck terminating on an unreachable node.
SAFE_TO_FORCEFULLY_DELETE_ANNOTATION = "kueue.x-k8s.io/safe-to-forcefully-delete"
SAFE_TO_FORCEFULLY_DELETE_VALUE = "true"
FAILURE_RECOVERY_CONDITION = "KueueFailureRecovery"
FORCEFULLY_DELETED_REASON = "KueueForcefullyDeleted"
TAINT_NODE_UNREACHABLE = "node.kubernetes.io/unreachable"
PREBUILT_WORKLOAD_LABEL = "kueue.x-k8s.io/prebuilt-workload-name"
JOB_UID_LABEL = "kueue.x-k8s.io/job-uid"
MANAGED_LABEL = "kueue.x-k8s.io/managed"
PODSET_LABEL = "kueue.x-k8s.io/podset"
LOCAL_QUEUE_NAME_LABEL = "kueue.x-k8s.io/local-queue-name"
CLUSTER_QUEUE_NAME_LABEL = "kueue.x-k8s.io/cluster-queue-name"
POD_GROUP_NAME = "kueue.x-k8s.io/pod-group-name"
POD_GROUP_TOTAL_COUNT = "kueue.x-k8s.io/pod-group-total-count"
POD_GROUP_FAST_ADMISSION = "kueue.x-k8s.io/pod-group-fast-admission"
POD_GROUP_SERVING = "kueue.x-k8s.io/pod-group-serving"
POD_GROUP_POD_INDEX_LABEL_ANNOTATION = "kueue.x-k8s.io/pod-group-pod-index-label"
POD_GROUP_POD_INDEX_LABEL = "kueue.x-k8s.io/pod-group-pod-index"
RETRIABLE_IN_GROUP = "kueue.x-k8s.io/retriable-in-group"
ROLE_HASH_ANNOTATION = "kueue.x-k8s.io/role-hash"
POD_SUSPENDING_PARENT = "kueue.x-k8s.io/pod-suspending-parent"
IS_GROUP_WORKLOAD = "kueue.x-k8s.io/is-group-workload"
JOB_OWNER_GVK_ANNOTATION = "kueue.x-k8s.io/job-owner-gvk"
JOB_OWNER_NAME_ANNOTATION = "kueue.x-k8s.io/job-owner-name"
POD_INDEX_LABEL = "apps.kubernetes.io/pod-index"
"""The index label the StatefulSet controller puts on its pods (`appsv1.PodIndexLabel`)."""
JOB_MIN_PARALLELISM = "kueue.x-k8s.io/job-min-parallelism"
JOB_COMPLETIONS_EQUAL_PARALLELISM = "kueue.x-k8s.io/job-completions-equal-parallelism"
STOPPING_ANNOTATION = "kueue.x-k8s.io/stopping"
ADMISSION_GATED_BY = "kueue.x-k8s.io/admission-gated-by"
# Ours: who created a job (the AdmissionReview's userInfo.username), stamped by our mutating webhook on
# CREATE, refused on UPDATE unless our own identity changes it; the Workload takes it from its job
# (`webhook.admission.submitter`), and usage accounting reads it as the `user` dimension.
SUBMITTED_BY = "pykueue.io/submitted-by"
ELASTIC_JOB = "kueue.x-k8s.io/elastic-job"
WORKLOAD_ANNOTATION = "kueue.x-k8s.io/workload"
# Elastic Jobs (`pkg/workloadslicing/workloadslicing.go`, `apis/kueue/v1beta2/topology_types.go`): the
# slice a new Workload replaces (`namespace/name`), and the first slice's name, shared by every slice
# of the chain and stamped on the pods.
WORKLOAD_SLICE_REPLACEMENT_FOR = "kueue.x-k8s.io/workload-slice-replacement-for"
WORKLOAD_SLICE_NAME = "kueue.x-k8s.io/workload-slice-name"

# ConcurrentAdmission (`pkg/controller/constants/constants.go`): the Workload a Job owns is the
# parent of one variant Workload per flavor; each variant may only use the flavors its annotation
# lists (comma-separated) and carries the preemption gate.
CONCURRENT_ADMISSION_PARENT_LABEL = "kueue.x-k8s.io/concurrent-admission-parent"
ALLOWED_RESOURCE_FLAVORS_ANNOTATION = "kueue.x-k8s.io/workload-allowed-resource-flavors"
CONCURRENT_ADMISSION_PREEMPTION_GATE = "kueue.x-k8s.io/concurrent-admission"

# Finalizers and scheduling gates.
RESOURCE_IN_USE_FINALIZER = "kueue.x-k8s.io/resource-in-use"
POD_FINALIZER = "kueue.x-k8s.io/managed"
ADMISSION_GATE = "kueue.x-k8s.io/admission"
TOPOLOGY_GATE = "kueue.x-k8s.io/topology"
ELASTIC_JOB_GATE = "kueue.x-k8s.io/elastic-job"

DEFAULT_LOCAL_QUEUE = "default"
DEFAULT_PRIORITY_CLASS = "default"
WORKLOAD_PRIORITY_CLASS_SOURCE = "kueue.x-k8s.io/workloadpriorityclass"
POD_PRIORITY_CLASS_SOURCE = "scheduling.k8s.io/priorityclass"
NAMESPACE_NAME_LABEL = "kubernetes.io/metadata.name"
DEFAULT_NAMESPACE = "kueue-system"


class WorkloadCondition(StrEnum):
    QUOTA_RESERVED = "QuotaReserved"
    ADMITTED = "Admitted"
    EVICTED = "Evicted"
    PREEMPTED = "Preempted"
    REQUEUED = "Requeued"
    FINISHED = "Finished"
    PODS_READY = "PodsReady"
    DEACTIVATION_TARGET = "DeactivationTarget"
    BLOCKED_ON_PREEMPTION_GATES = "BlockedOnPreemptionGates"


CHECK_STATE_READY = "Ready"
"""status.admissionChecks[].state of a check that passed (`CheckStateReady`)."""
CHECK_STATE_PENDING = "Pending"
CHECK_STATE_RETRY = "Retry"
CHECK_STATE_REJECTED = "Rejected"
ADMISSION_CHECK_ACTIVE = "Active"
"""The AdmissionCheck condition its own controller sets; core Kueue only reads it."""
MULTIKUEUE_CONTROLLER = "kueue.x-k8s.io/multikueue"
PROVISIONING_REQUEST_CONTROLLER = "kueue.x-k8s.io/provisioning-request"
"""`spec.controllerName` of the AdmissionChecks whose combinations a ClusterQueue restricts."""


class QueueCondition(StrEnum):
    ACTIVE = "Active"


# Condition reasons and messages the admission core writes on Workloads and queues
# (`apis/kueue/v1beta2/{workload,clusterqueue,localqueue}_types.go`, `pkg/workload/workload.go`,
# `pkg/controller/core/workload_controller.go`, `pkg/scheduler/preemption/preemption.go`).

QUOTA_RESERVED_REASON = "QuotaReserved"
ON_HOLD_REASON = "OnHold"
"""QuotaReserved=False reason of a Workload whose quota was released on purpose and that must not
be requeued (a StatefulSet scaled to zero, `kueue.WorkloadOnHold`)."""
MSG_ON_HOLD = "StatefulSet scaled to zero; workload on hold"
MSG_NO_LONGER_ON_HOLD = "Workload no longer on hold; waiting for quota reservation"
"""QuotaReserved=True, and the reason that resets Evicted/Preempted to False on the next reservation."""


# QuotaReserved=False reasons with UnadmittedWorkloadsObservability off (`UnadmittedWorkloadReasonWithFallback`):
# `Pending`, and the deprecated `Waiting` while waitForPodsReady.blockAdmission holds the scheduler.
PENDING_REASON_FALLBACK = "Pending"
INADMISSIBLE_REASON = "Inadmissible"
"""`WorkloadInadmissible`: QuotaReserved=False behind a queue that blocks it with the gate off
(`resolveLegacyUnadmittedQuotaReservedCondition`), and Requeued=False of a DRA refusal."""
WAITING_REASON_FALLBACK = "Waiting"


class PendingReason(StrEnum):
    """QuotaReserved=False reasons (UnadmittedWorkloadsObservability on)."""

    PENDING_EVALUATION = "PendingEvaluation"
    WAITING_FOR_QUOTA = "WaitingForQuota"
    EXCEEDS_MAX_QUOTA = "ExceedsMaxQuota"
    NO_MATCHING_FLAVOR = "NoMatchingFlavor"
    WAITING_FOR_PREEMPTED_WORKLOADS = "WaitingForPreemptedWorkloads"
    MISCONFIGURED = "Misconfigured"
    SUSPENDED = "Suspended"
    WAITING_FOR_PODS_READY = "WaitingForPodsReady"
    DEACTIVATED = "Deactivated"
    ADMISSION_GATED = "AdmissionGated"


class AdmittedReason(StrEnum):
    ADMITTED = "Admitted"
    NO_RESERVATION = "NoReservation"
    UNSATISFIED_ADMISSION_CHECKS = "UnsatisfiedAdmissionChecks"
    PENDING_DELAYED_TOPOLOGY_REQUESTS = "PendingDelayedTopologyRequests"


class PreemptionReason(StrEnum):
    """Preempted=True reasons."""

    IN_CLUSTER_QUEUE = "InClusterQueue"
    IN_COHORT_RECLAMATION = "InCohortReclamation"
    IN_COHORT_FAIR_SHARING = "InCohortFairSharing"
    IN_COHORT_RECLAIM_WHILE_BORROWING = "InCohortReclaimWhileBorrowing"

    @property
    def human(self) -> str:
        """The phrase the preemption message uses for this reason."""
        return _PREEMPTION_HUMAN[self]


_PREEMPTION_HUMAN = {
    PreemptionReason.IN_CLUSTER_QUEUE: "prioritization in the ClusterQueue",
    PreemptionReason.IN_COHORT_RECLAMATION: "reclamation within the cohort",
    PreemptionReason.IN_COHORT_FAIR_SHARING: "Fair Sharing within the cohort",
    PreemptionReason.IN_COHORT_RECLAIM_WHILE_BORROWING: "reclamation within the cohort while borrowing",
}


class EvictionReason(StrEnum):
    """Evicted=True reasons (`WorkloadEvictedBy*`)."""

    PREEMPTED = "Preempted"
    PODS_READY_TIMEOUT = "PodsReadyTimeout"
    ADMISSION_CHECK = "AdmissionCheck"
    CLUSTER_QUEUE_STOPPED = "ClusterQueueStopped"
    LOCAL_QUEUE_STOPPED = "LocalQueueStopped"
    DEACTIVATED = "Deactivated"
    NODE_FAILURES = "NodeFailures"
    FLAVOR_MIGRATION = "FlavorMigration"


class RequeuedReason(StrEnum):
    """Requeued=True reasons set by the workload controller."""

    BACKOFF_FINISHED = "BackoffFinished"
    REACTIVATED = "Reactivated"
    CLUSTER_QUEUE_RESTARTED = "ClusterQueueRestarted"
    LOCAL_QUEUE_RESTARTED = "LocalQueueRestarted"


class DeactivationReason(StrEnum):
    """DeactivationTarget=True reasons (`WorkloadRequeuingLimitExceeded`, ...)."""

    REQUEUING_LIMIT_EXCEEDED = "RequeuingLimitExceeded"
    MAXIMUM_EXECUTION_TIME_EXCEEDED = "MaximumExecutionTimeExceeded"


class ClusterQueueActiveReason(StrEnum):
    """Reasons of a ClusterQueue's Active condition, in the order upstream picks the first."""

    READY = "Ready"
    TERMINATING = "Terminating"
    STOPPED = "Stopped"
    FLAVOR_NOT_FOUND = "FlavorNotFound"
    ADMISSION_CHECK_NOT_FOUND = "AdmissionCheckNotFound"
    ADMISSION_CHECK_INACTIVE = "AdmissionCheckInactive"
    MULTIPLE_MULTIKUEUE_ADMISSION_CHECKS = "MultipleMultiKueueAdmissionChecks"
    MULTIKUEUE_ADMISSION_CHECK_APPLIED_PER_FLAVOR = "MultiKueueAdmissionCheckAppliedPerFlavor"
    MULTIKUEUE_WITH_PROVISIONING_REQUEST = "MultiKueueWithProvisioningRequest"
    TOPOLOGY_NOT_FOUND = "TopologyNotFound"
    NOT_FOUND = "NotFound"


class LocalQueueActiveReason(StrEnum):
    READY = "Ready"
    STOPPED = "Stopped"
    CLUSTER_QUEUE_DOES_NOT_EXIST = "ClusterQueueDoesNotExist"
    CLUSTER_QUEUE_IS_INACTIVE = "ClusterQueueIsInactive"


# Fixed condition messages.
MSG_WORKLOAD_ADMITTED = "The workload is admitted"
MSG_NO_RESERVATION = "The workload has no reservation"
MSG_UNSATISFIED_CHECKS = "The workload has not all checks ready"
MSG_PENDING_DELAYED_TOPOLOGY = "There are pending delayed topology requests"
DELAYED_TOPOLOGY_PENDING = "Pending"
DELAYED_TOPOLOGY_READY = "Ready"
MSG_CLUSTER_QUEUE_STOPPED = "The ClusterQueue is stopped"
MSG_LOCAL_QUEUE_STOPPED = "The LocalQueue is stopped"
MSG_CLUSTER_QUEUE_RESTARTED = "The ClusterQueue was restarted after being stopped"
MSG_LOCAL_QUEUE_RESTARTED = "The LocalQueue was restarted after being stopped"
MSG_WAITING_FOR_PODS_READY = "waiting for all admitted workloads to be in PodsReady condition"
MSG_BACKOFF_FINISHED = "The workload backoff was finished"
MSG_REACTIVATED = "The workload was reactivated"
MSG_DEACTIVATED = "The workload is deactivated"
MSG_REQUEUING_LIMIT_EXCEEDED = "exceeding the maximum number of re-queuing retries"
MSG_MAX_EXECUTION_TIME_EXCEEDED = "exceeding the maximum execution time"
MSG_MAX_EXECUTION_TIME_EVENT = "The maximum execution time ({seconds}s) exceeded"
MSG_PODS_READY_TIMEOUT = "Exceeded the PodsReady timeout {key}"
MSG_CHECK_RESET = "Reset to Pending after eviction. Previously: {state}"

# ConcurrentAdmission: the scheduler's messages (`pkg/scheduler/scheduler.go`) and the variant
# controller's reasons and messages (`pkg/controller/concurrentadmission/controller.go`).
PREEMPTION_GATED_REASON = "PreemptionGated"
"""BlockedOnPreemptionGates=True reason (`kueue.PreemptionGated`)."""
MSG_PREEMPTION_GATED = "Workload requires preemption, but it's gated"
MSG_MORE_FAVORABLE_VARIANT_ADMITTED = "A more favorable variant is already admitted"
MSG_BELOW_LAST_ACCEPTABLE_FLAVOR = "Target flavor is below LastAcceptableFlavorName"
MSG_FLAVOR_MIGRATION = (
    "Evicted to accommodate a workload (UID: {uid}) due to migration to more favorable resource flavor"
)
CONCURRENT_ADMISSION_EVICTION_REASON = "ConcurrentAdmission"
MSG_NO_VARIANT_RUNNING = "No variant is running"
VARIANT_EVICTED_REASON = "VariantEvicted"
MSG_ADMITTED_VARIANT_EVICTED = "Admitted variant was evicted"
MSG_VARIANT_ADMITTED = "The variant {name} is admitted"


class VariantEventReason(StrEnum):
    """Events of the ConcurrentAdmission variant controller."""

    CREATED_VARIANT = "CreatedVariant"
    DELETED_VARIANT = "DeletedVariant"
    ACTIVATED_VARIANT = "ActivatedVariant"
    DEACTIVATED_VARIANT = "DeactivatedVariant"
    PREEMPTION_UNGATED_VARIANT = "PreemptionUngatedVariant"


# Job and Pod integrations: annotations, reasons and messages (`pkg/controller/jobframework/events.go`,
# `stop_reason.go`, `reconciler.go`, `pkg/controller/jobs/pod/{constants,pod_controller.go}`,
# `pkg/controller/constants/constants.go`).
PROVREQ_ANNOTATION_PREFIX = "provreq.kueue.x-k8s.io/"
# batchv1.JobCompletionIndexAnnotation: the pod index label of a Job's topology request.
JOB_COMPLETION_INDEX_ANNOTATION = "batch.kubernetes.io/job-completion-index"
PODSET_REQUIRED_TOPOLOGY = "kueue.x-k8s.io/podset-required-topology"
PODSET_PREFERRED_TOPOLOGY = "kueue.x-k8s.io/podset-preferred-topology"
PODSET_UNCONSTRAINED_TOPOLOGY = "kueue.x-k8s.io/podset-unconstrained-topology"
PODSET_SLICE_REQUIRED_TOPOLOGY = "kueue.x-k8s.io/podset-slice-required-topology"
PODSET_SLICE_SIZE = "kueue.x-k8s.io/podset-slice-size"
PODSET_GROUP_NAME = "kueue.x-k8s.io/podset-group-name"
POD_INDEX_OFFSET_ANNOTATION = "kueue.x-k8s.io/pod-index-offset"
"""`PodIndexOffsetAnnotation`: added to a pod set's index when TAS places it (an LWS's workers, an
MPIJob's workers beside a launcher that works too)."""
POD_TERMINATION_TARGET = "TerminationTarget"
"""Pod condition type Kueue sets before deleting a pod it stops."""
WAITING_FOR_REPLACEMENT_PODS = "WaitingForReplacementPods"
"""Workload condition type of pod groups (True while some role lacks active pods)."""
PODS_FAILED_REASON = "PodsFailed"


class JobEventReason(StrEnum):
    """Event reasons of the job integrations on Jobs, Pods and their Workloads."""

    CREATED_WORKLOAD = "CreatedWorkload"
    DELETED_WORKLOAD = "DeletedWorkload"
    UPDATED_WORKLOAD = "UpdatedWorkload"
    STARTED = "Started"
    STOPPED = "Stopped"
    SUSPENDED = "Suspended"
    FINISHED_WORKLOAD = "FinishedWorkload"
    UPDATED_ADMISSION_CHECK = "UpdatedAdmissionCheck"
    ERR_WORKLOAD_COMPOSE = "ErrWorkloadCompose"
    EXCESS_POD_DELETED = "ExcessPodDeleted"
    OWNER_REFERENCES_ADDED = "OwnerReferencesAdded"
    WORKLOAD_NAME_CONFLICT = "WorkloadNameConflict"
    WORKLOAD_PRIORITY_CLASS_NOT_FOUND = "WorkloadPriorityClassNotFound"
    JOB_NESTING_TOO_DEEP = "JobNestingTooDeep"
    DELETED = "Deleted"


class FinishedReason(StrEnum):
    """Finished=True reasons the job integrations write."""

    SUCCEEDED = "Succeeded"
    FAILED = "Failed"
    OWNER_NOT_FOUND = "OwnerNotFound"
    FAILED_TO_START = "FailedToStart"
    OUT_OF_SYNC = "OutOfSync"
    WORKLOAD_SLICE_REPLACED = "WorkloadSliceReplaced"


class StopReason(StrEnum):
    """Why a job is stopped; eviction adds `DueTo<EvictionReason>` to `WorkloadEvicted`."""

    WORKLOAD_DELETED = "WorkloadDeleted"
    WORKLOAD_EVICTED = "WorkloadEvicted"
    NO_MATCHING_WORKLOAD = "NoMatchingWorkload"
    NOT_ADMITTED = "NotAdmitted"


class PodsReadyReason(StrEnum):
    """PodsReady condition reasons (`generatePodsReadyCondition`)."""

    WAIT_FOR_START = "WaitForStart"
    WAIT_FOR_RECOVERY = "WaitForRecovery"
    STARTED = "Started"
    RECOVERED = "Recovered"


MSG_OWNER_NOT_FOUND = "The workload's owner no longer exists"
MSG_WORKLOAD_DELETED = "Workload is deleted"
MSG_NOT_ADMITTED_BY_CLUSTER_QUEUE = "Not admitted by cluster queue"
MSG_MISSING_WORKLOAD = "Missing Workload; unable to restore pod templates"
MSG_NO_MATCHING_WORKLOAD = "No matching Workload; restoring pod templates according to existent Workload"
MSG_MISSING_PREBUILT_WORKLOAD = "missing workload"
MSG_PREBUILT_OUT_OF_SYNC = "The prebuilt workload is out of sync with its user job"
MSG_SLICE_OUT_OF_SYNC = "The workload slice is out of sync with its parent job"
MSG_SLICE_REPLACED = "Replaced to accommodate a new workload slice"
MSG_SLICE_AGGREGATED = (
    "Replaced to accommodate a workload (UID: {uid}, JobUID: {job_uid}) due to workload slice aggregation"
)
MSG_DEACTIVATION_RETENTION_EXPIRED = "Deleted job: deactivation retention period expired"
MSG_CHILD_JOB_SUSPENDED = "Kueue managed child job suspended"
MSG_PODS_NOT_READY = "Not all pods are ready or succeeded"
MSG_PODS_RECOVERING = "At least one pod has failed, waiting for recovery"
MSG_PODS_READY = "All pods reached readiness and the workload is running"
MSG_PODS_NEED_REPLACEMENT = "Some Failed pods need replacement"
MSG_NO_PODS_NEED_REPLACEMENT = "No pods need replacement"
MSG_EXCESS_POD_DELETED = "Excess pod deleted"
MSG_TOO_MANY_POD_GROUP_ROLES = "pod group can't include more than 18 roles"
MSG_POD_GROUP_LABELS_MISMATCH = "constructing workload: pods have different label values"
MSG_POD_GROUP_ANNOTATIONS_MISMATCH = "constructing workload: pods have different annotation values"
MSG_PENDING_POD_OPERATIONS = "waiting to observe previous operations on pods"
MSG_NOT_A_POD_GROUP_WORKLOAD = (
    "a workload with the pod group name already exists but was not created by the pod group framework"
)

# Every public name here is API vocabulary; export them all.
__all__ = sorted(n for n, v in list(globals().items()) if not n.startswith("_") and n not in ("annotations", "StrEnum"))

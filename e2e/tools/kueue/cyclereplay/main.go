// Command cyclereplay runs one scheduling cycle of upstream Kueue's scheduler (the version pinned
// in ../go.mod) on each state given on stdin, and prints what the cycle decided. Test
// infrastructure for bench/simulate_scale.py --compare, which runs our core on the same states:
// a decision that differs on the same state is a divergence; one that does not is not.
//
// Input: one JSON object a line, {"id", "now", "namespaces", "resourceFlavors", "clusterQueues",
// "localQueues", "workloads"} (v1beta2 objects). Output: one JSON object a line, {"id",
// "admitted": [namespace/name], "preempted": {victim namespace/name: preemptor UID}}.
//
// The cycle is upstream's own `schedule`, reached with go:linkname (build with
// -ldflags=-checklinkname=0); it is set up as upstream's pkg/scheduler/scheduler_test.go sets it up:
// a fake client holding the objects, the cache and queue manager filled from it, admissions
// applied synchronously, feature gates at their defaults.
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"
	_ "unsafe" // go:linkname

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	testingclock "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	ctrl "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/kueue/pkg/util/wait"

	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"
	qcache "sigs.k8s.io/kueue/pkg/cache/queue"
	schdcache "sigs.k8s.io/kueue/pkg/cache/scheduler"
	"sigs.k8s.io/kueue/pkg/scheduler"
	preemptexpectations "sigs.k8s.io/kueue/pkg/scheduler/preemption/expectations"
	"sigs.k8s.io/kueue/pkg/util/routine"
	utiltesting "sigs.k8s.io/kueue/pkg/util/testing"
)

//go:linkname schedule sigs.k8s.io/kueue/pkg/scheduler.(*Scheduler).schedule
func schedule(s *scheduler.Scheduler, ctx context.Context) wait.SpeedSignal

//go:linkname setAdmissionRoutineWrapper sigs.k8s.io/kueue/pkg/scheduler.(*Scheduler).setAdmissionRoutineWrapper
func setAdmissionRoutineWrapper(s *scheduler.Scheduler, w routine.Wrapper)

type state struct {
	ID              string                 `json:"id"`
	Now             time.Time              `json:"now"`
	Namespaces      []string               `json:"namespaces"`
	ResourceFlavors []kueue.ResourceFlavor `json:"resourceFlavors"`
	ClusterQueues   []kueue.ClusterQueue   `json:"clusterQueues"`
	LocalQueues     []kueue.LocalQueue     `json:"localQueues"`
	Workloads       []kueue.Workload       `json:"workloads"`
}

type outcome struct {
	ID        string            `json:"id"`
	Admitted  []string          `json:"admitted"`
	Preempted map[string]string `json:"preempted"`
}

func key(wl *kueue.Workload) string { return wl.Namespace + "/" + wl.Name }

// logger is silent unless CYCLEREPLAY_V sets a verbosity, for reading one state's cycle on stderr.
func logger() logr.Logger {
	v, err := strconv.Atoi(os.Getenv("CYCLEREPLAY_V"))
	if err != nil {
		return logr.Discard()
	}
	return funcr.New(func(prefix, args string) { fmt.Fprintln(os.Stderr, prefix, args) }, funcr.Options{Verbosity: v})
}

func cycle(st *state) (*outcome, error) {
	log := logger()
	ctx := ctrl.IntoContext(context.Background(), log)
	objs := []client.Object{}
	for _, ns := range st.Namespaces {
		objs = append(objs, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{
			Name: ns, Labels: map[string]string{corev1.LabelMetadataName: ns},
		}})
	}
	before := map[string]*kueue.Workload{}
	for i := range st.Workloads {
		before[key(&st.Workloads[i])] = st.Workloads[i].DeepCopy()
	}
	cl := utiltesting.NewClientBuilder().
		WithLists(&kueue.WorkloadList{Items: st.Workloads}, &kueue.LocalQueueList{Items: st.LocalQueues}).
		WithObjects(objs...).
		WithStatusSubresource(&kueue.Workload{}).
		WithInterceptorFuncs(interceptor.Funcs{SubResourcePatch: utiltesting.TreatSSAAsStrategicMerge}).
		Build()
	cache := schdcache.New(cl)
	queues := qcache.NewManagerForUnitTests(cl, cache)
	for i := range st.LocalQueues {
		if err := queues.AddLocalQueue(ctx, &st.LocalQueues[i]); err != nil {
			return nil, fmt.Errorf("local queue %s: %w", st.LocalQueues[i].Name, err)
		}
	}
	for i := range st.ResourceFlavors {
		cache.AddOrUpdateResourceFlavor(log, &st.ResourceFlavors[i])
	}
	for i := range st.ClusterQueues {
		cq := &st.ClusterQueues[i]
		apimeta.SetStatusCondition(&cq.Status.Conditions, metav1.Condition{
			Type: kueue.ClusterQueueActive, Status: metav1.ConditionTrue, Reason: "Ready", Message: "Can admit new workloads",
		})
		if err := cache.AddClusterQueue(ctx, cq); err != nil {
			return nil, fmt.Errorf("cluster queue %s in cache: %w", cq.Name, err)
		}
		if err := queues.AddClusterQueue(ctx, cq); err != nil {
			return nil, fmt.Errorf("cluster queue %s in queues: %w", cq.Name, err)
		}
	}
	s := scheduler.New(queues, cache, cl, &utiltesting.EventRecorder{},
		scheduler.WithClock(nil, testingclock.NewFakeClock(st.Now)),
		scheduler.WithPreemptionExpectations(preemptexpectations.New()))
	var wg sync.WaitGroup
	setAdmissionRoutineWrapper(s, routine.NewWrapper(func() { wg.Add(1) }, func() { wg.Done() }))
	cctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	go queues.CleanUpOnContext(cctx)
	schedule(s, cctx)
	wg.Wait()

	var after kueue.WorkloadList
	if err := cl.List(ctx, &after); err != nil {
		return nil, err
	}
	out := &outcome{ID: st.ID, Admitted: []string{}, Preempted: map[string]string{}}
	for i := range after.Items {
		wl := &after.Items[i]
		old := before[key(wl)]
		if apimeta.IsStatusConditionTrue(wl.Status.Conditions, kueue.WorkloadQuotaReserved) &&
			(old == nil || !apimeta.IsStatusConditionTrue(old.Status.Conditions, kueue.WorkloadQuotaReserved)) {
			out.Admitted = append(out.Admitted, key(wl))
		}
		ev := apimeta.FindStatusCondition(wl.Status.Conditions, kueue.WorkloadEvicted)
		if ev != nil && ev.Status == metav1.ConditionTrue && ev.Reason == kueue.WorkloadEvictedByPreemption &&
			(old == nil || !apimeta.IsStatusConditionTrue(old.Status.Conditions, kueue.WorkloadEvicted)) {
			// "Preempted to accommodate a workload (UID: <uid>, JobUID: ...": the preemptor.
			uid := strings.TrimPrefix(ev.Message, "Preempted to accommodate a workload (UID: ")
			out.Preempted[key(wl)] = strings.SplitN(uid, ",", 2)[0]
		}
	}
	return out, nil
}

func main() {
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(make([]byte, 64<<20), 64<<20)
	enc := json.NewEncoder(os.Stdout)
	for in.Scan() {
		var st state
		if err := json.Unmarshal(in.Bytes(), &st); err != nil {
			fmt.Fprintln(os.Stderr, "cyclereplay: bad state:", err)
			os.Exit(2)
		}
		out, err := cycle(&st)
		if err != nil {
			fmt.Fprintf(os.Stderr, "cyclereplay: state %s: %v\n", st.ID, err)
			os.Exit(1)
		}
		if err := enc.Encode(out); err != nil {
			os.Exit(1)
		}
	}
	if err := in.Err(); err != nil {
		fmt.Fprintln(os.Stderr, "cyclereplay:", err)
		os.Exit(2)
	}
}

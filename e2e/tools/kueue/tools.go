//go:build tools

// Package tools records the main packages built by e2e/build-kueue.sh so
// that `go mod tidy` keeps their dependencies pinned in go.sum.
package tools

import (
	_ "sigs.k8s.io/kueue/cmd/kueue"
	_ "sigs.k8s.io/kueue/cmd/kueuectl"
	_ "sigs.k8s.io/kueue/test/performance/scheduler/minimalkueue"
	_ "sigs.k8s.io/kueue/test/performance/scheduler/runner"
)

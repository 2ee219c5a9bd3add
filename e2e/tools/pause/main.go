// Command pause holds a pod's namespaces on the real node of `make e2e-real`: containerd's CRI runs
// it as each pod's sandbox, and no registry is reachable to pull registry.k8s.io/pause. Mirrors
// kubernetes/build/pause/linux/pause.c: wait for SIGINT or SIGTERM, then exit 0.
package main

import (
	"os"
	"os/signal"
	"syscall"
)

func main() {
	// As PID 1 of a pod that shares its process namespace, leave zombies to the kernel to reap.
	signal.Ignore(syscall.SIGCHLD)
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGINT, syscall.SIGTERM)
	<-stop
}

// Module of the pod sandbox process for the real node of `make e2e-real` (e2e/node.py).
// Test infrastructure only: the product is Python.
module pykueue.local/e2e/tools/pause

go 1.24.0

// Module of the ParseQuantity oracle for tests/integration/test_quantity_go.py, pinned to the
// apimachinery of the control plane's Kubernetes (e2e/tools/k8s). Test infrastructure only.
module pykueue.local/e2e/tools/quantity

go 1.24.0

require k8s.io/apimachinery v0.34.4

require (
	github.com/fxamacker/cbor/v2 v2.9.0 // indirect
	github.com/gogo/protobuf v1.3.2 // indirect
	github.com/x448/float16 v0.8.4 // indirect
	gopkg.in/inf.v0 v0.9.1 // indirect
	sigs.k8s.io/json v0.0.0-20241014173422-cfa47c3a1cc8 // indirect
)

// Module pinning the helm binary the e2e suite renders charts/pykueue with.
// Test infrastructure only: the product is Python.
module pykueue.local/e2e/tools/helm

go 1.24.0

require helm.sh/helm/v3 v3.19.0

//go:build tools

// Package tools records kwok's main package so `go mod tidy` pins its dependencies.
package tools

import _ "sigs.k8s.io/kwok/cmd/kwok"

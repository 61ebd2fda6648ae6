//go:build tools

// Package controlplane pins the Kubernetes release whose kube-apiserver,
// kube-controller-manager and kubectl the local end-to-end run builds.
package controlplane

import (
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
	_ "k8s.io/kubernetes/cmd/kubectl"
)

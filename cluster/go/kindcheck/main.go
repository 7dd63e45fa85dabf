// Command kindcheck validates kind-config.yaml against kind's own v1alpha4 types.
//
// The project's machines have no Docker, so `kind create cluster` never runs
// here. Decoding the file strictly into kind's published Cluster type catches
// what kind itself would reject at load time: a wrong apiVersion or kind, a
// misspelt or unknown field, a value of the wrong type. It prints the decoded
// cluster as JSON, with the node image this kind release defaults to, so the
// Python test can check roles and that our pinned image is kind's own.
package main

import (
	"encoding/json"
	"fmt"
	"os"

	"sigs.k8s.io/kind/pkg/apis/config/defaults"
	"sigs.k8s.io/kind/pkg/apis/config/v1alpha4"
	"sigs.k8s.io/yaml"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: kindcheck KIND_CONFIG_YAML")
		os.Exit(2)
	}
	raw, err := os.ReadFile(os.Args[1])
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	var cluster v1alpha4.Cluster
	if err := yaml.UnmarshalStrict(raw, &cluster); err != nil {
		fmt.Fprintf(os.Stderr, "%s is not a valid kind v1alpha4 Cluster: %v\n", os.Args[1], err)
		os.Exit(1)
	}
	if cluster.Kind != "Cluster" || cluster.APIVersion != "kind.x-k8s.io/v1alpha4" {
		fmt.Fprintf(os.Stderr, "want kind Cluster, apiVersion kind.x-k8s.io/v1alpha4; got %q, %q\n",
			cluster.Kind, cluster.APIVersion)
		os.Exit(1)
	}
	v1alpha4.SetDefaultsCluster(&cluster)
	out, err := json.Marshal(struct {
		Cluster      v1alpha4.Cluster `json:"cluster"`
		DefaultImage string           `json:"kindDefaultImage"`
	}{cluster, defaults.Image})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Println(string(out))
}

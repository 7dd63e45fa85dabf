// Module kindcheck validates kind-config.yaml with kind's own config types (a test tool).
module controllers-from-scratch/cluster/go/kindcheck

go 1.26.0

require (
	sigs.k8s.io/kind v0.32.0
	sigs.k8s.io/yaml v1.6.0
)

require (
	github.com/pkg/errors v0.9.1 // indirect
	go.yaml.in/yaml/v2 v2.4.2 // indirect
)

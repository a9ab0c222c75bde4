// Package judgetest has the judge's test doubles, shared by the packages
// that judge through it (judge, webhook).
package judgetest

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/streamfusion/image-entrypoint/internal/judge"
)

// Clusters is an in-memory judge.Clusters: a fake, for the unit tests
// (the k8sreal suite runs judge.APIClusters against a real API server).
// Objects are the FlinkDeployments by namespace/name, each encoded as
// JSON when asked for (a json.RawMessage as it is); Err, when set, is
// every answer.
type Clusters struct {
	Objects map[string]any
	Err     error
}

// Get implements judge.Clusters.
func (m Clusters) Get(_ context.Context, namespace, name string) ([]byte, error) {
	if m.Err != nil {
		return nil, m.Err
	}
	obj, ok := m.Objects[namespace+"/"+name]
	if !ok {
		return nil, fmt.Errorf("FlinkDeployment %s/%s: %w", namespace, name, judge.ErrNoCluster)
	}
	return json.Marshal(obj)
}

// Ready implements judge.Clusters.
func (m Clusters) Ready() error { return m.Err }

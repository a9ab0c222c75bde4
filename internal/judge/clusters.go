package judge

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/tools/cache"
)

// FlinkDeployments is the resource a FlinkSessionJob names in
// spec.deploymentName, as the Flink Kubernetes Operator serves it.
var FlinkDeployments = schema.GroupVersionResource{Group: "flink.apache.org", Version: "v1beta1", Resource: "flinkdeployments"}

// ErrNoCluster is a FlinkDeployment that does not exist.
var ErrNoCluster = errors.New("no such FlinkDeployment")

// Clusters finds the FlinkDeployment a FlinkSessionJob runs on.
type Clusters interface {
	// Get returns the FlinkDeployment namespace/name as JSON, or an error
	// wrapping ErrNoCluster when it does not exist.
	Get(ctx context.Context, namespace, name string) ([]byte, error)
	// Ready is nil once Get answers from a synced view of the API.
	Ready() error
}

// APIClusters answers from an informer's cache of the FlinkDeployments of
// all namespaces (one list and one watch, not a GET per review). A name
// the cache does not hold is read once from the API before it is called
// missing: a FlinkDeployment applied a moment before its session job may
// not have reached the watch yet. Needs get, list and watch on
// flinkdeployments.flink.apache.org.
type APIClusters struct {
	client  dynamic.Interface
	lister  cache.GenericLister
	synced  cache.InformerSynced
	started time.Time
}

// NewAPIClusters starts the informer; it runs until ctx ends.
func NewAPIClusters(ctx context.Context, client dynamic.Interface) (*APIClusters, error) {
	f := dynamicinformer.NewDynamicSharedInformerFactory(client, 0)
	gi := f.ForResource(FlinkDeployments)
	// Only the spec and the object's name are read: status and managed
	// fields are dropped from the cache.
	if err := gi.Informer().SetTransform(func(obj any) (any, error) {
		if u, ok := obj.(*unstructured.Unstructured); ok {
			u.SetManagedFields(nil)
			unstructured.RemoveNestedField(u.Object, "status")
		}
		return obj, nil
	}); err != nil {
		return nil, fmt.Errorf("watch %s: %w", FlinkDeployments, err)
	}
	c := &APIClusters{client: client, lister: gi.Lister(), synced: gi.Informer().HasSynced, started: time.Now()}
	f.Start(ctx.Done())
	return c, nil
}

// WaitForSync waits until the first list is in the cache, or ctx ends.
func (c *APIClusters) WaitForSync(ctx context.Context) error {
	if !cache.WaitForCacheSync(ctx.Done(), c.synced) {
		return fmt.Errorf("list %s: not synced after %s: %w", FlinkDeployments, time.Since(c.started).Round(time.Millisecond), ctx.Err())
	}
	return nil
}

// Ready implements Clusters.
func (c *APIClusters) Ready() error {
	if !c.synced() {
		return fmt.Errorf("the FlinkDeployments of the cluster are not listed yet (watching %s for %s)", FlinkDeployments, time.Since(c.started).Round(time.Second))
	}
	return nil
}

// Get implements Clusters.
func (c *APIClusters) Get(ctx context.Context, namespace, name string) ([]byte, error) {
	if err := c.Ready(); err != nil {
		return nil, err
	}
	obj, err := c.lister.ByNamespace(namespace).Get(name)
	if apierrors.IsNotFound(err) {
		var u *unstructured.Unstructured
		u, err = c.client.Resource(FlinkDeployments).Namespace(namespace).Get(ctx, name, metav1.GetOptions{})
		obj = u
	}
	if apierrors.IsNotFound(err) {
		return nil, fmt.Errorf("FlinkDeployment %s/%s: %w", namespace, name, ErrNoCluster)
	}
	if err != nil {
		return nil, fmt.Errorf("get FlinkDeployment %s/%s: %w", namespace, name, err)
	}
	b, err := json.Marshal(obj)
	if err != nil {
		return nil, fmt.Errorf("encode FlinkDeployment %s/%s: %w", namespace, name, err)
	}
	return b, nil
}

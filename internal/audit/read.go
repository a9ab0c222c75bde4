package audit

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
)

// The resources the audit lists (read-only: list is all it asks).
var (
	FlinkDeployments = schema.GroupVersionResource{Group: "flink.apache.org", Version: "v1beta1", Resource: "flinkdeployments"}
	FlinkSessionJobs = schema.GroupVersionResource{Group: "flink.apache.org", Version: "v1beta1", Resource: "flinksessionjobs"}
	Pods             = schema.GroupVersionResource{Version: "v1", Resource: "pods"}
)

// Snapshot is what the audit read through the API.
type Snapshot struct {
	Deployments []Object
	SessionJobs []Object
	Pods        []corev1.Pod
	// Unread is what could not be listed: the audit is incomplete.
	Unread []Unread
	// Notes say what was not there to read (the operator's CRDs not
	// installed).
	Notes []string
}

// Object is a custom resource as JSON, with its name.
type Object struct {
	Namespace, Name string
	Raw             []byte
}

// Unread is something the audit could not read or judge, and why.
type Unread struct {
	What  string `json:"what"`
	Error string `json:"error"`
}

// pageSize bounds one list call's answer.
const pageSize = 500

// Read lists the FlinkDeployments, FlinkSessionJobs and Pods of the
// namespaces given (all when none), page by page. A kind the API does
// not serve (the operator's CRDs not installed) is a note; a list that
// fails (forbidden, unreachable) is Unread.
func Read(ctx context.Context, client dynamic.Interface, namespaces []string) Snapshot {
	var s Snapshot
	scopes := namespaces
	if len(scopes) == 0 {
		scopes = []string{metav1.NamespaceAll}
	}
	for _, gvr := range []schema.GroupVersionResource{FlinkDeployments, FlinkSessionJobs, Pods} {
		for _, ns := range scopes {
			items, err := list(ctx, client, gvr, ns)
			where := "all namespaces"
			if ns != "" {
				where = "namespace " + ns
			}
			switch {
			case apierrors.IsNotFound(err) && gvr != Pods:
				// A list in a namespace that does not exist is empty: a 404
				// is the resource itself.
				s.Notes = appendNew(s.Notes, fmt.Sprintf("the API serves no %s (the Flink Kubernetes Operator's CRDs are not installed): none audited", gvr.GroupResource()))
			case err != nil:
				s.Unread = append(s.Unread, Unread{What: fmt.Sprintf("list %s in %s", gvr.GroupResource(), where), Error: err.Error()})
			}
			for _, it := range items {
				it.SetManagedFields(nil)
				switch gvr {
				case Pods:
					var p corev1.Pod
					if err := runtime.DefaultUnstructuredConverter.FromUnstructured(it.Object, &p); err != nil {
						s.Unread = append(s.Unread, Unread{What: fmt.Sprintf("Pod %s/%s", it.GetNamespace(), it.GetName()), Error: err.Error()})
						continue
					}
					s.Pods = append(s.Pods, p)
				default:
					raw, err := json.Marshal(it.Object)
					if err != nil {
						s.Unread = append(s.Unread, Unread{What: fmt.Sprintf("%s %s/%s", it.GetKind(), it.GetNamespace(), it.GetName()), Error: err.Error()})
						continue
					}
					o := Object{Namespace: it.GetNamespace(), Name: it.GetName(), Raw: raw}
					if gvr == FlinkDeployments {
						s.Deployments = append(s.Deployments, o)
					} else {
						s.SessionJobs = append(s.SessionJobs, o)
					}
				}
			}
		}
	}
	sort.SliceStable(s.Pods, func(i, j int) bool {
		return s.Pods[i].Namespace+"/"+s.Pods[i].Name < s.Pods[j].Namespace+"/"+s.Pods[j].Name
	})
	return s
}

func list(ctx context.Context, client dynamic.Interface, gvr schema.GroupVersionResource, ns string) ([]unstructured.Unstructured, error) {
	var out []unstructured.Unstructured
	opts := metav1.ListOptions{Limit: pageSize}
	for {
		l, err := client.Resource(gvr).Namespace(ns).List(ctx, opts)
		if err != nil {
			return out, err
		}
		out = append(out, l.Items...)
		if l.GetContinue() == "" {
			return out, nil
		}
		opts.Continue = l.GetContinue()
	}
}

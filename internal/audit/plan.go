package audit

import (
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/streamfusion/image-entrypoint/internal/deploy"
)

// Item is one row of the audit: a resource and what its Pods run.
type Item struct {
	Res *deploy.Resource
	// Name is the row's name: the resource's, or for Pods of one owner
	// (a ReplicaSet's, a StatefulSet's) the owner's.
	Name string
	// Running[i] are the references (repository@digest) the Pods of
	// Res.Containers[i] run, as the runtime reports them.
	Running [][]string
	// Pods counts the Pods the row stands for.
	Pods int
	// Cluster is a session job's FlinkDeployment; nil when it does not
	// exist (then the job is refused, as the webhook refuses it).
	Cluster *Item
	Notes   []string
}

// Plan turns a snapshot into the audit's rows: each FlinkDeployment with
// the digests its Pods run (the operator's Pods carry the labels app:
// NAME and component: jobmanager or taskmanager), each FlinkSessionJob
// with its FlinkDeployment, and the other Pods that start Flink (their
// roles from their argv, as the entrypoint classifies them; Pods of one
// owner and one set of images as one row).
//
// It is long because it is one pass over the snapshot per kind of object
// (FlinkDeployments and their Pods, session jobs, the other Flink Pods),
// each a few lines.
func Plan(s Snapshot) ([]*Item, []Unread) {
	var items []*Item
	var unread []Unread
	fds := map[string]*Item{}
	for _, o := range s.Deployments {
		res, err := deploy.ParseObject(o.Raw)
		if err != nil {
			unread = append(unread, Unread{What: fmt.Sprintf("FlinkDeployment %s/%s", o.Namespace, o.Name), Error: err.Error()})
			continue
		}
		if res.Namespace == "" {
			res.Namespace = o.Namespace
		}
		it := &Item{Res: res, Name: res.Name, Running: make([][]string, len(res.Containers))}
		items = append(items, it)
		fds[res.Namespace+"/"+res.Name] = it
	}
	groups := map[string]*Item{}
	for i := range s.Pods {
		p := &s.Pods[i]
		if fd := fds[p.Namespace+"/"+p.Labels["app"]]; fd != nil && (p.Labels["component"] == "jobmanager" || p.Labels["component"] == "taskmanager") {
			fd.Pods++
			for _, st := range p.Status.ContainerStatuses {
				if st.Name != deploy.MainContainer {
					continue
				}
				for ci, ct := range fd.Res.Containers {
					if string(ct.Group) == p.Labels["component"] {
						fd.addRunning(ci, p, st)
					}
				}
			}
			continue
		}
		raw, err := json.Marshal(podForParse(p))
		if err != nil {
			unread = append(unread, Unread{What: fmt.Sprintf("Pod %s/%s", p.Namespace, p.Name), Error: err.Error()})
			continue
		}
		res, err := deploy.ParseObject(raw)
		if errors.Is(err, deploy.ErrNoWorkload) || err == nil && len(res.Containers) == 0 {
			continue // starts no Flink process
		}
		if err != nil {
			unread = append(unread, Unread{What: fmt.Sprintf("Pod %s/%s", p.Namespace, p.Name), Error: err.Error()})
			continue
		}
		if res.Namespace == "" {
			res.Namespace = p.Namespace
		}
		var images []string
		for _, ct := range res.Containers {
			images = append(images, ct.Name+"="+ct.Image+"|"+string(ct.Role))
		}
		owner, key := "", p.Namespace+"/pod/"+p.Name
		if ref := metav1.GetControllerOf(p); ref != nil {
			owner = ref.Kind + "/" + ref.Name
			key = p.Namespace + "/" + owner + "|" + strings.Join(images, ",")
		}
		it := groups[key]
		if it == nil {
			it = &Item{Res: res, Name: p.Name, Running: make([][]string, len(res.Containers))}
			if owner != "" {
				it.Name = owner
			}
			groups[key] = it
			items = append(items, it)
		}
		it.Pods++
		for _, st := range p.Status.ContainerStatuses {
			for ci, ct := range it.Res.Containers {
				if ct.Name == st.Name {
					it.addRunning(ci, p, st)
				}
			}
		}
	}
	for _, o := range s.SessionJobs {
		res, err := deploy.ParseObject(o.Raw)
		if err != nil {
			unread = append(unread, Unread{What: fmt.Sprintf("FlinkSessionJob %s/%s", o.Namespace, o.Name), Error: err.Error()})
			continue
		}
		if res.Namespace == "" {
			res.Namespace = o.Namespace
		}
		items = append(items, &Item{Res: res, Name: res.Name, Cluster: fds[res.Namespace+"/"+res.Target]})
	}
	sort.SliceStable(items, func(i, j int) bool {
		a, b := items[i], items[j]
		if a.Res.Namespace != b.Res.Namespace {
			return a.Res.Namespace < b.Res.Namespace
		}
		if ka, kb := kindOrder(a.Res.Kind), kindOrder(b.Res.Kind); ka != kb {
			return ka < kb
		}
		return a.Name < b.Name
	})
	return items, unread
}

func kindOrder(kind string) int {
	switch kind {
	case "FlinkDeployment":
		return 0
	case "FlinkSessionJob":
		return 1
	}
	return 2
}

// podForParse is the Pod as internal/deploy reads an object: kind and
// apiVersion set (a list's items carry none).
func podForParse(p *corev1.Pod) *corev1.Pod {
	cp := p.DeepCopy()
	cp.Kind, cp.APIVersion = "Pod", "v1"
	cp.Status = corev1.PodStatus{}
	return cp
}

// addRunning records the digest a container of a Pod runs.
func (it *Item) addRunning(ci int, p *corev1.Pod, st corev1.ContainerStatus) {
	if st.ImageID == "" {
		return // not started yet: the spec is what it will run
	}
	_, digest, ok := ParseImageID(st.ImageID)
	if !ok {
		it.note(fmt.Sprintf("Pod %s container %s: the runtime reports imageID %q, not a registry digest: judged by its spec's image only", p.Name, st.Name, st.ImageID))
		return
	}
	ref, err := RunningRef(it.Res.Containers[ci].Image, digest)
	if err != nil {
		it.note(fmt.Sprintf("Pod %s container %s: %v", p.Name, st.Name, err))
		return
	}
	for _, r := range it.Running[ci] {
		if r == ref {
			return
		}
	}
	it.Running[ci] = append(it.Running[ci], ref)
	sort.Strings(it.Running[ci])
}

func (it *Item) note(s string) {
	for _, n := range it.Notes {
		if n == s {
			return
		}
	}
	it.Notes = append(it.Notes, s)
}

// ID names the row in reports.
func (it *Item) ID() string {
	if it.Res.Kind == "Pod" && it.Name != it.Res.Name {
		return fmt.Sprintf("Pods of %s (%d)", it.Name, it.Pods)
	}
	return it.Res.Kind + " " + it.Name
}

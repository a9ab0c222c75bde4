package deploy

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	yaml "go.yaml.in/yaml/v3"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8syaml "sigs.k8s.io/yaml"

	"github.com/streamfusion/image-entrypoint/internal/admission"
	"github.com/streamfusion/image-entrypoint/internal/roles"
)

// ErrInput is a file or document that cannot be read as Kubernetes YAML
// or a compose file.
var ErrInput = errors.New("unreadable deployment")

// ErrNoWorkload is an object of a kind that runs no container (a Service,
// a ConfigMap): nothing to check.
var ErrNoWorkload = errors.New("the object runs no container")

// MainContainer is the container the operator and native Kubernetes run
// Flink in.
const MainContainer = "flink-main-container"

// maxInput bounds one input file.
const maxInput = 16 << 20

// ParsePath reads FILE, every *.yaml, *.yml and *.json below DIR (sorted),
// or standard input for "-".
func ParsePath(p string, stdin io.Reader) ([]*Resource, error) {
	if p == "-" {
		data, err := io.ReadAll(io.LimitReader(stdin, maxInput+1))
		if err != nil {
			return nil, fmt.Errorf("read standard input: %w", err)
		}
		return Parse("-", data)
	}
	info, err := os.Stat(p)
	if err != nil {
		return nil, err
	}
	files := []string{p}
	if info.IsDir() {
		files = nil
		err := filepath.WalkDir(p, func(f string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			switch strings.ToLower(filepath.Ext(f)) {
			case ".yaml", ".yml", ".json":
				if !d.IsDir() {
					files = append(files, f)
				}
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
		sort.Strings(files)
		if len(files) == 0 {
			return nil, fmt.Errorf("%w: %s holds no *.yaml, *.yml or *.json file", ErrInput, p)
		}
	}
	var out []*Resource
	for _, f := range files {
		data, err := readFile(f)
		if err != nil {
			return nil, err
		}
		rs, err := Parse(f, data)
		if err != nil {
			return nil, err
		}
		out = append(out, rs...)
	}
	return out, nil
}

func readFile(name string) ([]byte, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxInput+1))
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", name, err)
	}
	if len(data) > maxInput {
		return nil, fmt.Errorf("%w: %s is larger than %d bytes", ErrInput, name, maxInput)
	}
	return data, nil
}

// Parse reads every document of data; source names it in reports. Kinds
// that run no containers (Service, ConfigMap...) are left out.
func Parse(source string, data []byte) ([]*Resource, error) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var out []*Resource
	for n := 1; ; n++ {
		var node yaml.Node
		err := dec.Decode(&node)
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("%w: %s document %d: %w", ErrInput, source, n, err)
		}
		if len(node.Content) == 0 || node.Content[0].Kind == yaml.ScalarNode && node.Content[0].Tag == "!!null" {
			continue // an empty document
		}
		doc, err := yaml.Marshal(&node)
		if err != nil {
			return nil, fmt.Errorf("%w: %s document %d: %w", ErrInput, source, n, err)
		}
		rs, err := parseDocument(fmt.Sprintf("%s#%d", source, n), source, doc)
		if err != nil {
			return nil, fmt.Errorf("%w: %s document %d: %w", ErrInput, source, n, err)
		}
		out = append(out, rs...)
	}
}

// ParseObject reads one object as an admission review carries it (JSON).
func ParseObject(raw []byte) (*Resource, error) {
	rs, err := parseDocument("request", "request", raw)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInput, err)
	}
	if len(rs) != 1 {
		return nil, ErrNoWorkload
	}
	return rs[0], nil
}

type header struct {
	metav1.TypeMeta `json:",inline"`
	Services        map[string]any `json:"services"`
	Items           []object       `json:"items"`
}

type object = map[string]any

// parseDocument reads one YAML document as the kind it names. It is long
// because it is one case per kind (FlinkDeployment, FlinkSessionJob, Pod,
// the workloads, compose), each a decode and a call.
func parseDocument(source, file string, doc []byte) ([]*Resource, error) {
	var h header
	if err := k8syaml.Unmarshal(doc, &h); err != nil {
		return nil, err
	}
	if h.Kind == "" && h.Services != nil {
		var c composeFile
		if err := k8syaml.Unmarshal(doc, &c); err != nil {
			return nil, err
		}
		return []*Resource{compose(source, file, c)}, nil
	}
	var r *Resource
	var err error
	switch h.Kind {
	case "List":
		var out []*Resource
		for i, item := range h.Items {
			b, err := k8syaml.Marshal(item)
			if err != nil {
				return nil, err
			}
			rs, err := parseDocument(fmt.Sprintf("%s.items[%d]", source, i), file, b)
			if err != nil {
				return nil, err
			}
			out = append(out, rs...)
		}
		return out, nil
	case "FlinkDeployment":
		var fd flinkDeployment
		if err = k8syaml.Unmarshal(doc, &fd); err == nil {
			r = fromFlinkDeployment(&fd)
		}
	case "FlinkSessionJob":
		var sj flinkSessionJob
		if err = k8syaml.Unmarshal(doc, &sj); err == nil {
			r = fromSessionJob(&sj)
		}
	case "Pod":
		var p corev1.Pod
		if err = k8syaml.Unmarshal(doc, &p); err == nil {
			r = fromTemplate(h.Kind, p.ObjectMeta, p.ObjectMeta, &p.Spec)
		}
	case "Deployment", "StatefulSet", "DaemonSet", "ReplicaSet":
		var meta metav1.ObjectMeta
		var tpl *corev1.PodTemplateSpec
		switch h.Kind {
		case "Deployment":
			var o appsv1.Deployment
			err = k8syaml.Unmarshal(doc, &o)
			meta, tpl = o.ObjectMeta, &o.Spec.Template
		case "StatefulSet":
			var o appsv1.StatefulSet
			err = k8syaml.Unmarshal(doc, &o)
			meta, tpl = o.ObjectMeta, &o.Spec.Template
		case "DaemonSet":
			var o appsv1.DaemonSet
			err = k8syaml.Unmarshal(doc, &o)
			meta, tpl = o.ObjectMeta, &o.Spec.Template
		default:
			var o appsv1.ReplicaSet
			err = k8syaml.Unmarshal(doc, &o)
			meta, tpl = o.ObjectMeta, &o.Spec.Template
		}
		if err == nil {
			r = fromTemplate(h.Kind, meta, tpl.ObjectMeta, &tpl.Spec)
		}
	case "Job":
		var o batchv1.Job
		if err = k8syaml.Unmarshal(doc, &o); err == nil {
			r = fromTemplate(h.Kind, o.ObjectMeta, o.Spec.Template.ObjectMeta, &o.Spec.Template.Spec)
		}
	case "CronJob":
		var o batchv1.CronJob
		if err = k8syaml.Unmarshal(doc, &o); err == nil {
			t := o.Spec.JobTemplate.Spec.Template
			r = fromTemplate(h.Kind, o.ObjectMeta, t.ObjectMeta, &t.Spec)
		}
	case "":
		return nil, errors.New("no kind: neither a Kubernetes object nor a compose file (services)")
	default:
		return nil, nil // runs no container
	}
	if err != nil {
		return nil, err
	}
	r.Source = source
	return []*Resource{r}, nil
}

// fromFlinkDeployment applies the operator's rules: spec.image is the
// image of both components unless a pod template's flink-main-container
// names another; the component's template is merged over spec.podTemplate.
func fromFlinkDeployment(fd *flinkDeployment) *Resource {
	m := fd.Metadata
	r := &Resource{Kind: "FlinkDeployment", Namespace: m.Namespace, Name: m.Name,
		Cluster: key(m.Namespace, m.Name), FlinkVersion: fd.Spec.FlinkVersion}
	r.Config = flinkConfiguration(fd.Spec.FlinkConfiguration, "spec.flinkConfiguration of "+r.ID())
	if fd.Spec.Job != nil {
		r.JobArgs, r.JobJarURI = fd.Spec.Job.Args, fd.Spec.Job.JarURI
	}
	jm, tm := roles.K8sJobManager, roles.K8sTaskManager
	if fd.Spec.Mode == "standalone" {
		jm, tm = roles.JobManager, roles.TaskManager
		if fd.Spec.Job != nil {
			jm = roles.Application
		}
	}
	comp := func(c *componentSpec) *corev1.PodTemplateSpec {
		if c == nil {
			return nil
		}
		return c.PodTemplate
	}
	for _, part := range []struct {
		role roles.Role
		tpl  *corev1.PodTemplateSpec
	}{{jm, comp(fd.Spec.JobManager)}, {tm, comp(fd.Spec.TaskManager)}} {
		c := Container{Name: MainContainer, Image: fd.Spec.Image, Role: part.role, Group: GroupOf(part.role)}
		selector := map[string]string{}
		for _, t := range []*corev1.PodTemplateSpec{fd.Spec.PodTemplate, part.tpl} {
			if t == nil {
				continue
			}
			for k, v := range t.Spec.NodeSelector {
				selector[k] = v
			}
			for _, s := range t.Spec.ImagePullSecrets {
				c.PullSecrets = appendNew(c.PullSecrets, s.Name)
			}
			for _, tc := range t.Spec.Containers {
				if tc.Name == MainContainer && tc.Image != "" {
					c.Image = tc.Image
				}
				if tc.Name == MainContainer {
					for _, m := range tc.VolumeMounts {
						c.Mounts = appendNew(c.Mounts, path.Clean(m.MountPath))
					}
				}
			}
		}
		c.Platform = platformOf(selector)
		if c.Image == "" {
			r.Notes = append(r.Notes, fmt.Sprintf("%s: no spec.image and no flink-main-container image: the operator's default image is not checked", part.role))
			continue
		}
		r.Containers = append(r.Containers, c)
	}
	return r
}

func fromSessionJob(sj *flinkSessionJob) *Resource {
	m := sj.Metadata
	r := &Resource{Kind: "FlinkSessionJob", Namespace: m.Namespace, Name: m.Name,
		Cluster: key(m.Namespace, sj.Spec.DeploymentName), Target: sj.Spec.DeploymentName, Containers: []Container{}}
	if sj.Spec.Job != nil {
		r.JarURI = sj.Spec.Job.JarURI
	}
	r.Config = flinkConfiguration(sj.Spec.FlinkConfiguration, "spec.flinkConfiguration of "+r.ID())
	r.Notes = append(r.Notes, fmt.Sprintf("runs on FlinkDeployment %s: its images are the ones checked", key(m.Namespace, sj.Spec.DeploymentName)))
	return r
}

// fromTemplate finds the Flink containers of a pod spec. The role is what
// the entrypoint will classify from argv; a flink-main-container whose argv
// says nothing takes its role from the labels native Kubernetes sets
// (component: jobmanager or taskmanager).
func fromTemplate(kind string, meta, podMeta metav1.ObjectMeta, spec *corev1.PodSpec) *Resource {
	labels := map[string]string{}
	for k, v := range meta.Labels {
		labels[k] = v
	}
	for k, v := range podMeta.Labels {
		labels[k] = v
	}
	r := &Resource{Kind: kind, Namespace: meta.Namespace, Name: meta.Name, Cluster: key(meta.Namespace, kind+"/"+meta.Name), Containers: []Container{}}
	if app := labels["app"]; app != "" {
		r.Cluster = key(meta.Namespace, app)
	}
	platform := platformOf(spec.NodeSelector)
	var secrets []string
	for _, s := range spec.ImagePullSecrets {
		secrets = appendNew(secrets, s.Name)
	}
	for _, c := range spec.Containers {
		argv, bypass := argvOf(c.Command, c.Args)
		role := roles.Classify(argv)
		if role == roles.PassThrough && c.Name == MainContainer {
			role = fromLabels(labels)
		}
		flinkish := role != roles.PassThrough && role != roles.Own || c.Name == MainContainer
		if !flinkish {
			if looksFlink(c.Image) {
				r.Notes = append(r.Notes, fmt.Sprintf("container %s (%s): argv %q starts no Flink process, so the entrypoint passes it through unchecked", c.Name, c.Image, argv))
			}
			continue
		}
		if bypass {
			r.Notes = append(r.Notes, fmt.Sprintf("container %s: command %q replaces /docker-entrypoint.sh, so the entrypoint never runs there", c.Name, c.Command))
		}
		r.Containers = append(r.Containers, Container{Name: c.Name, Image: c.Image, Role: role, Group: GroupOf(role), Platform: platform, PullSecrets: secrets})
	}
	return r
}

func fromLabels(labels map[string]string) roles.Role {
	native := labels["type"] == "flink-native-kubernetes"
	switch labels["component"] {
	case "jobmanager":
		if native {
			return roles.K8sJobManager
		}
		return roles.JobManager
	case "taskmanager":
		if native {
			return roles.K8sTaskManager
		}
		return roles.TaskManager
	}
	return roles.PassThrough
}

// argvOf is what the entrypoint receives: the args, after any command
// that is the entrypoint itself. bypass is a command that replaces it.
func argvOf(command, args []string) (argv []string, bypass bool) {
	if len(command) == 0 {
		return args, false
	}
	if path.Base(command[0]) == "docker-entrypoint.sh" {
		return append(append([]string{}, command[1:]...), args...), false
	}
	return append(append([]string{}, command...), args...), true
}

func compose(source, file string, c composeFile) *Resource {
	r := &Resource{Kind: "compose", Name: file, Cluster: "compose " + file, Source: source, Containers: []Container{}}
	names := make([]string, 0, len(c.Services))
	for n := range c.Services {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		s := c.Services[n]
		argv, bypass := argvOf(words(s.Entrypoint), words(s.Command))
		role := roles.Classify(argv)
		if role == roles.PassThrough || role == roles.Own {
			if looksFlink(s.Image) {
				r.Notes = append(r.Notes, fmt.Sprintf("service %s (%s): command %q starts no Flink process, so the entrypoint passes it through unchecked", n, s.Image, argv))
			}
			continue
		}
		if bypass {
			r.Notes = append(r.Notes, fmt.Sprintf("service %s: entrypoint %v replaces /docker-entrypoint.sh, so the entrypoint never runs there", n, s.Entrypoint))
		}
		r.Containers = append(r.Containers, Container{Name: n, Image: s.Image, Role: role, Group: GroupOf(role), Platform: s.Platform})
	}
	return r
}

// words reads compose's string-or-list form; a string is split on blanks
// (compose splits it as a shell would; quotes are not honoured here).
func words(v any) []string {
	switch t := v.(type) {
	case string:
		return strings.Fields(t)
	case []any:
		var out []string
		for _, w := range t {
			out = append(out, fmt.Sprint(w))
		}
		return out
	}
	return nil
}

// platformOf reads kubernetes.io/os and kubernetes.io/arch; empty when
// the architecture is not pinned.
func platformOf(sel map[string]string) string {
	arch := sel["kubernetes.io/arch"]
	if arch == "" {
		arch = sel["beta.kubernetes.io/arch"]
	}
	if arch == "" {
		return ""
	}
	osName := sel["kubernetes.io/os"]
	if osName == "" {
		osName = "linux"
	}
	return osName + "/" + arch
}

// looksFlink reports an image whose repository names Flink.
func looksFlink(image string) bool {
	repo, _, _ := strings.Cut(image, "@")
	if i := strings.LastIndex(repo, ":"); i > strings.LastIndex(repo, "/") {
		repo = repo[:i]
	}
	return strings.Contains(strings.ToLower(path.Base(repo)), "flink")
}

func key(ns, name string) string {
	if ns == "" {
		return name
	}
	return ns + "/" + name
}

func appendNew(list []string, s string) []string {
	for _, x := range list {
		if x == s {
			return list
		}
	}
	return append(list, s)
}

// flinkConfiguration flattens a FlinkDeployment's flinkConfiguration into
// Flink's keys (nested objects joined with dots), in key order.
func flinkConfiguration(conf map[string]any, source string) []admission.Entry {
	if conf == nil {
		return nil
	}
	var out []admission.Entry
	var walk func(prefix string, v any, depth int)
	walk = func(prefix string, v any, depth int) {
		m, ok := v.(map[string]any)
		if !ok || depth > 64 {
			val := fmt.Sprint(v)
			if s, ok := v.(string); ok {
				val = s
			}
			out = append(out, admission.Entry{Key: prefix, Value: val, Source: source})
			return
		}
		keys := make([]string, 0, len(m))
		for k := range m {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			if prefix != "" {
				walk(prefix+"."+k, m[k], depth+1)
			} else {
				walk(k, m[k], depth+1)
			}
		}
	}
	walk("", conf, 0)
	return out
}

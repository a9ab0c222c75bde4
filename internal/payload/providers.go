package payload

import (
	"fmt"
	"slices"
	"strings"

	"github.com/streamfusion/image-entrypoint/internal/classfile"
)

// FileSystemFactoryService is the service Flink's FileSystem finds its
// factories by.
const FileSystemFactoryService = "org.apache.flink.core.fs.FileSystemFactory"

// ProviderServices are the services whose providers Options.Providers
// reads: the file system factories and the metric, trace and event
// reporter factories, which Flink finds by ServiceLoader in lib and in
// every plugin.
var ProviderServices = []string{
	FileSystemFactoryService,
	"org.apache.flink.metrics.reporter.MetricReporterFactory",
	"org.apache.flink.traces.reporter.TraceReporterFactory",
	"org.apache.flink.events.reporter.EventReporterFactory",
}

// Bounds on what Options.Providers reads of one JAR.
const (
	maxServiceFile   = 64 << 10 // bytes of one service file
	keepProviders    = 64       // providers kept per JAR
	maxProviderWalks = 16       // extra directory walks for superclasses
	keepFactories    = 256      // *SystemFactory.class, *ReporterFactory.class entries kept by the first walk
)

// ServiceProvider is one class a service file of the JAR names.
type ServiceProvider struct {
	Service string `json:"service"`
	Class   string `json:"class"` // binary name
	// Present says the JAR holds the class (it may still be in another
	// JAR of its class loader when it does not).
	Present bool `json:"present,omitempty"`
	// Scheme is a FileSystemFactory's getScheme() constant, found in the
	// class or its superclasses within this JAR; SchemeErr says why there
	// is none (computed at run time, inherited from outside the JAR, a
	// class that cannot be read).
	Scheme    string `json:"scheme,omitempty"`
	SchemeErr string `json:"schemeErr,omitempty"`
}

// readProviders reads the service files kept by the walk and the classes
// they name. Nothing here fails the JAR: a provider that cannot be read
// says why in its SchemeErr, and a service file that cannot be read is
// left out.
// factories are the factory-named entries the first walk kept: a class
// found there needs no second walk.
func (j *JAR) readProviders(d *directory, files []entry, factories map[string]*entry) {
	need := map[string]*entry{}
	for i := range files {
		service := strings.TrimPrefix(files[i].name, servicesPrefix)
		data, err := entryBytes(d, &files[i], maxServiceFile)
		if err != nil {
			continue
		}
		for _, class := range ServiceClasses(data) {
			if len(j.Providers) >= keepProviders {
				break
			}
			j.Providers = append(j.Providers, ServiceProvider{Service: service, Class: strings.ReplaceAll(class, "/", ".")})
			need[class+".class"] = nil
		}
	}
	if len(j.Providers) == 0 {
		return
	}
	walks := 0
	find := func(names map[string]*entry) {
		walks++
		_ = d.walk(func(n []byte, e *entry) bool {
			if _, ok := names[string(n)]; ok {
				names[string(n)] = keep(n, e)
			}
			return true
		})
	}
	missing := false
	for n := range need {
		if e, ok := factories[n]; ok {
			need[n] = e
		} else {
			missing = true
		}
	}
	if missing {
		find(need)
	}
	for i := range j.Providers {
		p := &j.Providers[i]
		name := strings.ReplaceAll(p.Class, ".", "/")
		p.Present = need[name+".class"] != nil
		if p.Service != FileSystemFactoryService || !p.Present {
			continue
		}
		p.Scheme, p.SchemeErr = schemeIn(d, name, need, func(n string) *entry {
			if walks >= maxProviderWalks {
				return nil
			}
			m := map[string]*entry{n: nil}
			find(m)
			need[n] = m[n]
			return m[n]
		})
	}
}

// schemeIn finds getScheme() in class or its superclasses within the JAR
// and returns the constant it returns.
func schemeIn(d *directory, class string, known map[string]*entry, lookup func(string) *entry) (string, string) {
	name := class
	for range 16 {
		e, ok := known[name+".class"]
		if !ok {
			e = lookup(name + ".class")
		}
		if e == nil {
			return "", fmt.Sprintf("getScheme() is inherited from %s, outside this JAR", strings.ReplaceAll(name, "/", "."))
		}
		data, err := entryBytes(d, e, classfile.MaxSize)
		if err != nil {
			return "", err.Error()
		}
		c, err := classfile.Parse(data, classfile.Options{MembersOnly: true, Returns: "getScheme"})
		if err != nil {
			return "", err.Error()
		}
		if c.Returns != "" {
			return c.Returns, ""
		}
		if slices.ContainsFunc(c.Methods, func(m classfile.Member) bool {
			return m.Name == "getScheme" && m.Descriptor == "()Ljava/lang/String;"
		}) {
			return "", "getScheme() computes its scheme at run time"
		}
		if c.Super == "" {
			break
		}
		name = c.Super
	}
	return "", "getScheme() not found in " + strings.ReplaceAll(class, "/", ".") + "'s superclasses"
}

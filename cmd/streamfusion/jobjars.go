package main

import (
	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/streamfusion/image-entrypoint/internal/jobjar"
	"github.com/streamfusion/image-entrypoint/internal/spool"
)

// jobJARFlags are how a session job's JAR is fetched, for the webhook and
// audit alike.
type jobJARFlags struct {
	JobJARs       string
	JobJARMax     string
	JobJARCA      string
	JobJARAnyHost bool
}

func (o *jobJARFlags) bind(f *pflag.FlagSet) {
	f.StringVar(&o.JobJARs, "job-jars", "fetch", "a FlinkSessionJob's http(s) jarURI: fetch (and deep-check it on its cluster's images) or off")
	f.StringVar(&o.JobJARMax, "job-jar-max-size", "512Mi", "the largest job JAR fetched (a Kubernetes quantity: 512Mi, 1Gi)")
	f.StringVar(&o.JobJARCA, "job-jar-ca-file", "", "PEM CA certificates trusted for https jarURIs besides the system roots")
	f.BoolVar(&o.JobJARAnyHost, "job-jar-any-host", false, "also fetch jarURIs whose host is a loopback, link-local, multicast or unspecified address")
}

// fetcher is the session jobs' JAR fetcher, its copies within budget (nil:
// none), asking as agent; nil with --job-jars=off.
func (o *jobJARFlags) fetcher(budget *spool.Budget, agent string) (*jobjar.Fetcher, error) {
	switch o.JobJARs {
	case "off":
		return nil, nil
	case "fetch":
	default:
		return nil, usagef("--job-jars %q: want fetch or off", o.JobJARs)
	}
	q, err := resource.ParseQuantity(o.JobJARMax)
	if err != nil || q.Value() <= 0 {
		return nil, usagef("--job-jar-max-size %q: want a positive quantity such as 512Mi", o.JobJARMax)
	}
	f, err := jobjar.New(jobjar.Options{MaxBytes: q.Value(), Budget: budget, CAFile: o.JobJARCA, AnyHost: o.JobJARAnyHost, UserAgent: agent})
	if err != nil {
		return nil, usagef("%v", err)
	}
	return f, nil
}

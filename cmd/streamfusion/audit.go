package main

import (
	"bytes"
	"fmt"
	"os"
	"time"

	"github.com/KimMachineGun/automemlimit/memlimit"
	"github.com/moby/sys/atomicwriter"
	"github.com/rs/zerolog"
	"github.com/spf13/cobra"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/streamfusion/image-entrypoint/internal/audit"
	"github.com/streamfusion/image-entrypoint/internal/image"
	"github.com/streamfusion/image-entrypoint/internal/judge"
	"github.com/streamfusion/image-entrypoint/internal/report"
	"github.com/streamfusion/image-entrypoint/internal/verdict"
)

type auditOptions struct {
	env          []string
	Kubeconfig   string
	Context      string
	Namespaces   []string
	ImageMaps    []string
	ImageMapFile string
	AddJARs      []string
	RemoveJARs   []string
	JSON         bool
	JSONFile     string
	JUnit        string
	PullSecrets  string
	Platform     string
	Timeout      time.Duration
	Concurrency  int
	jobJARFlags
}

func newAudit(env []string) *cobra.Command {
	o := &auditOptions{env: env}
	c := &cobra.Command{
		Use:   "audit [--namespace NS]... [--image-map OLD=NEW]... [--add-jar JAR]... [--remove-jar NAME]... [--json] [--junit FILE]",
		Short: "Judge what already runs in a Kubernetes cluster as the webhook would now, and what an upgrade would break",
		Long: `audit reads, through the Kubernetes API (read-only: list on flinkdeployments,
flinksessionjobs and pods), every FlinkDeployment, every FlinkSessionJob and
the Pods of standalone and native Flink clusters the operator does not
manage, in every namespace or the ones named, and judges each as the
admission webhook would now, with the webhook's own code: images by the
digest the running Pods report (status.containerStatuses[].imageID) and by
the reference the spec names now (when a tag has moved, both are judged and
the report says so), the cluster's config, and a session job's JAR on its
cluster's images. Objects applied before the webhook existed, or in the
namespaces it exempts, are judged all the same.

What-if: --image-map OLD=NEW (repeatable; OLD an image or a bare repository,
any tag of it) or --image-map-file (one OLD=NEW a line) judges every
resource as if its images were replaced; --add-jar JAR and --remove-jar NAME
(a file name or pattern) as if each image's lib changed. The report gives,
per resource, the verdict today and after, and the findings that flip.

Output: a table (namespace, resource, images, today, after, the first
finding, its fix), --json for data, --junit FILE for CI. Each image is
verified once per digest across the audit (the webhook's verdict cache and
the layer-facts cache); at most --concurrency resources are judged at once.
Progress goes to stderr when it is a terminal.

The API: --kubeconfig, else in a pod its ServiceAccount, else KUBECONFIG or
~/.kube/config. Registry credentials: the Docker config (DOCKER_CONFIG) and
pull secrets mounted below --pull-secrets, as for the webhook.

Exit status: 0 nothing would be refused; 78 something would be refused
(after the what-if; today without one); 75 the audit could not finish:
something could not be read or judged (listed under NOT READ, or as
UNVERIFIED rows) and nothing judged would be refused; 64 usage error.`,
		Args: none,
		RunE: func(c *cobra.Command, _ []string) error { return o.run(c) },
	}
	f := c.Flags()
	f.StringVar(&o.Kubeconfig, "kubeconfig", "", "kubeconfig for the API (default: the pod's ServiceAccount, else KUBECONFIG or ~/.kube/config)")
	f.StringVar(&o.Context, "context", "", "the kubeconfig's context to use")
	f.StringArrayVarP(&o.Namespaces, "namespace", "n", nil, "audit this namespace only; repeatable (default: all namespaces)")
	f.StringArrayVar(&o.ImageMaps, "image-map", nil, "what-if: judge image (or repository) OLD as NEW; OLD=NEW, repeatable")
	f.StringVar(&o.ImageMapFile, "image-map-file", "", "what-if: a file of OLD=NEW lines (# comments)")
	f.StringArrayVar(&o.AddJARs, "add-jar", nil, "what-if: this JAR added to every image's lib; repeatable")
	f.StringArrayVar(&o.RemoveJARs, "remove-jar", nil, "what-if: the JARs of every image's lib with this file name or pattern removed; repeatable")
	f.BoolVar(&o.JSON, "json", false, "print the report as JSON")
	f.StringVar(&o.JSONFile, "json-file", "", "also write the JSON report to FILE (all or nothing)")
	f.StringVar(&o.JUnit, "junit", "", "also write the report as JUnit XML to FILE (all or nothing)")
	f.StringVar(&o.PullSecrets, "pull-secrets", "", "directory of mounted image pull secrets (NAME/.dockerconfigjson)")
	f.StringVar(&o.Platform, "platform", "linux/amd64", "platform of a multi-platform image when the pod's node selector pins none")
	f.DurationVar(&o.Timeout, "timeout", audit.DefaultTimeout, "the longest one resource is judged (its images read, its session job's JAR fetched and checked)")
	f.IntVar(&o.Concurrency, "concurrency", 4, "resources judged at once (bounds the registry reads under way)")
	o.bind(f)
	return c
}

// whatIf reads the what-if flags.
func (o *auditOptions) whatIf() (audit.WhatIf, error) {
	var w audit.WhatIf
	for _, s := range o.ImageMaps {
		m, err := audit.ParseImageMap(s)
		if err != nil {
			return w, usagef("%v", err)
		}
		w.Images = append(w.Images, m)
	}
	if o.ImageMapFile != "" {
		f, err := os.Open(o.ImageMapFile)
		if err != nil {
			return w, usagef("--image-map-file: %v", err)
		}
		ms, err := audit.ParseImageMapFile(f)
		f.Close()
		if err != nil {
			return w, usagef("--image-map-file %s: %v", o.ImageMapFile, err)
		}
		w.Images = append(w.Images, ms...)
	}
	for _, p := range o.AddJARs {
		j, err := audit.ReadJAR(p)
		if err != nil {
			return w, usagef("%v", err)
		}
		w.Add = append(w.Add, j)
	}
	w.Remove = o.RemoveJARs
	if err := w.Validate(); err != nil {
		return w, usagef("%v", err)
	}
	return w, nil
}

// restConfig is --kubeconfig, else the pod's ServiceAccount, else the
// default loading rules (KUBECONFIG, ~/.kube/config).
func (o *auditOptions) restConfig() (*rest.Config, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	if o.Kubeconfig != "" {
		rules.ExplicitPath = o.Kubeconfig
	} else if cfg, err := rest.InClusterConfig(); err == nil {
		return cfg, nil
	}
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{CurrentContext: o.Context}).ClientConfig()
	if err != nil {
		return nil, usagef("no Kubernetes API access (%v); give --kubeconfig, set KUBECONFIG, or run in a pod with its ServiceAccount token mounted", err)
	}
	return cfg, nil
}

// run is the audit command: its flags checked, the cluster client, the
// judge and the verdict cache built, the objects listed and judged, the
// report written in each format asked for. It is long because it is that
// wiring, in the order it runs, and each step is a call.
func (o *auditOptions) run(c *cobra.Command) error {
	if o.Concurrency <= 0 {
		return usagef("--concurrency %d: want 1 or more", o.Concurrency)
	}
	if o.Timeout <= 0 {
		return usagef("--timeout %s: want more than 0", o.Timeout)
	}
	want, err := parsePlatform(o.Platform)
	if err != nil {
		return err
	}
	w, err := o.whatIf()
	if err != nil {
		return err
	}
	cfg, err := o.restConfig()
	if err != nil {
		return err
	}
	cfg.UserAgent = "streamfusion-audit"
	serverMemoryLimit(zerolog.Nop(), memlimit.FromCgroup) // the report says what matters; the limit is the container's
	cfg.QPS, cfg.Burst = 20, 40
	client, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return fmt.Errorf("client for %s: %w", cfg.Host, err)
	}
	jobs, err := o.fetcher(nil, "streamfusion-audit")
	if err != nil {
		return err
	}
	opts := verdict.Options{Remote: remoteOptions, VerifyTimeout: o.Timeout, MaxEntries: 1 << 16}
	opts.Read.Cache = readOptions(c, o.env).Cache
	if want != nil {
		opts.Platform = *want
	}
	views := image.NewViews(image.DefaultViews, 1<<30)
	defer views.Close()
	opts.Deep = verdict.ViewsDeep(views)
	jg := &judge.Judge{Cache: verdict.New(opts), Secrets: verdict.Secrets{Dir: o.PullSecrets}, Jobs: jobs}

	start := time.Now()
	stderr := c.ErrOrStderr()
	tty := isTerminal(stderr)
	if tty {
		fmt.Fprintf(stderr, "audit: listing FlinkDeployments, FlinkSessionJobs and Pods on %s\n", cfg.Host)
	}
	snap := audit.Read(c.Context(), client, o.Namespaces)
	items, unread := audit.Plan(snap)
	a := &audit.Auditor{Judge: jg, Timeout: o.Timeout, WhatIf: w, Concurrency: o.Concurrency}
	if tty {
		a.Progress = func(done, total int) {
			st := &jg.Cache.Stats
			fmt.Fprintf(stderr, "\r\033[Kaudit: %d/%d resources judged, %d image(s) verified", done, total, st.Verified.Load()-st.Deep.Load())
			if done == total {
				fmt.Fprintln(stderr)
			}
		}
	}
	rows := a.Run(c.Context(), items)
	rep := audit.NewReport(o.Namespaces, w, snap, unread, rows, time.Since(start))
	st := &jg.Cache.Stats
	rep.Summary.JobJARsChecked = st.Deep.Load()
	rep.Summary.ImagesVerified = st.Verified.Load() - rep.Summary.JobJARsChecked
	rep.Summary.VerdictHits = jg.Cache.Stats.Hits.Load()
	if err := c.Context().Err(); err != nil {
		rep.Unread = append(rep.Unread, audit.Unread{What: "the audit", Error: "interrupted: " + err.Error()})
	}

	out := c.OutOrStdout()
	if o.JSON {
		err = report.WriteJSON(out, rep)
	} else {
		err = rep.WriteTable(out)
	}
	if err != nil {
		return err
	}
	if o.JSONFile != "" {
		var b bytes.Buffer
		if err := report.WriteJSON(&b, rep); err != nil {
			return err
		}
		if err := atomicwriter.WriteFile(o.JSONFile, b.Bytes(), 0o644); err != nil {
			return fmt.Errorf("--json-file: %w", err)
		}
	}
	if o.JUnit != "" {
		var b bytes.Buffer
		if err := rep.WriteJUnit(&b); err != nil {
			return err
		}
		if err := atomicwriter.WriteFile(o.JUnit, b.Bytes(), 0o644); err != nil {
			return fmt.Errorf("--junit: %w", err)
		}
	}
	if code := rep.ExitCode(); code != audit.ExitAdmitted {
		return &reportedError{&statusError{code: code, err: fmt.Errorf("audit: exit %d", code)}}
	}
	return nil
}

// isTerminal says whether w is a character device (a terminal).
func isTerminal(w any) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	info, err := f.Stat()
	return err == nil && info.Mode()&os.ModeCharDevice != 0
}

package main

import (
	"cmp"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/streamfusion/image-entrypoint/internal/admission"
	"github.com/streamfusion/image-entrypoint/internal/admit"
	"github.com/streamfusion/image-entrypoint/internal/deploy"
	"github.com/streamfusion/image-entrypoint/internal/report"
	"github.com/streamfusion/image-entrypoint/internal/verdict"
)

// withDeployments adds -f to verify: verify every Flink container of
// Kubernetes YAML or compose files instead of one IMAGE.
func withDeployments(c *cobra.Command, o *verifyOptions) {
	var files []string
	c.Use = "verify [--json] [--platform OS/ARCH] IMAGE | -f FILE|DIR|- ..."
	c.Long += `

With -f, verify reads Kubernetes YAML (FlinkDeployment, FlinkSessionJob,
Deployment, StatefulSet, Job, Pod...) or docker compose files, verifies the
image of every Flink container (its role from its argv, as the entrypoint
will see it; its platform from the node selector, else --platform, else
linux/amd64), and checks each cluster: one Flink release, one StreamFusion
release and build, one JDK major across client, JobManager and TaskManagers,
and spec.flinkVersion consistent with the images.`
	c.Flags().StringArrayVarP(&files, "filename", "f", nil, "Kubernetes YAML or compose FILE, DIR (its *.yaml, *.yml, *.json) or - for standard input; repeatable")
	args, runE := c.Args, c.RunE
	c.Args = func(c *cobra.Command, a []string) error {
		if len(files) > 0 {
			if len(a) != 0 {
				return usagef("%s -f takes no IMAGE, got %q (see '%s --help')", c.CommandPath(), a, c.CommandPath())
			}
			return nil
		}
		return args(c, a)
	}
	c.RunE = func(c *cobra.Command, a []string) error {
		if len(files) == 0 {
			return runE(c, a)
		}
		return verifyDeployments(c, o, files)
	}
}

// checkedContainer is one container's verdict, as `verify -f --json` prints it.
type checkedContainer struct {
	deploy.Container
	Verdict *verdict.Verdict `json:"verdict,omitempty"`
	Message string           `json:"message,omitempty"` // the refusal, as the termination message says it
	Error   string           `json:"error,omitempty"`   // the image could not be read
}

type checkedResource struct {
	*deploy.Resource
	Containers []checkedContainer `json:"containers"`
}

type deployReport struct {
	Admitted  bool              `json:"admitted"`
	Resources []checkedResource `json:"resources"`
	Findings  []deploy.Finding  `json:"findings"`
}

func verifyDeployments(c *cobra.Command, o *verifyOptions, files []string) error {
	want, err := parsePlatform(o.Platform)
	if err != nil {
		return err
	}
	opts := verdict.Options{Remote: remoteOptions, Local: true}
	opts.Read.Cache = readOptions(c, o.env).Cache
	opts.Read.Deep = o.Deep
	if want != nil {
		opts.Platform = *want
	}
	cache := verdict.New(opts)
	var resources []*deploy.Resource
	for _, f := range files {
		rs, err := deploy.ParsePath(f, c.InOrStdin())
		if err != nil {
			return err
		}
		resources = append(resources, rs...)
	}
	if len(resources) == 0 {
		return usagef("%s: no FlinkDeployment, FlinkSessionJob, workload, Pod or compose service in %s", c.CommandPath(), strings.Join(files, ", "))
	}
	rep := deployReport{Admitted: true, Resources: []checkedResource{}}
	var members []deploy.Member
	unreadable := 0
	for _, r := range resources {
		cr := checkedResource{Resource: r, Containers: []checkedContainer{}}
		for _, ct := range r.Containers {
			cc := checkedContainer{Container: ct}
			v, err := cache.Verify(c.Context(), ct.Image, ct.Platform, verdict.Credentials{})
			switch {
			case err != nil:
				cc.Error = err.Error()
				rep.Admitted = false
				unreadable++
			default:
				cc.Verdict = v
				cc.Message = v.Message(string(ct.Role))
				rep.Admitted = rep.Admitted && v.Admitted
				members = append(members, deploy.Member{Resource: r, Container: ct, Facts: v.Facts})
			}
			cr.Containers = append(cr.Containers, cc)
		}
		rep.Resources = append(rep.Resources, cr)
	}
	rep.Findings = deploy.CheckSet(resources, members)
	if rep.Findings == nil {
		rep.Findings = []deploy.Finding{}
	}
	for _, f := range rep.Findings {
		rep.Admitted = rep.Admitted && f.Severity != admission.Error
	}
	out := c.OutOrStdout()
	if o.JSON {
		err = report.WriteJSON(out, rep)
	} else {
		err = rep.text(out)
	}
	switch {
	case err != nil:
		return err
	case unreadable > 0:
		return &reportedError{fmt.Errorf("%d image(s) could not be read", unreadable)}
	case !rep.Admitted:
		return reported(admit.ErrRefused)
	}
	return nil
}

func (r deployReport) text(w io.Writer) error {
	var b strings.Builder
	images, refused := 0, 0
	for _, cr := range r.Resources {
		fmt.Fprintf(&b, "== %s (%s)\n", cr.ID(), cr.Source)
		for _, cc := range cr.Containers {
			images++
			fmt.Fprintf(&b, "  %-22s %-20s %s", cc.Role, cc.Name, cc.Image)
			switch v := cc.Verdict; {
			case v == nil:
				refused++
				fmt.Fprintf(&b, "\n      ERROR %s\n", cc.Error)
			case v.Admitted:
				f := v.Facts
				fmt.Fprintf(&b, "  %s  ADMITTED: Flink %s, Java %s, StreamFusion %s (build %s), %s\n", v.Platform, f.Flink, f.JDK, f.StreamFusion, cmp.Or(f.Build, "none"), v.Digest)
			default:
				refused++
				fmt.Fprintf(&b, "  %s  REFUSED (%s)\n      %s\n", v.Platform, v.Digest, cc.Message)
			}
		}
		for _, n := range cr.Notes {
			fmt.Fprintf(&b, "  note: %s\n", n)
		}
	}
	for _, f := range r.Findings {
		fmt.Fprintf(&b, "%s [%s] %s\n", strings.ToUpper(string(f.Severity)), f.Rule, f.Text())
	}
	verdictWord := "ADMITTED"
	if !r.Admitted {
		verdictWord = "REFUSED"
	}
	fmt.Fprintf(&b, "StreamFusion deployment check: %s (%d resource(s), %d image(s) checked, %d refused or unreadable, %d set finding(s))\n",
		verdictWord, len(r.Resources), images, refused, len(r.Findings))
	_, err := io.WriteString(w, b.String())
	return err
}

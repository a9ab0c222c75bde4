package webhook

import (
	"bytes"
	"context"
	"os"
	"sync/atomic"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/streamfusion/image-entrypoint/internal/admission"
	"github.com/streamfusion/image-entrypoint/internal/image"
	"github.com/streamfusion/image-entrypoint/internal/verdict"
)

// standInDeep is a stand-in for the deep check until internal/image's
// lands on this branch: the image's real verification, plus an error on a
// job JAR whose bytes say BROKEN. It tests the webhook's plumbing (fetch,
// cache, message), not the deep check.
func standInDeep() (func(context.Context, image.VerifyOptions, v1.Image, verdict.JobJAR) (*image.Result, error), *atomic.Int64) {
	var runs atomic.Int64
	return func(ctx context.Context, read image.VerifyOptions, img v1.Image, jar verdict.JobJAR) (*image.Result, error) {
		runs.Add(1)
		data, err := os.ReadFile(jar.Path)
		if err != nil {
			return nil, err
		}
		res, err := read.Verify(ctx, img)
		if err != nil {
			return nil, err
		}
		if bytes.Contains(data, []byte("BROKEN")) {
			res.Decision.Findings = append(res.Decision.Findings, admission.Finding{Rule: "stand-in", Severity: admission.Error,
				Path: "/opt/flink/usrlib/" + jar.Name, Message: "stand-in", Found: "the bytes BROKEN", Required: "none", Fix: "rebuild the job"})
		}
		return res, nil
	}, &runs
}

package main

import (
	"context"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/streamfusion/image-entrypoint/internal/image"
	"github.com/streamfusion/image-entrypoint/internal/verdict"
)

// deepCheck is the webhook's deep check of a session job's JAR on an
// image; nil until internal/image's deep check is on this branch (the
// webhook then admits session jobs' JARs with a warning).
var deepCheck func(ctx context.Context, read image.VerifyOptions, img v1.Image, jar verdict.JobJAR) (*image.Result, error)

package main

import "github.com/streamfusion/image-entrypoint/internal/verdict"

// deepCheck is the webhook's deep check of a session job's JAR on an
// image: internal/image's, with the JAR in the image's usrlib.
var deepCheck = verdict.ImageDeep

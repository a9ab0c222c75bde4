package image

import (
	"fmt"
	"io"
	"os"

	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// ProgressPrinter renders updates on w (the CLI's stderr; never stdout):
// on a terminal one line per layer, rewritten in place as bytes arrive;
// elsewhere one plain line when a layer starts and one when it is done.
func ProgressPrinter(w io.Writer) func(Update) {
	tty := false
	if f, ok := w.(*os.File); ok {
		if info, err := f.Stat(); err == nil && info.Mode()&os.ModeCharDevice != 0 {
			tty = true
		}
	}
	return func(u Update) {
		if u.Op == "deep" {
			fmt.Fprintln(w, "deep check: "+u.Note)
			return
		}
		if !tty && !u.Finished && u.Done > 0 {
			return // plain output: start and end only
		}
		line := fmt.Sprintf("%s layer %d/%d %s %s", u.Op, u.Layer, u.Layers, short(u.Digest), amount(u))
		if tty {
			fmt.Fprintf(w, "\r\033[K%s", line)
			if u.Finished {
				fmt.Fprintln(w)
			}
			return
		}
		fmt.Fprintln(w, line)
	}
}

func amount(u Update) string {
	switch {
	case u.Cached:
		return "(cached)"
	case u.Finished:
		return fmt.Sprintf("done, %s", mb(u.Done))
	case u.Total > 0:
		return fmt.Sprintf("%s of %s", mb(u.Done), mb(u.Total))
	}
	return mb(u.Done)
}

func mb(n int64) string { return fmt.Sprintf("%.1f MB", float64(n)/1e6) }

func short(d string) string {
	if len(d) > 19 {
		return d[:19]
	}
	return d
}

// PushProgress turns go-containerregistry's push updates (for
// remote.WithProgress) into Updates for report. The push closes the
// channel when it ends; wait returns once every update is reported.
func PushProgress(report func(Update)) (updates chan<- v1.Update, wait func()) {
	ch := make(chan v1.Update, 16)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for u := range ch {
			if report != nil {
				report(Update{Op: "push", Layer: 1, Layers: 1, Digest: "image", Done: u.Complete, Total: u.Total,
					Finished: u.Total > 0 && u.Complete >= u.Total})
			}
		}
	}()
	return ch, func() { <-done }
}

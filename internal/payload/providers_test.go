package payload_test

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/streamfusion/image-entrypoint/internal/payload"
	"github.com/streamfusion/image-entrypoint/internal/testkit"
)

// TestProviders reads the file system and reporter factories a JAR's
// service files name: present or not, and a factory's scheme from its
// getScheme() constant, inherited, computed, or outside the JAR.
func TestProviders(t *testing.T) {
	jar := testkit.ClassJAR("", []testkit.Class{
		{Name: "x/Base", Returns: map[string]string{"getScheme": "s3"}},
		{Name: "x/S3", Super: "x/Base"},
		{Name: "x/S3A", Returns: map[string]string{"getScheme": "ldc_w:s3a"}},
		{Name: "x/Computed", Returns: map[string]string{"getScheme": ""}},
		{Name: "x/Outside", Super: "y/Elsewhere"},
		{Name: "r/Prom"},
	}, map[string][]string{
		payload.FileSystemFactoryService:                          {"x.S3", "x.S3A", "x.Computed", "x.Outside", "x.Gone"},
		"org.apache.flink.metrics.reporter.MetricReporterFactory": {"r.Prom", "r.Gone"},
		"java.sql.Driver": {"d.Driver"},
	})
	j := payload.Read(bytes.NewReader(jar), int64(len(jar)), "/p.jar", payload.Options{Providers: true})
	if j.Err != nil {
		t.Fatal(j.Err)
	}
	var got []string
	for _, p := range j.Providers {
		got = append(got, fmt.Sprintf("%s %v %s %v", p.Class, p.Present, p.Scheme, p.SchemeErr != ""))
	}
	want := "x.S3 true s3 false|x.S3A true s3a false|x.Computed true  true|x.Outside true  true|x.Gone false  false|r.Prom true  false|r.Gone false  false"
	if g := strings.Join(got, "|"); g != want {
		t.Errorf("providers:\n got %s\nwant %s", g, want)
	}
	if k := payload.Read(bytes.NewReader(jar), int64(len(jar)), "/p.jar", payload.Options{}); k.Providers != nil {
		t.Errorf("providers read without being asked for: %v", k.Providers)
	}
}

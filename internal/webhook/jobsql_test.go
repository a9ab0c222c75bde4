package webhook

import (
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionv1 "k8s.io/api/admission/v1"

	"github.com/streamfusion/image-entrypoint/internal/testkit"
	"github.com/streamfusion/image-entrypoint/internal/testkit/imagekit"
	"github.com/streamfusion/image-entrypoint/internal/verdict"
)

// TestFlinkDeploymentJobSQL: a FlinkDeployment whose spec.job.args name a
// SQL file of its image is judged with the image's deep check: a
// connector no factory of the image answers refuses it, naming the file
// and the identifier; without the args the image is admitted as before
// (its check is not deep, the file is not read).
func TestFlinkDeploymentJobSQL(t *testing.T) {
	imgs := shared(t)
	const file = "/" + testkit.FlinkHome + "/usrlib/sql/job.sql"
	img, err := mutate.AppendLayers(imgs.good, imagekit.Layer(imagekit.Entry{Name: strings.TrimPrefix(file, "/"),
		Data: []byte("CREATE TABLE orders (id INT) WITH ('connector' = 'kafka', 'format' = 'json');\n")}))
	require.NoError(t, err)
	host := registryWith(t, nil, map[string]v1Image{"sql": img})
	cache := verdict.New(verdict.Options{Deep: verdict.ImageDeep, Remote: []remote.Option{remote.WithTransport(http.DefaultTransport)}})
	s := startServer(t, Config{Cache: cache, Timeout: 28e9}, http.DefaultTransport)
	deployment := func(args ...any) map[string]any {
		fd := flinkDeployment(host+"/flink:sql", "v2_2", "")
		fd["spec"].(map[string]any)["job"] = map[string]any{"jarURI": "local:///" + testkit.FlinkHome + "/usrlib/sql-runner.jar", "args": args}
		return fd
	}
	r := s.postWithin(t, reviewOf(t, "FlinkDeployment", admissionv1.Create, deployment(file)), "30s").Response
	require.False(t, r.Allowed, "%v", r.Warnings)
	msg := r.Result.Message
	assert.Contains(t, msg, "table-factory-missing")
	assert.Contains(t, msg, file+", the SQL file spec.job.args names")
	assert.Contains(t, msg, "'kafka'")
	assert.Equal(t, int64(1), cache.Stats.Deep.Load(), "one deep check, for the JobManager's image, beside its quick one")

	r = s.postWithin(t, reviewOf(t, "FlinkDeployment", admissionv1.Create, deployment()), "30s").Response
	require.True(t, r.Allowed, "%v", r.Result)
	assert.Equal(t, int64(1), cache.Stats.Deep.Load(), "no deep check without SQL args")
}

package payload_test

// What a lib JAR says beyond its manifest: the marks the rules look at
// (classes, native libraries, logging) and flink-dist's version resource.

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/streamfusion/image-entrypoint/internal/testkit"
)

func TestReadMarksAndNative(t *testing.T) {
	t.Parallel()
	ext := testkit.Extension("kafka", "2.2", "0.1.0")
	ext.Entries = []testkit.Entry{{Name: "org/slf4j/Logger.class", Data: []byte("x")}}
	j := readBytes(t, ext.Bytes())
	require.NoError(t, j.Err)
	assert.Contains(t, j.ClassMark, "tech/streamfusion/kafka/")
	assert.Equal(t, "META-INF/native/linux-x86_64/libstreamfusion_kafka.so", j.NativeMark)
	assert.Equal(t, 1, j.NativeCount)
	assert.Equal(t, "org/slf4j/Logger.class", j.Logging)
	assert.Nil(t, j.Nested)
}

func TestReadDistProperties(t *testing.T) {
	t.Parallel()
	tree := testkit.Good("2.2.1").Tree()
	j := requireAttr(t, tree[testkit.LibDir+"/flink-dist-2.2.1.jar"], "Implementation-Version", "2.2.1")
	assert.Equal(t, "2.2.1", j.Properties["project.version"])
}

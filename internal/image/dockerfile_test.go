package image

import (
	"fmt"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The Dockerfile and bake must lay images out the same way.
func TestDockerfileMatchesBake(t *testing.T) {
	t.Parallel()
	data, err := os.ReadFile("../../Dockerfile")
	require.NoError(t, err)
	df := string(data)
	assert.Contains(t, df, "COPY --from=flink "+EntrypointPath+" "+OriginalPath, "Flink's script kept where bake keeps it")
	assert.Regexp(t, regexp.MustCompile(`COPY --from=build --chmod=`+octal(EntrypointMode)+` \S+ `+regexp.QuoteMeta(EntrypointPath)+`\n`), df)
	assert.Contains(t, df, "COPY --chmod="+octal(PayloadMode)+" ${PAYLOADS}/*.jar /opt/flink/lib/")
	// Images set no GLIBC_TUNABLES and no ROCKSDB_MUSL_LIBC, as bake sets
	// none (docs/glibc-tunables.md).
	assert.NotRegexp(t, `\nENV[^\n]*(GLIBC_TUNABLES|ROCKSDB_MUSL_LIBC)`, df)
	assert.Contains(t, df, `RUN ["`+EntrypointPath+`", "streamfusion", "check"]`)
	for _, forbidden := range []string{"\nUSER ", "\nENTRYPOINT ", "\nCMD ", "\nWORKDIR /opt"} {
		assert.NotContains(t, df[strings.LastIndex(df, "FROM ${FLINK_IMAGE}\n"):], forbidden, "the final stage keeps the base's")
	}
}

func octal(m int) string { return fmt.Sprintf("0%o", m) }

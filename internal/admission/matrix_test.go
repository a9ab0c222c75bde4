package admission

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseJavaReadsTheMajor(t *testing.T) {
	t.Parallel()
	for raw, major := range map[string]int{"17.0.15": 17, "11.0.21+9": 11, "21.0.1+12-LTS": 21, "1.8.0_392": 8, "17": 17, "17-ea": 17, `"11.0.2"`: 11} {
		t.Run(raw, func(t *testing.T) {
			t.Parallel()
			v, err := ParseJava(raw)
			require.NoError(t, err)
			assert.Equal(t, major, v.Major)
		})
	}
}

func TestParseJavaRefusesNonVersions(t *testing.T) {
	t.Parallel()
	for _, raw := range []string{"", "banana", "v17", "17..1", "-17"} {
		t.Run(raw, func(t *testing.T) {
			t.Parallel()
			_, err := ParseJava(raw)
			assert.Error(t, err)
		})
	}
}

func TestLookupKnowsTheMatrix(t *testing.T) {
	t.Parallel()
	for v, line := range map[string]string{"2.2.0": "2.2", "2.2.1": "2.2", "1.18.1": "1.18"} {
		t.Run(v, func(t *testing.T) {
			t.Parallel()
			r := Lookup(v)
			require.NotNil(t, r)
			assert.Equal(t, line, r.Line)
		})
	}
}

func TestLookupRefusesOtherReleases(t *testing.T) {
	t.Parallel()
	for _, v := range []string{"2.3.0", "2.2.2", "2.1.1", "1.18.0", "1.20.1", "2.2", "2.2.1-SNAPSHOT", "2.2.1.0", "v2.2.1", ""} {
		t.Run(v, func(t *testing.T) {
			t.Parallel()
			assert.Nil(t, Lookup(v))
		})
	}
}

func TestMatrixText(t *testing.T) {
	t.Parallel()
	assert.Equal(t, "2.2.0, 2.2.1 (line 2.2, supported); 1.18.1 (line 1.18, experimental)", MatrixText())
}

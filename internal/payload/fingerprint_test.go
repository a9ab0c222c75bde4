package payload_test

import (
	"bytes"
	"encoding/binary"
	"hash/crc32"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/streamfusion/image-entrypoint/internal/payload"
	"github.com/streamfusion/image-entrypoint/internal/testkit"
)

// The fingerprint is the CRC-32 of the bytes from the central directory's
// start to the file's end, whichever way it is taken: hashed by the walk
// as it reads the directory (Read with Options.Fingerprint), or read
// again (FingerprintOf). The oracle finds the directory from the end
// record's own fields, independently of the reader.
func TestFingerprintIsTheDirectorysCRC(t *testing.T) {
	t.Parallel()
	small := testkit.JAR("Manifest-Version: 1.0\r\n\r\n", testkit.Entry{Name: "a/B.class", Data: []byte("x")})
	cases := map[string][]byte{
		"small":                     small,
		"directory of many chunks":  testkit.ManyEntries(5000, "Manifest-Version: 1.0\r\n\r\n"),
		"a launch script before it": append([]byte("#!/bin/sh\nexec java -jar \"$0\"\n"), small...),
		"one byte past its end":     append(bytes.Clone(small), 0),
	}
	for name, data := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			end := bytes.LastIndex(data, []byte("PK\x05\x06"))
			require.GreaterOrEqual(t, end, 0)
			start := end - int(binary.LittleEndian.Uint32(data[end+12:]))
			want := payload.Fingerprint{Size: int64(len(data)), Length: int64(len(data) - start), CRC: crc32.ChecksumIEEE(data[start:])}

			j := payload.Read(bytes.NewReader(data), int64(len(data)), "/opt/flink/lib/x.jar", payload.Options{Fingerprint: true})
			require.NoError(t, j.Err)
			assert.Equal(t, want, j.Fingerprint, "hashed by the walk")
			again, err := payload.FingerprintOf(bytes.NewReader(data), int64(len(data)))
			require.NoError(t, err)
			assert.Equal(t, want, again, "read again")
		})
	}
}

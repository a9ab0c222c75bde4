package payload

import (
	"errors"
	"fmt"
	"hash/crc32"
	"io"
)

// Fingerprint identifies a JAR by what a start reads of it anyway: its
// size, and the bytes from its central directory to its end (the
// directory, the end records, the archive comment), with their CRC-32.
// The directory records every entry's name, CRC-32 and sizes, so a JAR
// whose contents change changes its fingerprint, without hashing the
// file: a start on the real 2.2.0 lib hashes 6.8 MB of directories, not
// 313 MB of JARs. It detects change; it does not authenticate (whoever
// can write a JAR into an image can write a baked verdict beside it).
type Fingerprint struct {
	Size   int64  // bytes of the file
	Length int64  // bytes from the central directory's start to the file's end
	CRC    uint32 // CRC-32 (IEEE) of those bytes
}

// IsZero reports a fingerprint that was not taken.
func (f Fingerprint) IsZero() bool { return f == Fingerprint{} }

func (f Fingerprint) String() string {
	return fmt.Sprintf("%d bytes, directory %d bytes, CRC %08x", f.Size, f.Length, f.CRC)
}

// maxFingerprinted bounds the bytes a fingerprint hashes: the JVM refuses
// a central directory over 2 GB; past that the fingerprint is not taken.
const maxFingerprinted = 1 << 31

// fingerprint hashes the bytes from the directory's start to the file's
// end: the directory as the walk hashed it while reading it (one pass
// over its bytes), else through one read buffer, and what follows it (the
// end records) read.
func (d *directory) fingerprint() (Fingerprint, error) {
	n := d.size - d.offset
	if n < 0 || n > maxFingerprinted {
		return Fingerprint{}, formatErr("a %d-byte directory is past what a fingerprint takes", n)
	}
	f := Fingerprint{Size: d.size, Length: n}
	from := d.offset
	if d.hashed {
		f.CRC = d.crc
		from += d.length
	}
	buf := make([]byte, min(d.size-from, cdChunk))
	for off := from; off < d.size; {
		k, err := d.r.ReadAt(buf[:min(int64(len(buf)), d.size-off)], off)
		f.CRC = crc32.Update(f.CRC, crc32.IEEETable, buf[:k])
		off += int64(k)
		if err != nil && !(errors.Is(err, io.EOF) && off == d.size) {
			return Fingerprint{}, fmt.Errorf("read central directory for its fingerprint: %w", err)
		}
		if k == 0 && err == nil {
			return Fingerprint{}, fmt.Errorf("read central directory for its fingerprint: no progress at offset %d", off)
		}
	}
	return f, nil
}

// Fingerprint returns the fingerprint of the archive's file.
func (a *Archive) Fingerprint() (Fingerprint, error) {
	if a == nil || a.d == nil {
		return Fingerprint{}, errors.New("no archive")
	}
	return a.d.fingerprint()
}

// FingerprintOf returns the fingerprint of the JAR in r, size bytes long.
func FingerprintOf(r io.ReaderAt, size int64) (Fingerprint, error) {
	d, err := openDirectory(r, size)
	if err != nil {
		return Fingerprint{}, err
	}
	return d.fingerprint()
}

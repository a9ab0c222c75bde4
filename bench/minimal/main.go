// Command minimal is the reference reader of the benchmark: for every JAR
// below lib it maps the file (one fstat and one mmap), finds the
// end-of-central-directory record, walks every record of the central
// directory and inflates the manifest, then execs its target. Nothing
// else: the reads any entrypoint cannot avoid, two files at a time, with
// no checks a reader of untrusted archives needs (ZIP64, bounds beyond what
// keeps it from crashing on the benchmark's own files).
package main

import (
	"bytes"
	"compress/flate"
	"encoding/binary"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
)

func main() {
	lib, target := os.Args[1], os.Args[2]
	var jars []string
	_ = filepath.WalkDir(lib, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(p, ".jar") {
			jars = append(jars, p)
		}
		return nil
	})
	next := make(chan string)
	var wg sync.WaitGroup
	var mu sync.Mutex
	total, manifests := 0, 0
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for p := range next {
				n, mf := walk(p)
				mu.Lock()
				total += n
				if mf > 0 {
					manifests++
				}
				mu.Unlock()
			}
		}()
	}
	for _, j := range jars {
		next <- j
	}
	close(next)
	wg.Wait()
	if total == 0 || manifests == 0 {
		fmt.Fprintln(os.Stderr, "minimal: no entries or no manifests")
		os.Exit(1)
	}
	panic(syscall.Exec(target, []string{target}, os.Environ()))
}

// walk maps the JAR at p and returns the number of central-directory
// records and the length of its inflated manifest.
func walk(p string) (int, int) {
	fd, err := syscall.Open(p, syscall.O_RDONLY|syscall.O_CLOEXEC, 0)
	if err != nil {
		return 0, 0
	}
	defer syscall.Close(fd)
	var st syscall.Stat_t
	if syscall.Fstat(fd, &st) != nil || st.Size < 22 {
		return 0, 0
	}
	m, err := syscall.Mmap(fd, 0, int(st.Size), syscall.PROT_READ, syscall.MAP_SHARED)
	if err != nil {
		return 0, 0
	}
	defer syscall.Munmap(m)
	at := -1
	for i := len(m) - 22; i >= 0 && i >= len(m)-22-65535; i-- {
		if binary.LittleEndian.Uint32(m[i:]) == 0x06054b50 {
			at = i
			break
		}
	}
	if at < 0 {
		return 0, 0
	}
	cdLen := int(binary.LittleEndian.Uint32(m[at+12:]))
	cdOff := int(binary.LittleEndian.Uint32(m[at+16:]))
	if cdOff+cdLen > len(m) {
		return 0, 0
	}
	cd := m[cdOff : cdOff+cdLen]
	n, mf := 0, 0
	for i := 0; i+46 <= len(cd); n++ {
		nameLen := int(binary.LittleEndian.Uint16(cd[i+28:]))
		next := i + 46 + nameLen + int(binary.LittleEndian.Uint16(cd[i+30:])) + int(binary.LittleEndian.Uint16(cd[i+32:]))
		if next > len(cd) {
			break
		}
		if string(cd[i+46:i+46+nameLen]) == "META-INF/MANIFEST.MF" {
			mf = manifest(m, cd[i:])
		}
		i = next
	}
	return n, mf
}

// manifest inflates the entry whose central record starts rec.
func manifest(m, rec []byte) int {
	method := binary.LittleEndian.Uint16(rec[10:])
	packed := int(binary.LittleEndian.Uint32(rec[20:]))
	local := int(binary.LittleEndian.Uint32(rec[42:]))
	if local+30 > len(m) {
		return 0
	}
	data := local + 30 + int(binary.LittleEndian.Uint16(m[local+26:])) + int(binary.LittleEndian.Uint16(m[local+28:]))
	if data+packed > len(m) {
		return 0
	}
	if method == 0 {
		return packed
	}
	r := flate.NewReader(bytes.NewReader(m[data : data+packed]))
	n, _ := io.Copy(io.Discard, r)
	return int(n)
}

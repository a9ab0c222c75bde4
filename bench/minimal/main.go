// Command minimal is the reference reader of the benchmark: for every JAR
// below lib it reads the end-of-central-directory record and the central
// directory, walks the records, then execs its target. Nothing else: the
// reads any entrypoint cannot avoid, two files at a time.
package main

import (
	"encoding/binary"
	"fmt"
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
	total := 0
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			buf := make([]byte, 0, 1<<20)
			for p := range next {
				n, b := walk(p, buf)
				buf = b
				mu.Lock()
				total += n
				mu.Unlock()
			}
		}()
	}
	for _, j := range jars {
		next <- j
	}
	close(next)
	wg.Wait()
	if total == 0 {
		fmt.Fprintln(os.Stderr, "minimal: no entries")
		os.Exit(1)
	}
	panic(syscall.Exec(target, []string{target}, os.Environ()))
}

func walk(p string, buf []byte) (int, []byte) {
	f, err := os.Open(p)
	if err != nil {
		return 0, buf
	}
	defer f.Close()
	st, _ := f.Stat()
	size := st.Size()
	tail := min(size, 22+65535)
	t := make([]byte, tail)
	if _, err := f.ReadAt(t, size-tail); err != nil {
		return 0, buf
	}
	at := -1
	for i := len(t) - 22; i >= 0; i-- {
		if binary.LittleEndian.Uint32(t[i:]) == 0x06054b50 {
			at = i
			break
		}
	}
	if at < 0 {
		return 0, buf
	}
	cdLen := int(binary.LittleEndian.Uint32(t[at+12:]))
	cdOff := int64(binary.LittleEndian.Uint32(t[at+16:]))
	if cap(buf) < cdLen {
		buf = make([]byte, cdLen)
	}
	cd := buf[:cdLen]
	if _, err := f.ReadAt(cd, cdOff); err != nil {
		return 0, buf
	}
	n := 0
	for i := 0; i+46 <= len(cd); n++ {
		i += 46 + int(binary.LittleEndian.Uint16(cd[i+28:])) + int(binary.LittleEndian.Uint16(cd[i+30:])) + int(binary.LittleEndian.Uint16(cd[i+32:]))
	}
	return n, buf
}

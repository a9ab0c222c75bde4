package host

import (
	"errors"
	"fmt"
	"io/fs"
	"path"
	"strings"

	"github.com/streamfusion/image-entrypoint/internal/admission"
	"github.com/streamfusion/image-entrypoint/internal/flinkconf"
)

// maxScriptConf is what the scripts' sed is read for (chooseJavaHome);
// the YAML and line readers take at most flinkconf.MaxBytes of it.
const maxScriptConf = 4 << 20

// confFileData is the config file of a release, read once for every
// reader of it in one gather: the scripts' sed (chooseJavaHome), the line
// or YAML reader (ReadConfig), the parent-first patterns (gatherDeep).
type confFileData struct {
	file    string // absolute
	present bool
	data    []byte
	err     error // reading it

	parsed  bool
	entries []flinkconf.Entry // ReadYAML's, parsed on first use
	yamlErr error
}

func readConfFile(fsys fs.FS, confDir, flinkVersion string) *confFileData {
	file := confFile(fsys, confDir, flinkVersion)
	c := &confFileData{file: file, present: exists(fsys, file)}
	c.data, c.err = readSmall(fsys, rel(file), maxScriptConf)
	return c
}

// yaml is the file as Flink 2.x loads it, parsed once.
func (c *confFileData) yaml() ([]flinkconf.Entry, error) {
	if !c.parsed {
		c.parsed = true
		switch {
		case errors.Is(c.err, errTooLarge):
			c.yamlErr = fmt.Errorf("%w: %s is larger than %d bytes", flinkconf.ErrTooLarge, c.file, flinkconf.MaxBytes)
		case c.err != nil:
			c.yamlErr = fmt.Errorf("read %s: %w", c.file, c.err)
		default:
			c.entries, c.yamlErr = flinkconf.ReadYAML(c.data, c.file)
		}
	}
	return c.entries, c.yamlErr
}

// ReadConfig returns the configuration the process about to start runs
// with, as Flink builds it on the launch path: the config file of the
// release (flinkVersion; confFile), FLINK_PROPERTIES as the image
// entrypoint merges it (1.18: appended to flink-conf.yaml, then envsubst
// over the file; 2.x: each line a dynamic property of the rewrite), then
// the dynamic properties of argv (-D key=value, -Dkey=value), which win.
// Without s.ConfDir it returns the zero Config, which turns the config
// rules off.
func ReadConfig(fsys fs.FS, s Settings, flinkVersion string) admission.Config {
	if s.ConfDir == "" {
		return admission.Config{}
	}
	return readConfig(fsys, s, flinkVersion, readConfFile(fsys, s.ConfDir, flinkVersion))
}

func readConfig(fsys fs.FS, s Settings, flinkVersion string, cf *confFileData) admission.Config {
	file := cf.file
	c := admission.Config{Role: s.Role, Dir: path.Clean(s.ConfDir), File: file, Env: map[string]string{}, Present: cf.present}
	if v, ok := admission.ParseFlinkVersion(flinkVersion); ok && (v.Major >= 2 || v.Major == 1 && v.Minor <= 18) {
		other := path.Join(s.ConfDir, "flink-conf.yaml")
		if path.Base(file) == "flink-conf.yaml" {
			other = path.Join(s.ConfDir, "config.yaml")
		}
		if exists(fsys, other) {
			c.Other = other
		}
	}
	var fileEntries []admission.Entry
	if c.Present {
		switch {
		case path.Base(file) != "flink-conf.yaml":
			var err error
			if fileEntries, err = cf.yaml(); err != nil {
				c.Err = err
				fileEntries = nil
			}
			fileEntries = append(fileEntries[:len(fileEntries):len(fileEntries)], propertyEntries(s)...)
		case errors.Is(cf.err, errTooLarge) || cf.err == nil && len(cf.data) > flinkconf.MaxBytes:
			c.Err = fmt.Errorf("%w: %s is larger than %d bytes", flinkconf.ErrTooLarge, file, flinkconf.MaxBytes)
		case cf.err != nil:
			c.Err = fmt.Errorf("read %s: %w", file, cf.err)
		default:
			fileEntries = legacyEntries(string(cf.data), file, s)
		}
	} else if s.Launch == LaunchImage && s.FlinkProperties != "" && path.Base(file) == "flink-conf.yaml" {
		fileEntries = legacyEntries("", file, s) // the image entrypoint's echo creates the file
	}
	c.Entries = append(fileEntries[:len(fileEntries):len(fileEntries)], flinkconf.Dynamic(s.Args)...)
	if s.Getenv != nil {
		for _, k := range []string{"GLIBC_TUNABLES"} {
			if v, ok := s.Getenv(k); ok {
				c.Env[k] = v
			}
		}
	}
	if s.Role == "taskmanager" || s.Role == "kubernetes-taskmanager" {
		c.JVMOptions = flinkconf.TaskManagerJVM(fileEntries, s.Getenv)
	}
	return c
}

// legacyEntries reads flink-conf.yaml as Flink 1.18 does
// (flinkconf.ReadLegacy). On the image path FLINK_PROPERTIES is appended
// first (echo: with a newline) and envsubst runs over the whole file.
func legacyEntries(text, file string, s Settings) []admission.Entry {
	base := strings.Count(text, "\n") // lines from here on were appended (echo >> joins an unterminated last line to the first)
	if s.Launch == LaunchImage {
		if s.FlinkProperties != "" {
			text += s.FlinkProperties + "\n"
		}
		text = envsubst(text, s.Getenv)
	}
	return flinkconf.ReadLegacy(text, func(i int) string {
		if s.Launch == LaunchImage && s.FlinkProperties != "" && i >= base {
			return "FLINK_PROPERTIES"
		}
		return fmt.Sprintf("%s, line %d", file, i+1)
	})
}

// propertyEntries are FLINK_PROPERTIES as the 2.x image entrypoint hands
// them to Flink's bin/config-parser-utils.sh, which rewrites config.yaml:
// each line trimmed of spaces and split at the first ':', the key kept as
// it is and the value (its spaces kept) through envsubst, passed as one
// argument -Dkey=value. Flink's bin/bash-java-utils.sh then joins its
// arguments and splits them again at white space (runBashJavaUtilsCmd's
// unquoted $dynamic_args) before BashJavaUtils parses the -D properties:
// a value after "key: " is lost to that split, and words of a value that
// start with -D become properties of their own.
func propertyEntries(s Settings) []admission.Entry {
	if s.Launch != LaunchImage || s.FlinkProperties == "" {
		return nil
	}
	var args []string
	for _, line := range strings.Split(s.FlinkProperties, "\n") {
		line = strings.TrimFunc(line, isSpace)
		if line == "" {
			continue
		}
		k, v, _ := strings.Cut(line, ":")
		args = append(args, "-D"+k+"="+strings.TrimRight(envsubst(v, s.Getenv), "\n"))
	}
	out := flinkconf.Dynamic(strings.Fields(strings.Join(args, " ")))
	for i := range out {
		out[i].Source = "FLINK_PROPERTIES"
	}
	return out
}

func isSpace(r rune) bool {
	return r == ' ' || r == '\t' || r == '\n' || r == '\r' || r == '\v' || r == '\f'
}

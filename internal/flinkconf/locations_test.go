package flinkconf

import (
	"fmt"
	"testing"
)

// TestLocationOptionsAreOptions holds the list of location options to the
// releases' tables: every entry is an option of every release (by one of
// its keys), and so is every key a condition reads.
func TestLocationOptionsAreOptions(t *testing.T) {
	// each condition's keys: one of each group is an option of every release
	conds := [][]string{{"high-availability.type"}, {"state.changelog.enabled", "state.backend.changelog.enabled"},
		{"state.changelog.storage", "state.backend.changelog.storage"}, {"fs.default-scheme"}, {"fs.allowed-fallback-filesystems"}}
	for _, rel := range Releases() {
		keys := KeysOf(rel)
		for _, o := range locationOptions {
			found := false
			for _, k := range o.keys {
				found = found || keys.Option(k) != nil
			}
			if !found {
				t.Errorf("%s: none of %v is an option", rel, o.keys)
			}
		}
		for _, group := range conds {
			found := false
			for _, k := range group {
				found = found || keys.Option(k) != nil
			}
			if !found {
				t.Errorf("%s: none of %v is an option", rel, group)
			}
		}
	}
}

func TestLocations(t *testing.T) {
	e := func(k, v string) Entry { return Entry{Key: k, Value: v, Source: "test"} }
	for _, tc := range []struct {
		rel     string
		role    string
		entries []Entry
		want    string
	}{
		{"2.2.0", "", []Entry{e("execution.checkpointing.dir", "s3://b/cp")}, "[execution.checkpointing.dir s3 s3://b/cp]"},
		// a deprecated key, read by 2.2's option
		{"2.2.0", "", []Entry{e("state.checkpoints.dir", "gs://b/cp")}, "[execution.checkpointing.dir gs gs://b/cp]"},
		// the option's own key wins over its deprecated key
		{"2.2.0", "", []Entry{e("execution.checkpointing.dir", "s3://a"), e("state.checkpoints.dir", "gs://b")}, "[execution.checkpointing.dir s3 s3://a]"},
		{"1.18.1", "", []Entry{e("state.checkpoints.dir", "s3p://b/cp"), e("state.savepoints.dir", "/sp")}, "[state.checkpoints.dir s3p s3p://b/cp state.savepoints.dir default /sp]"},
		// HA storage only with HA
		{"2.2.0", "", []Entry{e("high-availability.storageDir", "s3://b/ha")}, "[]"},
		{"2.2.0", "", []Entry{e("high-availability.type", "NONE"), e("high-availability.storageDir", "s3://b/ha")}, "[]"},
		{"2.2.0", "", []Entry{e("high-availability", "kubernetes"), e("high-availability.storageDir", "s3://b/ha")}, "[high-availability.storageDir s3 s3://b/ha]"},
		// the HistoryServer's list, for the HistoryServer only
		{"2.2.0", "", []Entry{e("historyserver.archive.fs.dir", "s3://a, hdfs:///b")}, "[]"},
		{"2.2.0", "history-server", []Entry{e("historyserver.archive.fs.dir", "s3://a, hdfs:///b,")}, "[historyserver.archive.fs.dir s3 s3://a historyserver.archive.fs.dir hdfs hdfs:///b]"},
		// changelog storage only when enabled on the file system
		{"1.18.1", "", []Entry{e("dstl.dfs.base-path", "s3://c")}, "[]"},
		{"1.18.1", "", []Entry{e("state.backend.changelog.enabled", "true"), e("dstl.dfs.base-path", "s3://c")}, "[]"},
		{"1.18.1", "", []Entry{e("state.backend.changelog.enabled", "true"), e("state.backend.changelog.storage", "filesystem"), e("dstl.dfs.base-path", "s3://c")}, "[dstl.dfs.base-path s3 s3://c]"},
		{"2.2.0", "", []Entry{e("state.changelog.enabled", "true"), e("state.changelog.storage", "filesystem"), e("dstl.dfs.base-path", "s3://c")}, "[state.changelog.dstl.dfs.base-path s3 s3://c]"},
		// no scheme before the first slash; an invalid one
		{"2.2.0", "", []Entry{e("jobmanager.archive.fs.dir", "/a:b"), e("execution.checkpointing.dir", "1x://a")}, "[execution.checkpointing.dir error 1x://a jobmanager.archive.fs.dir default /a:b]"},
		{"2.2.0", "", []Entry{e("execution.checkpointing.dir", " ")}, "[]"},
	} {
		var got []string
		for _, l := range Locations(KeysOf(tc.rel), tc.entries, tc.role) {
			s := l.Scheme
			switch {
			case l.Err != "":
				s = "error"
			case l.Default:
				s = "default"
			}
			got = append(got, l.Option, s, l.Value)
		}
		if g := fmt.Sprint(got); g != tc.want && !(g == "[]" && tc.want == "[]") {
			t.Errorf("%s %v: got %s, want %s", tc.rel, tc.entries, g, tc.want)
		}
	}
}

func TestDefaultScheme(t *testing.T) {
	keys := KeysOf("2.2.0")
	for _, tc := range []struct{ value, want string }{{"", "file"}, {"hdfs://nn:8020/", "hdfs"}, {"s3://bucket", "s3"}, {"/no/scheme", "file"}} {
		var entries []Entry
		if tc.value != "" {
			entries = []Entry{{Key: "fs.default-scheme", Value: tc.value}}
		}
		if got, _, _ := DefaultScheme(keys, entries); got != tc.want {
			t.Errorf("fs.default-scheme %q: %s, want %s", tc.value, got, tc.want)
		}
	}
}

package host

import (
	"bytes"
	"io/fs"
	"slices"
	"strings"
	"unicode"

	"golang.org/x/text/collate"
	"golang.org/x/text/language"
)

// OrderFor returns the order `sort -z` gives file names under locale in the
// file system fsys, and a description of it for reports. C, POSIX, C.UTF-8
// and unset locales sort by bytes. Other locales collate with the Unicode
// collation algorithm, punctuation shifted (ignored at the first three
// levels, as glibc's locales ignore it), ties broken by bytes as GNU sort's
// last resort does. A locale the image has not installed makes setlocale
// fail, and sort then uses C: so does this.
func OrderFor(fsys fs.FS, locale string) (Order, string) {
	name, _, _ := strings.Cut(locale, "@")
	lang, codeset, _ := strings.Cut(name, ".")
	switch lang {
	case "", "C", "POSIX":
		return ByteOrder, "byte order (" + or(locale, "no locale") + ")"
	}
	if fsys != nil && !installed(fsys, lang, codeset) {
		return ByteOrder, "byte order (" + locale + " is not installed in the image)"
	}
	tag, err := language.Parse(strings.ReplaceAll(lang, "_", "-"))
	if err != nil {
		return ByteOrder, "byte order (" + locale + " is not a locale name)"
	}
	tag, err = language.Parse(tag.String() + "-u-ka-shifted")
	if err != nil {
		return ByteOrder, "byte order (" + locale + " is not a locale name)"
	}
	c := collate.New(tag)
	return func(names []string) { collateSort(c, names) }, locale + " collation"
}

// installed reports whether glibc would find the locale: in the locale
// archive, or as a directory of its own (codeset normalised: UTF-8 is utf8).
func installed(fsys fs.FS, lang, codeset string) bool {
	if exists(fsys, "/usr/lib/locale/locale-archive") {
		return true
	}
	norm := strings.ToLower(strings.ReplaceAll(strings.ReplaceAll(codeset, "-", ""), "_", ""))
	for _, dir := range []string{lang + "." + codeset, lang + "." + norm, lang} {
		if exists(fsys, "/usr/lib/locale/"+dir+"/LC_COLLATE") {
			return true
		}
	}
	return false
}

// shiftSymbols makes math, modifier and other symbols (+ ~ = ^ ` | < ©,
// not currency) ignorable at the first levels, as glibc's locales (2.28 on,
// iso14651_t1) make them, like punctuation: the Unicode collation gives them
// primary weights even with variables shifted, and x/text cannot move the
// variable top. They collate as a hyphen instead. Checked against Flink's
// own bin/config.sh under en_US.UTF-8 (internal/realflink).
func shiftSymbols(name string) string {
	if !strings.ContainsFunc(name, isShiftedSymbol) {
		return name
	}
	return strings.Map(func(r rune) rune {
		if isShiftedSymbol(r) {
			return '-'
		}
		return r
	}, name)
}

func isShiftedSymbol(r rune) bool {
	return r > ' ' && unicode.In(r, unicode.Sm, unicode.Sk, unicode.So)
}

// collateSort sorts by collation keys, computed once per name; equal keys
// fall back to bytes.
func collateSort(c *collate.Collator, names []string) {
	type keyed struct {
		key  []byte
		name string
	}
	var buf collate.Buffer
	ks := make([]keyed, len(names))
	for i, n := range names {
		ks[i] = keyed{append([]byte(nil), c.KeyFromString(&buf, shiftSymbols(n))...), n}
		buf.Reset()
	}
	slices.SortFunc(ks, func(a, b keyed) int {
		if r := bytes.Compare(a.key, b.key); r != 0 {
			return r
		}
		return strings.Compare(a.name, b.name)
	})
	for i := range ks {
		names[i] = ks[i].name
	}
}

package classfile

import (
	"errors"
	"os"
	"slices"
	"testing"
)

func sample(t testing.TB) []byte {
	data, err := os.ReadFile("testdata/classes/Sample.class")
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func hasRef(refs []Ref, r Ref) bool { return slices.Contains(refs, r) }

func TestParseSample(t *testing.T) {
	c, err := Parse(sample(t), Options{Init: true})
	if err != nil {
		t.Fatal(err)
	}
	if c.Major != 55 || c.Name != "Sample" || c.Super != "java/util/ArrayList" {
		t.Fatalf("header: major %d, name %q, super %q", c.Major, c.Name, c.Super)
	}
	if !slices.Equal(c.Interfaces, []string{"java/lang/Runnable", "java/lang/Comparable"}) {
		t.Errorf("interfaces %v", c.Interfaces)
	}
	if !slices.Contains(c.Fields, Member{Name: "count", Descriptor: "I"}) ||
		!slices.Contains(c.Fields, Member{Name: "total", Descriptor: "J", Access: AccStatic}) {
		t.Errorf("fields %v", c.Fields)
	}
	if !slices.Contains(c.Methods, Member{Name: "<init>", Descriptor: "()V", Access: AccPublic}) {
		t.Errorf("methods %v", c.Methods)
	}
	for _, want := range []string{"java/lang/CharSequence", "[[I", "java/lang/String", "java/lang/Thread", "java/lang/StringBuilder"} {
		if !slices.Contains(c.Classes, want) {
			t.Errorf("classes %v lack %s", c.Classes, want)
		}
	}
	// Named only by the InnerClasses attribute, the constant value or the
	// class's own header: no instruction uses them.
	for _, not := range []string{"Sample$Inner", "a/b/NotAClass", "java/lang/Runnable"} {
		if slices.Contains(c.Classes, not) {
			t.Errorf("classes %v hold %s, which no instruction uses", c.Classes, not)
		}
	}
	for _, want := range []Ref{
		{Method, "java/util/ArrayList", "<init>", "(I)V"},
		{Field, "Sample", "count", "I"},
		{Field, "Sample", "total", "J"},
		{InterfaceMethod, "java/util/function/Supplier", "get", "()Ljava/lang/Object;"},
		{InterfaceMethod, "java/lang/CharSequence", "length", "()I"},
		{InterfaceMethod, "java/util/List", "of", "(Ljava/lang/Object;Ljava/lang/Object;)Ljava/util/List;"},
		// invokedynamic: the lambda metafactory and the implementation methods it is given.
		{Method, "java/lang/invoke/LambdaMetafactory", "metafactory", "(Ljava/lang/invoke/MethodHandles$Lookup;Ljava/lang/String;Ljava/lang/invoke/MethodType;Ljava/lang/invoke/MethodType;Ljava/lang/invoke/MethodHandle;Ljava/lang/invoke/MethodType;)Ljava/lang/invoke/CallSite;"},
		{Method, "java/util/AbstractCollection", "toString", "()Ljava/lang/String;"},
		{Method, "Sample", "lambda$run$0", "()Ljava/lang/String;"},
	} {
		if !hasRef(c.Refs, want) {
			t.Errorf("refs lack %+v", want)
		}
	}
	var strs []string
	for _, in := range c.Init {
		if in.String != "" {
			strs = append(strs, in.String)
		}
	}
	if !slices.Equal(strs, []string{"java.", "scala."}) {
		t.Errorf("static initializer strings %v", strs)
	}
	if last := c.Init[len(c.Init)-1]; last.Op != opPutstatic || last.Name != "PATTERNS" {
		t.Errorf("static initializer ends with %+v", last)
	}
}

// Every prefix of a real class file is refused, never a panic.
func TestTruncated(t *testing.T) {
	data := sample(t)
	for n := range len(data) {
		if _, err := Parse(data[:n], Options{}); !errors.Is(err, ErrFormat) {
			t.Fatalf("%d of %d bytes: %v", n, len(data), err)
		}
	}
}

func TestHostile(t *testing.T) {
	head := []byte{0xCA, 0xFE, 0xBA, 0xBE, 0, 0, 0, 65}
	for name, data := range map[string][]byte{
		"bad magic":           {0xCA, 0xFE, 0xBA, 0xBF, 0, 0, 0, 65, 0, 1},
		"empty pool":          append(head, 0, 0),
		"huge pool":           append(head, 0xff, 0xff, 1, 0, 0),
		"unknown tag":         append(head, 0, 2, 2, 0, 0),
		"long at the end":     append(head, 0, 2, 5, 0, 0, 0, 0, 0, 0, 0, 0),
		"utf8 past the end":   append(head, 0, 2, 1, 0xff, 0xff, 'a'),
		"this is not a class": append(head, 0, 2, 1, 0, 1, 'a', 0, 0, 0, 1),
		"trailing bytes":      append(sample(t), 0),
	} {
		if _, err := Parse(data, Options{}); !errors.Is(err, ErrFormat) {
			t.Errorf("%s: %v", name, err)
		}
	}
}

func FuzzParse(f *testing.F) {
	f.Add(sample(f))
	if inner, err := os.ReadFile("testdata/classes/Sample$Inner.class"); err == nil {
		f.Add(inner)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if r, err := Parse(data, Options{MembersOnly: true, Returns: "getScheme"}); err == nil && len(r.Returns) > len(data) {
			t.Fatalf("a returned constant of %d bytes from %d", len(r.Returns), len(data))
		}
		c, err := Parse(data, Options{Init: true})
		if err != nil {
			if !errors.Is(err, ErrFormat) {
				t.Fatalf("error not ErrFormat: %v", err)
			}
			return
		}
		// What a class holds comes from its bytes: no more names than bytes.
		if n := len(c.Classes) + len(c.Refs) + len(c.Fields) + len(c.Methods) + len(c.Interfaces); n > len(data) {
			t.Fatalf("%d items from %d bytes", n, len(data))
		}
		// Without the instructions, the same header and members.
		bare, err := Parse(data, Options{MembersOnly: true})
		if err != nil || bare.Name != c.Name || bare.Super != c.Super || !slices.Equal(bare.Methods, c.Methods) || !slices.Equal(bare.Fields, c.Fields) {
			t.Fatalf("MembersOnly: %v, %+v against %+v", err, bare, c)
		}
	})
}

// MembersOnly keeps the header and members and skips the instructions; a
// parse after it (the pooled tables reused) still sees every reference.
func TestParseMembersOnly(t *testing.T) {
	full, err := Parse(sample(t), Options{})
	if err != nil {
		t.Fatal(err)
	}
	bare, err := Parse(sample(t), Options{MembersOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	if bare.Name != full.Name || bare.Super != full.Super || !slices.Equal(bare.Methods, full.Methods) || !slices.Equal(bare.Fields, full.Fields) {
		t.Errorf("members differ: %+v against %+v", bare, full)
	}
	if bare.Classes != nil || bare.Refs != nil || bare.Init != nil {
		t.Errorf("instructions read: classes %v refs %v", bare.Classes, bare.Refs)
	}
	again, err := Parse(sample(t), Options{})
	if err != nil || !slices.Equal(again.Refs, full.Refs) || !slices.Equal(again.Classes, full.Classes) || len(full.Refs) == 0 {
		t.Errorf("a parse after a pooled one: %v, %d refs against %d", err, len(again.Refs), len(full.Refs))
	}
}

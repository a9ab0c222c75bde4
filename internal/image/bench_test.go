package image

import (
	"context"
	"fmt"
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/streamfusion/image-entrypoint/internal/image/layercache"
	"github.com/streamfusion/image-entrypoint/internal/testkit"
	"github.com/streamfusion/image-entrypoint/internal/testkit/imagekit"
)

// osLike is a layer shaped like an OS's: many directories, files and
// links (a merged-/usr layout), which the view holds as nodes.
func osLike() []imagekit.Entry {
	es := []imagekit.Entry{{Name: "lib", Link: "usr/lib"}, {Name: "bin", Link: "usr/bin"}}
	for i := range 400 {
		d := fmt.Sprintf("usr/share/pkg%03d", i)
		es = append(es, imagekit.Entry{Name: d, Dir: true, Mode: 0o755})
		for j := range 5 {
			es = append(es, imagekit.Entry{Name: fmt.Sprintf("%s/doc%d", d, j), Data: []byte("x")})
		}
		es = append(es, imagekit.Entry{Name: fmt.Sprintf("usr/lib/lib%03d.so", i), Link: fmt.Sprintf("lib%03d.so.1", i)})
	}
	return es
}

func benchBase(b *testing.B) v1.Image {
	b.Helper()
	d := testkit.Good("2.2.1")
	d.Payloads = nil
	img, err := imagekit.Base{Dist: d, User: "9999", Extra: append(osLike(), flinkDirs...)}.Image()
	if err != nil {
		b.Fatal(err)
	}
	return img
}

// BenchmarkBake bakes an image whose base layers are cached: what is
// left is merging the layers' facts, writing the layer and verifying
// the result (Gather over the merged view).
func BenchmarkBake(b *testing.B) {
	entrypoint, err := stampedTrue()
	if err != nil {
		b.Fatal(err)
	}
	base := benchBase(b)
	opt := BakeOptions{Entrypoint: entrypoint, Payloads: testPayloads("2.2"),
		Read: VerifyOptions{Cache: &layercache.Cache{Dir: b.TempDir()}, TempDir: b.TempDir()}}
	if _, _, err := Bake(context.Background(), base, opt); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for range b.N {
		if _, _, err := Bake(context.Background(), base, opt); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkVerify verifies a baked image, every layer read (no cache).
func BenchmarkVerify(b *testing.B) {
	entrypoint, err := stampedTrue()
	if err != nil {
		b.Fatal(err)
	}
	baked, _, err := Bake(context.Background(), benchBase(b), BakeOptions{Entrypoint: entrypoint, Payloads: testPayloads("2.2"),
		Read: VerifyOptions{TempDir: b.TempDir()}})
	if err != nil {
		b.Fatal(err)
	}
	opt := VerifyOptions{TempDir: b.TempDir()}
	b.ResetTimer()
	for range b.N {
		res, err := opt.Verify(context.Background(), baked)
		if err != nil {
			b.Fatal(err)
		}
		if !res.Decision.Admitted() {
			b.Fatal(res.Decision.Findings)
		}
	}
}

package report

import (
	"io"
	"strings"

	"github.com/streamfusion/image-entrypoint/internal/admission"
)

// RulesDoc writes docs/rules.md: the entrypoint's rule catalogue, then the
// rules the host CLI adds (verify's image guard, install's, the deployment
// set's, the webhook's own), each table as
// `streamfusion rules --markdown` prints it. The file is generated (make
// rules-doc) and a test of `make test` fails when it differs from the code.
func RulesDoc(w io.Writer, entrypoint, host []admission.Rule) error {
	var b strings.Builder
	b.WriteString(`# Rules

<!-- Generated from the code by ` + "`make rules-doc`" + `; a test of ` + "`make test`" + ` fails when
this file differs from it. Edit the rules' Doc strings, not this file. -->

A rule's tier says where it is judged: ` + "`start`" + ` at every start and by every
command; ` + "`deep`" + ` (class files, native libraries) by the host CLI's ` + "`check`" + `,
` + "`verify`" + ` and ` + "`bake`" + ` and the webhook, and at start with a baked verdict or
` + "`STREAMFUSION_LINKAGE=true`" + `; ` + "`image`" + `, ` + "`install`" + `, ` + "`deployment`" + ` and ` + "`webhook`" + ` by
those commands only.

Every finding names the JAR path (or directory), the value found, the value
required and the fix; all findings are reported together. An error refuses
the start (exit 78), a warning is logged; ` + "`STREAMFUSION_STRICT=true`" + ` refuses
on warnings too. Why a deep-check finding (` + "`classpath-shadowed`" + `, ` + "`linkage-*`" + `,
` + "`bytecode-version`" + `) says what it says: [payload-contract.md](payload-contract.md),
"Why did check say this?".

## The entrypoint's rules

What every start, ` + "`streamfusion check`" + ` and the host CLI's ` + "`check`" + `, ` + "`verify`" + `,
` + "`bake`" + ` and ` + "`install`" + ` judge (` + "`bin/entrypoint streamfusion rules --markdown`" + `):

`)
	if err := Rules(&b, true, entrypoint); err != nil {
		return err
	}
	b.WriteString(`
## The rules the host CLI adds

The image rules of ` + "`streamfusion verify`" + ` (the guard), the rules of
` + "`streamfusion install`" + `, the rules of a cluster's images together
(` + "`streamfusion verify -f`" + `, the webhook, ` + "`streamfusion audit`" + `) and the webhook's own
(` + "`bin/streamfusion rules --markdown`" + ` prints them after the entrypoint's):

`)
	if err := Rules(&b, true, host); err != nil {
		return err
	}
	_, err := io.WriteString(w, b.String())
	return err
}

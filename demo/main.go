// Command demo shows the entrypoint at work on an example image root: a
// Flink 2.2.1 distribution with StreamFusion 0.1.0 installed, laid out by
// the test kit. It runs the entrypoint twice, as a container start would:
// once admitted, handing off to an example original entrypoint that prints
// what it received, and once with a renamed extension built for Flink 1.18
// dropped into lib, refused with exit status 78.
package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"

	"github.com/streamfusion/image-entrypoint/internal/testkit"
)

// original stands in for Flink's docker-entrypoint.sh: it prints what it
// was started with.
const original = `#!/bin/sh
echo "  [example original entrypoint] started as PID $$ with args: $*"
echo "  [example original entrypoint] FLINK_HOME=$FLINK_HOME, working directory $(pwd)"
`

func main() {
	bin := flag.String("entrypoint", "bin/entrypoint", "the entrypoint binary")
	dir := flag.String("root", "", "where to lay out the example image root (default: a new temporary directory)")
	flag.Parse()
	if err := run(*bin, *dir); err != nil {
		fmt.Fprintln(os.Stderr, "demo:", err)
		os.Exit(1)
	}
}

func run(bin, root string) error {
	bin, err := filepath.Abs(bin)
	if err != nil {
		return err
	}
	if root == "" {
		if root, err = os.MkdirTemp("", "streamfusion-demo-"); err != nil {
			return err
		}
	}
	if err := testkit.Good("2.2.1").Write(root); err != nil {
		return err
	}
	script := filepath.Join(root, "opt/streamfusion/docker-entrypoint.sh")
	if err := os.MkdirAll(filepath.Dir(script), 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(script, []byte(original), 0o755); err != nil {
		return err
	}
	termLog := filepath.Join(root, "termination-log")
	if err := os.WriteFile(termLog, nil, 0o644); err != nil {
		return err
	}
	env := append(os.Environ(),
		"FLINK_HOME="+filepath.Join(root, testkit.FlinkHome),
		"JAVA_HOME="+filepath.Join(root, testkit.JavaHome),
		"STREAMFUSION_ORIGINAL_ENTRYPOINT="+script,
		"STREAMFUSION_TERMINATION_LOG="+termLog,
	)
	fmt.Printf("Example image root: %s (Flink 2.2.1, StreamFusion 0.1.0)\n\n", root)

	fmt.Println("1. docker run IMAGE jobmanager   (compatible payloads)")
	if code := start(bin, env, "jobmanager"); code != 0 {
		return fmt.Errorf("the compatible image was not admitted (exit %d)", code)
	}

	bad := filepath.Join(root, testkit.LibDir, "kafka-connector.jar")
	if err := os.WriteFile(bad, testkit.Extension("avro", "1.18", "0.1.0").Bytes(), 0o644); err != nil {
		return err
	}
	fmt.Printf("\n2. the same, after copying a StreamFusion extension built for Flink 1.18 into lib as %s\n", filepath.Base(bad))
	code := start(bin, env, "jobmanager")
	msg, _ := os.ReadFile(termLog)
	fmt.Printf("   exit status %d; termination message (what kubectl describe pod shows):\n   %s\n", code, msg)
	if code != 78 {
		return fmt.Errorf("the conflicting image exited %d, not 78", code)
	}
	return nil
}

func start(bin string, env []string, args ...string) int {
	cmd := exec.Command(bin, args...)
	cmd.Args[0] = "/docker-entrypoint.sh"
	cmd.Env = env
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stdout
	err := cmd.Run()
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		return exit.ExitCode()
	}
	if err != nil {
		fmt.Println("   ", err)
		return -1
	}
	return 0
}

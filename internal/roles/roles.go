// Package roles tells from the container's argv which Flink process is
// about to start, and so whether admission runs. It reads nothing but argv:
// a pass-through command (a debug shell on a broken image) must reach
// Flink's script without the entrypoint touching the file system.
package roles

import (
	"path"
	"strings"
)

// Role is what the container is about to run.
type Role string

// Roles, as the contract's table names them.
const (
	JobManager     Role = "jobmanager"     // session cluster JobManager
	Application    Role = "standalone-job" // application-mode JobManager
	TaskManager    Role = "taskmanager"
	HistoryServer  Role = "history-server"
	K8sJobManager  Role = "kubernetes-jobmanager" // native Kubernetes, bash -c "kubernetes-jobmanager.sh ..."
	K8sTaskManager Role = "kubernetes-taskmanager"
	Client         Role = "client" // flink, sql-client.sh, sql-gateway.sh
	Own            Role = "streamfusion"
	PassThrough    Role = "pass-through"
)

// Admits reports whether the role starts Flink code and so needs admission.
func (r Role) Admits() bool { return r != Own && r != PassThrough }

// Classify returns the role of argv, the arguments after the entrypoint.
func Classify(args []string) Role {
	if len(args) == 0 {
		return PassThrough
	}
	switch args[0] {
	case "jobmanager":
		return JobManager
	case "standalone-job":
		return Application
	case "taskmanager":
		return TaskManager
	case "history-server":
		return HistoryServer
	case "streamfusion":
		return Own
	}
	if r := client(args[0]); r != PassThrough {
		return r
	}
	// bash -c "kubernetes-jobmanager.sh kubernetes-session", as native
	// Kubernetes and the Flink Kubernetes Operator pass it.
	if len(args) >= 3 && args[1] == "-c" {
		switch path.Base(args[0]) {
		case "bash", "sh":
			return shellCommand(args[2])
		}
	}
	return PassThrough
}

// shellCommand classifies the first command of a shell -c string.
func shellCommand(script string) Role {
	words := strings.Fields(script)
	for len(words) > 0 && (words[0] == "exec" || strings.Contains(words[0], "=") && !strings.Contains(words[0], "/")) {
		words = words[1:] // "exec cmd" and "VAR=value cmd"
	}
	if len(words) == 0 {
		return PassThrough
	}
	switch path.Base(words[0]) {
	case "kubernetes-jobmanager.sh":
		return K8sJobManager
	case "kubernetes-taskmanager.sh":
		return K8sTaskManager
	}
	return client(words[0])
}

// client recognises Flink's submission clients, bare or under bin/.
func client(word string) Role {
	dir, name := path.Split(word)
	if dir != "" && path.Base(path.Clean(dir)) != "bin" {
		return PassThrough
	}
	switch name {
	case "flink", "sql-client.sh", "sql-gateway.sh":
		return Client
	}
	return PassThrough
}

// Args returns the arguments the Flink process receives, after the command
// that starts it: what follows the role word, or, for a shell's -c string,
// its words after the script's name (split at white space; quotes are not
// interpreted). Its dynamic properties (-D) are part of the process's
// configuration. Nil for a pass-through command.
func Args(args []string) []string {
	r := Classify(args)
	if !r.Admits() || r == Own {
		return nil
	}
	if len(args) >= 3 && args[1] == "-c" {
		switch path.Base(args[0]) {
		case "bash", "sh":
			words := strings.Fields(args[2])
			for len(words) > 0 && (words[0] == "exec" || strings.Contains(words[0], "=") && !strings.Contains(words[0], "/")) {
				words = words[1:]
			}
			if len(words) > 0 {
				return words[1:]
			}
			return nil
		}
	}
	return args[1:]
}

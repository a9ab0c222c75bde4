package roles

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestClassify(t *testing.T) {
	t.Parallel()
	cases := []struct {
		args []string
		want Role
	}{
		{[]string{"jobmanager"}, JobManager},
		{[]string{"jobmanager", "-Dkey=value"}, JobManager},
		{[]string{"standalone-job", "--job-classname", "com.example.Job"}, Application},
		{[]string{"taskmanager"}, TaskManager},
		{[]string{"history-server"}, HistoryServer},
		{[]string{"bash", "-c", "kubernetes-jobmanager.sh kubernetes-session"}, K8sJobManager},
		{[]string{"bash", "-c", "kubernetes-jobmanager.sh kubernetes-application"}, K8sJobManager},
		{[]string{"/bin/bash", "-c", "$FLINK_HOME/bin/kubernetes-jobmanager.sh kubernetes-session"}, K8sJobManager},
		{[]string{"sh", "-c", "exec kubernetes-taskmanager.sh -Dtaskmanager.resource-id=tm-1"}, K8sTaskManager},
		{[]string{"bash", "-c", "kubernetes-taskmanager.sh"}, K8sTaskManager},
		{[]string{"bash", "-c", "ENV=1 flink run -d job.jar"}, Client},
		{[]string{"flink", "run", "job.jar"}, Client},
		{[]string{"bin/flink", "list"}, Client},
		{[]string{"./bin/sql-client.sh"}, Client},
		{[]string{"/opt/flink/bin/sql-gateway.sh", "start-foreground"}, Client},
		{[]string{"streamfusion", "check"}, Own},
		{[]string{"streamfusion"}, Own},
		{nil, PassThrough},
		{[]string{""}, PassThrough},
		{[]string{"help"}, PassThrough},
		{[]string{"bash"}, PassThrough},
		{[]string{"sh", "-c", "ls /opt/flink/lib"}, PassThrough},
		{[]string{"bash", "-c", ""}, PassThrough},
		{[]string{"ls", "-l"}, PassThrough},
		{[]string{"/tmp/flink", "run"}, PassThrough},
		{[]string{"JobManager"}, PassThrough},
		{[]string{"python", "-c", "flink"}, PassThrough},
	}
	for _, c := range cases {
		t.Run(fmt.Sprintf("%q", c.args), func(t *testing.T) {
			t.Parallel()
			assert.Equal(t, c.want, Classify(c.args))
			assert.Equal(t, c.want != Own && c.want != PassThrough, Classify(c.args).Admits())
		})
	}
}

func FuzzClassify(f *testing.F) {
	f.Add("bash", "-c", "kubernetes-jobmanager.sh kubernetes-session")
	f.Add("jobmanager", "", "")
	f.Add("flink", "run", "x")
	f.Fuzz(func(t *testing.T, a, b, c string) {
		r := Classify([]string{a, b, c})
		if r == Own && a != "streamfusion" {
			t.Fatalf("only the reserved word selects the own commands: %q", a)
		}
	})
}

func TestArgs(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		args []string
		want []string
	}{
		{[]string{"taskmanager", "-Dtaskmanager.numberOfTaskSlots=2", "-D", "rest.port=9"}, []string{"-Dtaskmanager.numberOfTaskSlots=2", "-D", "rest.port=9"}},
		{[]string{"jobmanager"}, []string{}},
		{[]string{"bash", "-c", "kubernetes-taskmanager.sh -D taskmanager.memory.process.size=1g -Dx=y"}, []string{"-D", "taskmanager.memory.process.size=1g", "-Dx=y"}},
		{[]string{"bash", "-c", "exec A=b kubernetes-jobmanager.sh kubernetes-session"}, []string{"kubernetes-session"}},
		{[]string{"sh", "-c", "echo hi"}, nil},
		{[]string{"streamfusion", "check"}, nil},
	} {
		got := Args(c.args)
		if len(got) != len(c.want) || strings.Join(got, "\x00") != strings.Join(c.want, "\x00") {
			t.Errorf("Args(%q) = %q, want %q", c.args, got, c.want)
		}
	}
}

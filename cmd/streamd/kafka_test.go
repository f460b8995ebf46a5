package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/twmb/franz-go/pkg/kfake"

	"streamd/core/jobfile"
	"streamd/core/runtime"
	"streamd/internal/kafkatest"
)

// kafkaRecords reads topic back read_committed (franz-go) as
// "key<TAB>value" lines, partition by partition.
func kafkaRecords(t *testing.T, addr, topic string) []string {
	t.Helper()
	var out []string
	for _, r := range kafkatest.Read(t, addr, topic) {
		out = append(out, string(r.Key)+"\t"+string(r.Value))
	}
	return out
}

// sameAsFile checks that the topic's records are the file job's output
// lines, keyed by their column key: the same records, in the file's order
// within each key (a key lives in one partition; the interleave across
// partitions is not fixed).
func sameAsFile(t *testing.T, got []string, file string, keyCol int) {
	t.Helper()
	text, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(string(text), "\n"), "\n")
	want := map[string][]string{}
	for _, l := range lines {
		k := strings.Split(l, ",")[keyCol]
		want[k] = append(want[k], l)
	}
	have := map[string][]string{}
	for _, g := range got {
		k, v, _ := strings.Cut(g, "\t")
		have[k] = append(have[k], v)
	}
	if len(got) != len(lines) {
		t.Errorf("%d records in the topic, %d lines in the file", len(got), len(lines))
	}
	for k, w := range want {
		if !slices.Equal(have[k], w) {
			t.Fatalf("key %s: topic has %d records, file %d; first topic %q, first file %q", k, len(have[k]), len(w), first(have[k]), first(w))
		}
	}
}

func first(s []string) string {
	if len(s) == 0 {
		return ""
	}
	return s[0]
}

// fileThenKafkaJob writes job (ending in "sink:") twice under dir, once
// into out.csv (file.yaml) and once into addr's topic out keyed by its
// column key (kafka.yaml), runs the file job, and returns the Kafka job's
// path.
func fileThenKafkaJob(t *testing.T, dir, job, addr string) string {
	t.Helper()
	writeTestFile(t, filepath.Join(dir, "file.yaml"), job+"  csv: {path: out.csv, header: false}\n")
	kafkaJob := filepath.Join(dir, "kafka.yaml")
	writeTestFile(t, kafkaJob, job+"  kafka: {brokers: [\""+addr+"\"], topic: out, key: key, format: csv}\n")
	if code, _, stderr := cli(t, "run", filepath.Join(dir, "file.yaml"), "-q"); code != 0 {
		t.Fatalf("file job: exit %d: %s", code, stderr)
	}
	return kafkaJob
}

// A CSV file through a checkpointed job into a topic, exactly-once: read
// back read_committed, by franz-go and by kcat, it is the same job's
// output to a file.
func TestKafkaSinkMatchesFileSink(t *testing.T) {
	c := kafkatest.New(t, 3, "out")
	addr := kafkatest.Addr(c)
	dir := t.TempDir()
	var in strings.Builder
	in.WriteString("seq,key,value\n")
	for i := range 3000 {
		fmt.Fprintf(&in, "%d,k%03d,%d\n", i, i*7%101, i*13%1000)
	}
	writeTestFile(t, filepath.Join(dir, "in.csv"), in.String())
	job := `source:
  csv: {path: in.csv, columns: {seq: int64, key: string, value: int64}}
pipeline:
  - filter: value % 3 != 0
  - map: {big: value > 500}
checkpoint: {dir: ck, interval: 5ms}
sink:
`
	kafkaJob := fileThenKafkaJob(t, dir, job, addr)
	code, stdout, stderr := cli(t, "validate", kafkaJob)
	if code != 0 || !strings.Contains(stdout, "delivery: exactly-once") {
		t.Fatalf("validate: exit %d: %s%s", code, stdout, stderr)
	}
	if code, _, stderr := cli(t, "run", kafkaJob, "-q"); code != 0 {
		t.Fatalf("kafka job: exit %d: %s", code, stderr)
	}
	got := kafkaRecords(t, addr, "out")
	sameAsFile(t, got, filepath.Join(dir, "out.csv"), 1)

	kcat, err := exec.LookPath("kcat")
	if err != nil {
		t.Skip("kcat is not installed (.ci/run installs it): the read by another client is not checked")
	}
	cmd := exec.Command(kcat, "-C", "-b", addr, "-t", "out", "-e", "-q",
		"-X", "isolation.level=read_committed", "-f", "%k\t%s\n")
	text, err := cmd.Output()
	if err != nil {
		t.Fatalf("kcat: %v", err)
	}
	byKcat := strings.Split(strings.TrimSuffix(string(text), "\n"), "\n")
	slices.Sort(byKcat)
	slices.Sort(got)
	if !slices.Equal(byKcat, got) {
		t.Fatalf("kcat read %d records, franz-go %d, or other ones", len(byKcat), len(got))
	}

	// kcat, told to partition as Kafka's Java client does, puts each key
	// in the partition the sink put it in.
	sinkPart := kafkaPartitions(t, addr, "out")
	var keys strings.Builder
	for k := range sinkPart {
		fmt.Fprintf(&keys, "%s\tx\n", k)
	}
	if err := c.CreateTopic("keys", 3, nil); err != nil {
		t.Fatal(err)
	}
	cmd = exec.Command(kcat, "-P", "-b", addr, "-t", "keys", "-K", "\t", "-X", "topic.partitioner=murmur2_random")
	cmd.Stdin = strings.NewReader(keys.String())
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("kcat -P: %v: %s", err, out)
	}
	for k, p := range kafkaPartitions(t, addr, "keys") {
		if sinkPart[k] != p {
			t.Fatalf("key %s: kcat chose partition %d, the sink %d", k, p, sinkPart[k])
		}
	}
}

// kafkaPartitions is the partition of each key in topic.
func kafkaPartitions(t *testing.T, addr, topic string) map[string]int32 {
	t.Helper()
	m := map[string]int32{}
	for _, r := range kafkatest.Read(t, addr, topic) {
		m[string(r.Key)] = r.Partition
	}
	return m
}

// Without checkpoint: validate says at-least-once; brokers that are not
// there fail the run with a clear error instead of hanging it.
func TestKafkaSinkAtLeastOnceAndNoBroker(t *testing.T) {
	dir := t.TempDir()
	job := filepath.Join(dir, "job.yaml")
	writeTestFile(t, job, `source:
  generator: {seed: 1, count: 100}
sink:
  kafka: {brokers: ["127.0.0.1:1"], topic: out, timeout: 2s}
`)
	code, stdout, _ := cli(t, "validate", job)
	if code != 0 || !strings.Contains(stdout, "delivery: at-least-once — the job does not checkpoint") {
		t.Fatalf("validate: exit %d: %s", code, stdout)
	}
	code, _, stderr := cli(t, "run", job, "-q")
	if code == 0 || !strings.Contains(stderr, "kafka sink out: connect to brokers 127.0.0.1:1") {
		t.Fatalf("run: exit %d: %s", code, stderr)
	}
}

// The binary killed (SIGKILL) after a checkpoint completed but before the
// sink committed its transaction (the failpoint), then restored: every
// record once in the topic, as an uncrashed run writes them to a file.
func TestKafkaSinkKillBeforeCommit(t *testing.T) {
	c := kafkatest.New(t, 4, "out")
	addr := kafkatest.Addr(c)
	dir := t.TempDir()
	// Rate-limited, so that checkpoints complete while records still come.
	job := `source:
  generator: {seed: 3, count: 6000, rate: 20000, keys: 50}
checkpoint: {dir: ck, interval: 20ms}
sink:
`
	kafkaJob := fileThenKafkaJob(t, dir, job, addr)
	os.RemoveAll(filepath.Join(dir, "ck"))

	t.Setenv("STREAMD_FAILPOINT", "kafka-kill-before-commit")
	cmd := child(t, "run", kafkaJob, "-q")
	err := cmd.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Fatalf("the run was not killed at the failpoint: %v: %s", err, cmd.Stderr)
	}
	os.Unsetenv("STREAMD_FAILPOINT")
	if code, _, stderr := cli(t, "run", kafkaJob, "-q", "--restore", "latest"); code != 0 {
		t.Fatalf("restored run: exit %d: %s", code, stderr)
	}
	sameAsFile(t, kafkaRecords(t, addr, "out"), filepath.Join(dir, "out.csv"), 1)
}

// sasl: reaches the client: the right password writes, a wrong one fails
// the run at once with the broker's refusal.
func TestKafkaSinkSASL(t *testing.T) {
	c := kafkatest.NewWith(t, []kfake.Opt{kfake.EnableSASL(), kfake.Superuser("PLAIN", "streamd", "secret")}, 1, "out")
	dir := t.TempDir()
	for _, pass := range []string{"secret", "wrong"} {
		job := filepath.Join(dir, pass+".yaml")
		writeTestFile(t, job, `source:
  generator: {seed: 1, count: 100}
sink:
  kafka:
    brokers: ["`+kafkatest.Addr(c)+`"]
    topic: out
    delivery: at_least_once
    timeout: 5s
    sasl: {mechanism: plain, user: streamd, password: `+pass+`}
`)
		code, _, stderr := cli(t, "run", job, "-q")
		if pass == "secret" && code != 0 {
			t.Fatalf("run with the password: exit %d: %s", code, stderr)
		}
		// kfake closes the connection on a failed login (EOF); a Kafka
		// broker answers SASL_AUTHENTICATION_FAILED. Either is reported
		// at once, not as a timeout.
		if pass == "wrong" && (code == 0 || !strings.Contains(stderr, "kafka sink out: connect to brokers") || strings.Contains(stderr, "no answer within")) {
			t.Fatalf("run with a wrong password: exit %d: %s", code, stderr)
		}
	}
}

// The run's report names a Kafka sink's topic and brokers as its output,
// once the run has succeeded, as it names a file sink's file.
func TestReportNamesKafkaOutput(t *testing.T) {
	f, err := jobfile.Parse("/jobs/job.yaml", []byte("source: {generator: {count: 1}}\nsink: {kafka: {brokers: [\"h1:9092\"], topic: windows}}\n"))
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	printOutputs(&b, &runtime.Report{}, nil, f.Outputs())
	if want := "output: kafka topic windows at h1:9092\n"; b.String() != want {
		t.Errorf("report: %q, want %q", b.String(), want)
	}
	b.Reset()
	printOutputs(&b, &runtime.Report{}, errors.New("failed"), f.Outputs())
	if b.String() != "" {
		t.Errorf("a failed run's report names %q", b.String())
	}
}

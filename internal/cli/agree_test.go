package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestValidateRefusesWhatRunRefuses holds configurations that weir run
// refuses before reading a record because of what they name outside the
// file. weir validate must refuse each of them too, with the same problem
// (file:line: field: message) and exit code; --offline leaves those checks
// out, so it passes them.
func TestValidateRefusesWhatRunRefuses(t *testing.T) {
	dir := t.TempDir()
	afile := filepath.Join(dir, "afile")
	data := filepath.Join(dir, "in.ndjson")
	for _, f := range []string{afile, data} {
		if err := os.WriteFile(f, []byte("{\"id\":1}\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Mkdir(filepath.Join(dir, "adir"), 0o755); err != nil {
		t.Fatal(err)
	}
	state := filepath.Join(dir, "state")
	out := filepath.Join(dir, "out")
	for _, c := range []struct {
		name, yaml, problem string
	}{
		{"a once source's path matches no file",
			`sources: { in: { type: file, paths: ["` + filepath.Join(dir, "none*.ndjson") + `"], mode: once, data_dir: "` + state + `" } }
sinks: { out: { type: file, inputs: [in], path: "` + out + `" } }`,
			"sources.in.paths[0]: "},
		{"a once source's path is a directory",
			`sources: { in: { type: file, paths: ["` + filepath.Join(dir, "adir") + `"], mode: once, data_dir: "` + state + `" } }
sinks: { out: { type: file, inputs: [in], path: "` + out + `" } }`,
			"sources.in.paths[0]: "},
		{"a data_dir under a file",
			`sources: { in: { type: file, paths: ["` + data + `"], mode: once, data_dir: "` + filepath.Join(afile, "st") + `" } }
sinks: { out: { type: file, inputs: [in], path: "` + out + `" } }`,
			"sources.in.data_dir: " + filepath.Join(afile, "st") + " cannot be created: " + afile + " is a file"},
		{"a file sink's path under a file",
			`sources: { in: { type: file, paths: ["` + data + `"], mode: once, data_dir: "` + state + `" } }
sinks: { out: { type: file, inputs: [in], path: "` + filepath.Join(afile, "out") + `" } }`,
			"sinks.out.path: " + filepath.Join(afile, "out") + " cannot be created"},
		{"a Kafka CA file that is missing",
			`sources: { in: { type: kafka, brokers: ["127.0.0.1:1"], topics: [t], group: g, tls: { ca_file: "` + filepath.Join(dir, "none.pem") + `" } } }
sinks: { out: { type: file, inputs: [in], path: "` + out + `" } }`,
			"sources.in.tls.ca_file: " + filepath.Join(dir, "none.pem") + " cannot be read"},
		{"a Kafka CA file that holds no certificate",
			`sources: { in: { type: kafka, brokers: ["127.0.0.1:1"], topics: [t], group: g, tls: { ca_file: "` + afile + `" } } }
sinks: { out: { type: file, inputs: [in], path: "` + out + `" } }`,
			"sources.in.tls.ca_file: " + afile + " holds no PEM certificate"},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg := writeConfig(t, c.yaml+"\nmetrics: { address: \"off\" }\n")
			vcode, _, verr := runCLI("validate", "-c", cfg)
			rcode, _, rerr := runCLI("run", "-c", cfg)
			if vcode != ExitConfig || rcode != ExitConfig {
				t.Fatalf("validate exit %d, run exit %d, want %d for both\nvalidate: %s\nrun: %s", vcode, rcode, ExitConfig, verr, rerr)
			}
			line := problemLine(verr, c.problem)
			if line == "" {
				t.Fatalf("validate does not report %q:\n%s", c.problem, verr)
			}
			if !strings.Contains(rerr, line) {
				t.Errorf("run does not report the problem as validate does (%q):\n%s", line, rerr)
			}
			if code, _, errs := runCLI("validate", "--offline", "-c", cfg); code != ExitOK {
				t.Errorf("validate --offline exit %d, want %d:\n%s", code, ExitOK, errs)
			}
		})
	}
}

// problemLine returns the line of out that contains want.
func problemLine(out, want string) string {
	for _, l := range strings.Split(out, "\n") {
		if strings.Contains(l, want) {
			return l
		}
	}
	return ""
}

// TestValidateTakesEveryFile: each -c of weir validate is checked, not only
// the last; weir run runs several -c as pipelines of their own, and a start
// is all or nothing: one bad file starts none, with every problem printed.
func TestValidateTakesEveryFile(t *testing.T) {
	ok, bad := writeConfig(t, okConfig), writeConfig(t, badConfig)
	code, stdout, stderr := runCLI("validate", "-c", bad, "-c", ok)
	if code != ExitConfig || !strings.Contains(stdout, ok+": ok") || !strings.Contains(stderr, `unknown source type "nosuch"`) {
		t.Errorf("validate -c bad -c ok: exit %d\nstdout: %s\nstderr: %s", code, stdout, stderr)
	}
	code, stdout, stderr = runCLI("validate", "-c", ok, "-c", bad)
	if code != ExitConfig || !strings.Contains(stderr, `unknown source type "nosuch"`) {
		t.Errorf("validate -c ok -c bad: exit %d\nstdout: %s\nstderr: %s", code, stdout, stderr)
	}
	named := filepath.Join(filepath.Dir(bad), "bad.yaml")
	if err := os.Rename(bad, named); err != nil {
		t.Fatal(err)
	}
	code, _, stderr = runCLI("run", "--metrics-addr", "off", "-c", ok, "-c", named)
	if code != ExitConfig || !strings.Contains(stderr, `unknown source type "nosuch"`) {
		t.Errorf("run with two -c: exit %d\nstderr: %s", code, stderr)
	}
}

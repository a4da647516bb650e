package conformance

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	confv1 "sigs.k8s.io/gateway-api/conformance/apis/v1"
	"sigs.k8s.io/gateway-api/conformance/utils/suite"
	"sigs.k8s.io/yaml"

	"isobar.dev/e2e/harness"
)

// Where reports go and come from.
const (
	// reportVariable names the directory a run writes its reports to.
	reportVariable = "ISOBAR_CONFORMANCE_REPORTS"
	// committedReports is the directory, in the repository, of the
	// reports `make conformance` writes and every full run is checked
	// against.
	committedReports = "conformance/reports"
)

// testRecord is one test of a run: its result and how long it took.
type testRecord struct {
	name     string
	result   string // PASS, FAIL, SKIP, or NOT-RUN (a feature we do not claim)
	duration time.Duration
}

// recorder keeps each test's result as the suite runs it.
type recorder struct {
	mu      sync.Mutex
	results map[string]testRecord
}

// wrap makes each test record its result and duration.
func (r *recorder) wrap(tests []suite.ConformanceTest) []suite.ConformanceTest {
	r.results = map[string]testRecord{}
	out := slices.Clone(tests)
	for i := range out {
		run, name := out[i].Test, out[i].ShortName
		out[i].Test = func(t *testing.T, s *suite.ConformanceTestSuite) {
			start := time.Now()
			// A cleanup runs once the test's parallel subtests are
			// done too, and sees their failures.
			t.Cleanup(func() {
				result := "PASS"
				switch {
				case t.Failed():
					result = "FAIL"
				case t.Skipped():
					result = "SKIP"
				}
				r.mu.Lock()
				r.results[name] = testRecord{name: name, result: result, duration: time.Since(start)}
				r.mu.Unlock()
			})
			run(t, s)
		}
	}
	return out
}

// list is every test of the suite, in the suite's order, with what came of
// it in this run.
func (r *recorder) list(tests []suite.ConformanceTest) []testRecord {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]testRecord, 0, len(tests))
	for _, ct := range tests {
		rec, ok := r.results[ct.ShortName]
		if !ok {
			rec = testRecord{name: ct.ShortName, result: "NOT-RUN"}
		}
		out = append(out, rec)
	}
	return out
}

// listHeader opens a test list.
const listHeader = "# result, test, duration. NOT-RUN: the test needs a feature the GatewayClass does not claim\n# (the mesh tests), or the run was limited to other tests.\n"

// formatList writes one line per test: result, name, duration.
func formatList(records []testRecord) []byte {
	var b bytes.Buffer
	b.WriteString(listHeader)
	for _, rec := range records {
		fmt.Fprintf(&b, "%-8s %-70s %s\n", rec.result, rec.name, rec.duration.Round(10*time.Millisecond))
	}
	return b.Bytes()
}

// parseList reads formatList's lines back as name -> result.
func parseList(data []byte) map[string]string {
	out := map[string]string{}
	s := bufio.NewScanner(bytes.NewReader(data))
	for s.Scan() {
		if f := strings.Fields(s.Text()); len(f) >= 2 && !strings.HasPrefix(f[0], "#") {
			out[f[1]] = f[0]
		}
	}
	return out
}

// writeReports writes the suite's report and the test list of a channel
// to dir.
func writeReports(dir, channel, mode string, report *confv1.ConformanceReport, records []testRecord) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	data, err := yaml.Marshal(report)
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("%s-%s.yaml", channel, mode)), data, 0o644); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, fmt.Sprintf("%s-%s-tests.txt", channel, mode)), formatList(records), 0o644)
}

// checkCommitted compares a full run with the reports committed for its
// channel: each profile's counts, and every test's result. Dates and
// durations may differ.
func checkCommitted(channel, mode string, report *confv1.ConformanceReport, records []testRecord) error {
	root, err := harness.RepoRoot()
	if err != nil {
		return err
	}
	dir := filepath.Join(root, committedReports)
	regenerate := fmt.Sprintf("the committed conformance reports (%s) are not this run's: run `make conformance` and commit %s", dir, committedReports)
	data, err := os.ReadFile(filepath.Join(dir, fmt.Sprintf("%s-%s.yaml", channel, mode)))
	if err != nil {
		return fmt.Errorf("%s: %w", regenerate, err)
	}
	var committed confv1.ConformanceReport
	if err := yaml.Unmarshal(data, &committed); err != nil {
		return fmt.Errorf("%s: %w", regenerate, err)
	}
	var diffs []string
	if got, want := counts(report), counts(&committed); got != want {
		diffs = append(diffs, fmt.Sprintf("profile counts:\n  committed: %s\n  this run:  %s", want, got))
	}
	list, err := os.ReadFile(filepath.Join(dir, fmt.Sprintf("%s-%s-tests.txt", channel, mode)))
	if err != nil {
		return fmt.Errorf("%s: %w", regenerate, err)
	}
	want := parseList(list)
	for _, rec := range records {
		if w, ok := want[rec.name]; !ok {
			diffs = append(diffs, fmt.Sprintf("%s: %s in this run, not in the committed list", rec.name, rec.result))
		} else if w != rec.result {
			diffs = append(diffs, fmt.Sprintf("%s: committed %s, this run %s", rec.name, w, rec.result))
		}
		delete(want, rec.name)
	}
	for name, w := range want {
		diffs = append(diffs, fmt.Sprintf("%s: committed %s, not in this run", name, w))
	}
	if len(diffs) > 0 {
		slices.Sort(diffs)
		return fmt.Errorf("%s:\n%s", regenerate, strings.Join(diffs, "\n"))
	}
	return nil
}

// counts is a report's per-profile statistics, as one comparable line.
func counts(r *confv1.ConformanceReport) string {
	var parts []string
	for _, p := range r.ProfileReports {
		s := fmt.Sprintf("%s core %d/%d/%d", p.Name, p.Core.Passed, p.Core.Failed, p.Core.Skipped)
		if p.Extended != nil {
			s += fmt.Sprintf(" extended %d/%d/%d", p.Extended.Passed, p.Extended.Failed, p.Extended.Skipped)
		}
		parts = append(parts, s)
	}
	slices.Sort(parts)
	return strings.Join(parts, "; ")
}

package pipeline_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/weir-etl/weir/checkpoint"
	"github.com/weir-etl/weir/connector"
	"github.com/weir-etl/weir/pipeline"
	"github.com/weir-etl/weir/sink/blackhole"
)

// endsSource assigns n partitions, p0 ... p(n-1), each at position 3, and
// never has data. It reports (connector.LagReporter) partition i ending at
// 10*(i+1), and a partition "ghost" it was never assigned.
type endsSource struct{ n int }

func (s *endsSource) Open(ctx context.Context, h connector.Host) error {
	for i := range s.n {
		h.Assign(fmt.Sprintf("p%d", i), 3)
	}
	return nil
}

func (s *endsSource) Poll(ctx context.Context, b *connector.Batch) error {
	<-ctx.Done()
	return ctx.Err()
}
func (s *endsSource) Commit(context.Context, []connector.Commit) error { return nil }
func (s *endsSource) Seek(context.Context, checkpoint.Partition, connector.Position) error {
	return nil
}
func (s *endsSource) Close(context.Context) error { return nil }

func (s *endsSource) Ends() map[string]connector.Position {
	ends := map[string]connector.Position{"ghost": 1000}
	for i := range s.n {
		ends[fmt.Sprintf("p%d", i)] = connector.Position(10 * (i + 1))
	}
	return ends
}

var _ connector.LagReporter = (*endsSource)(nil)

// Guarantee: /metrics exports the lag of each partition of a source that
// reports its ends (connector.LagReporter): the end minus the committed
// position, labelled by source and partition, and the source's total; a
// partition it was not assigned is left out. A source with more than 100
// such partitions exports its total and count only, no series per
// partition. A source that reports no ends exports no lag.
func TestMetricsExportLagOfSourcesThatKnowTheirEnds(t *testing.T) {
	few, many := &endsSource{n: 3}, &endsSource{n: 150}
	sp := &pipeline.Spec{
		Sources: []pipeline.SourceSpec{{Name: "few", Source: few}, {Name: "many", Source: many}, {Name: "blind", Source: &blindSource{}}},
		Sinks:   []pipeline.SinkSpec{{Name: "out", Inputs: []string{"few", "many", "blind"}, Sink: blackhole.New()}},
	}
	mux := http.NewServeMux()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- pipeline.Run(ctx, sp, quiet, pipeline.WithServeMux(mux)) }()
	srv := httptest.NewServer(mux)
	defer srv.Close()
	waitServed(t, srv.URL)
	// Wait until every partition is assigned and its committed position
	// published (at the first commit interval).
	var body string
	deadline := time.Now().Add(30 * time.Second)
	for {
		_, body = httpGet(t, srv.URL+"/metrics")
		if metricValue(body, `weir_source_lag_partitions{source="few"}`) == "3" && metricValue(body, `weir_source_lag_partitions{source="many"}`) == "150" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the lag of every partition never showed:\n%s", grepLines(body, "lag"))
		}
		time.Sleep(50 * time.Millisecond) // polling an external view for a condition, with a deadline
	}
	want := map[string]string{
		`weir_partition_lag_position{partition="p0",source="few"}`: "7",
		`weir_partition_lag_position{partition="p1",source="few"}`: "17",
		`weir_partition_lag_position{partition="p2",source="few"}`: "27",
		`weir_source_lag_position{source="few"}`:                   "51",
		`weir_source_lag_partitions{source="few"}`:                 "3",
		`weir_source_lag_position{source="many"}`:                  fmt.Sprint(10*150*151/2 - 3*150),
		`weir_source_lag_partitions{source="many"}`:                "150",
	}
	for series, v := range want {
		if got := metricValue(body, series); got != v {
			t.Errorf("%s = %q, want %s", series, got, v)
		}
	}
	if m := regexp.MustCompile(`weir_partition_lag_position\{[^}]*source="(many|blind)"`).FindString(body); m != "" {
		t.Errorf("found %s: a source above the cap of 100 partitions, or without ends, has no series per partition", m)
	}
	if strings.Contains(body, `partition="ghost"`) || strings.Contains(body, `weir_source_lag_position{source="blind"}`) {
		t.Errorf("an unassigned partition or a source without ends has a lag series:\n%s", grepLines(body, "lag"))
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

func grepLines(body, word string) string {
	var out []string
	for _, line := range strings.Split(body, "\n") {
		if strings.Contains(line, word) && !strings.HasPrefix(line, "#") {
			out = append(out, line)
		}
	}
	return strings.Join(out, "\n")
}

// metricValue returns the value of series in a text exposition, or "".
func metricValue(body, series string) string {
	for _, line := range strings.Split(body, "\n") {
		if v, ok := strings.CutPrefix(line, series+" "); ok {
			return v
		}
	}
	return ""
}

// blindSource is an endsSource of one partition that does not know its end.
type blindSource struct{}

func (s *blindSource) Open(ctx context.Context, h connector.Host) error {
	h.Assign("b0", 0)
	return nil
}
func (s *blindSource) Poll(ctx context.Context, b *connector.Batch) error {
	<-ctx.Done()
	return ctx.Err()
}
func (s *blindSource) Commit(context.Context, []connector.Commit) error { return nil }
func (s *blindSource) Seek(context.Context, checkpoint.Partition, connector.Position) error {
	return nil
}
func (s *blindSource) Close(context.Context) error { return nil }

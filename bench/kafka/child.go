package main

import (
	"context"
	"encoding/json"
	"fmt"
	"log"
	"os"
	goruntime "runtime"
	"runtime/pprof"
	"runtime/trace"
	"sync"
	"time"

	"github.com/weir-etl/weir/bench/internal/proc"
)

// rssEvery is how often a child samples its RSS.
const rssEvery = 50 * time.Millisecond

// runChild runs one case once in this process and prints its measure as
// JSON on stdout.
func runChild(c string, run int) {
	ctx := context.Background()
	if *cpuProf != "" {
		f, err := os.Create(fmt.Sprintf("%s-%s-%d.pprof", *cpuProf, c, run))
		if err != nil {
			log.Fatal(err)
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			log.Fatal(err)
		}
	}
	if *trFile != "" {
		f, err := os.Create(fmt.Sprintf("%s-%s-%d.trace", *trFile, c, run))
		if err != nil {
			log.Fatal(err)
		}
		if err := trace.Start(f); err != nil {
			log.Fatal(err)
		}
	}
	stop := sampleRSS(c, run)
	topic := topicName()
	var m measure
	var err error
	switch c {
	case "bare":
		m, err = bare(ctx, topic, nil)
	case "bare-file":
		m, err = bareFile(ctx, topic)
	case "blackhole", "file", "file-linger", "kafka", "stall", "file-eos", "kafka-eos":
		m, err = weir(ctx, topic, c, run)
	default:
		err = fmt.Errorf("unknown case %q", c)
	}
	m.RSS = stop()
	if *cpuProf != "" {
		pprof.StopCPUProfile()
	}
	if *trFile != "" {
		trace.Stop()
	}
	if err != nil {
		log.Fatal(err)
	}
	if err := json.NewEncoder(os.Stdout).Encode(m); err != nil {
		log.Fatal(err)
	}
	if c == "stall" {
		// The stalled sink would hold a graceful stop for the shutdown
		// timeout: the child is done, and its process ends here.
		os.Exit(0)
	}
}

// sampleRSS samples this process's resident set size every rssEvery until
// stop, which returns the samples in MB. With -memprofile it also writes a
// heap profile whenever the heap in use is larger than at any sample
// before, so that the last one written is of the largest heap sampled.
func sampleRSS(c string, run int) (stop func() []float64) {
	var out []float64
	done := make(chan struct{})
	var wg sync.WaitGroup
	var most uint64
	wg.Go(func() {
		t := time.NewTicker(rssEvery)
		defer t.Stop()
		for {
			out = append(out, proc.RSSMB())
			if *memProf != "" {
				var ms goruntime.MemStats
				goruntime.ReadMemStats(&ms)
				if ms.HeapInuse > most {
					most = ms.HeapInuse
					writeHeapProfile(fmt.Sprintf("%s-%s-%d.pprof", *memProf, c, run))
				}
			}
			select {
			case <-t.C:
			case <-done:
				return
			}
		}
	})
	return func() []float64 {
		close(done)
		wg.Wait()
		return out
	}
}

func writeHeapProfile(path string) {
	f, err := os.Create(path)
	if err != nil {
		log.Fatal(err)
	}
	defer f.Close()
	if err := pprof.Lookup("heap").WriteTo(f, 0); err != nil {
		log.Fatal(err)
	}
}

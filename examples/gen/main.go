// Command gen writes the quickstart's sample orders to examples/data. The
// output is deterministic: run it again and the files are the same.
//
//	go run ./examples/gen
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"log"
	"math/rand/v2"
	"os"
	"path/filepath"
	"time"
)

type order struct {
	ID        int     `json:"id"`
	Time      string  `json:"ts"`
	Region    string  `json:"region"`
	Customer  string  `json:"customer"`
	Status    string  `json:"status"`
	SKU       string  `json:"sku"`
	Qty       int     `json:"qty"`
	UnitPrice float64 `json:"unit_price"`
	Channel   string  `json:"channel"`
}

func main() {
	dir := filepath.Join("examples", "data")
	if len(os.Args) > 1 {
		dir = os.Args[1]
	}
	rng := rand.New(rand.NewPCG(42, 7))
	regions := []string{"eu", "eu", "us", "us", "us", "apac"}
	statuses := []string{"paid", "paid", "paid", "pending", "refunded"}
	skus := []string{"kettle", "mug", "teapot", "filter", "grinder", "scale"}
	prices := map[string]float64{"kettle": 39.90, "mug": 8.50, "teapot": 24.00, "filter": 4.25, "grinder": 89.00, "scale": 29.95}
	channels := []string{"web", "app", "store"}
	start := time.Date(2026, 2, 1, 8, 0, 0, 0, time.UTC)
	id := 1000
	for _, name := range []string{"orders-2026-02-01.ndjson", "orders-2026-02-02.ndjson"} {
		f, err := os.Create(filepath.Join(dir, name))
		if err != nil {
			log.Fatal(err)
		}
		w := bufio.NewWriter(f)
		for range 300 {
			id++
			sku := skus[rng.IntN(len(skus))]
			o := order{
				ID:        id,
				Time:      start.Add(time.Duration(id-1000) * 137 * time.Second).Format(time.RFC3339),
				Region:    regions[rng.IntN(len(regions))],
				Customer:  fmt.Sprintf("c-%04d", rng.IntN(400)),
				Status:    statuses[rng.IntN(len(statuses))],
				SKU:       sku,
				Qty:       1 + rng.IntN(4),
				UnitPrice: prices[sku],
				Channel:   channels[rng.IntN(len(channels))],
			}
			b, err := json.Marshal(o)
			if err != nil {
				log.Fatal(err)
			}
			w.Write(b)
			w.WriteByte('\n')
		}
		if err := w.Flush(); err != nil {
			log.Fatal(err)
		}
		if err := f.Close(); err != nil {
			log.Fatal(err)
		}
	}
}

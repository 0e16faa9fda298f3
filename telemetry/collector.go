package telemetry

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"sync"
	"time"
)

// DefaultInterval is the scrape interval when none is given: vLLM updates its
// gauges every engine step and dcgm-exporter samples every second by default.
const DefaultInterval = time.Second

// Options configure a Collector. The zero value is usable.
type Options struct {
	// Timeout bounds one scrape of one target; it defaults to the interval.
	Timeout time.Duration
	// Client is the HTTP client for every target; it defaults to one with
	// keep-alive connections per target.
	Client *http.Client
	// Store bounds the in-memory series.
	Store StoreOptions
	// JSONL, when set, receives every scrape as one line (telemetry.jsonl).
	JSONL io.Writer
	// Derive configures Window's derived signals and straggler detection.
	Derive DeriveOptions
	// Logger receives one warning per failed scrape; nil discards them.
	Logger *slog.Logger
	// Now is the clock stamping each scrape round; it defaults to time.Now.
	Now func() time.Time
}

// Collector scrapes a set of targets at an interval into a bounded Store. A
// failing target leaves a gap and an error naming it; it never stops the
// collection, so a load run goes on whatever its telemetry does.
type Collector struct {
	targets  []Target
	scrapers []Scraper
	interval time.Duration
	opts     Options
	ownHTTP  bool // opts.Client was made here; its idle connections are closed after Run
	store    *Store
	jsonl    *JSONLWriter

	mu       sync.Mutex
	writeErr error
}

// NewCollector validates the targets and returns a collector scraping them
// every interval (DefaultInterval when zero).
func NewCollector(targets []Target, interval time.Duration, opts Options) (*Collector, error) {
	if len(targets) == 0 {
		return nil, errors.New("telemetry: no targets")
	}
	if interval < 0 {
		return nil, fmt.Errorf("telemetry: negative interval %s", interval)
	}
	if interval == 0 {
		interval = DefaultInterval
	}
	if opts.Timeout <= 0 || opts.Timeout > interval {
		opts.Timeout = interval
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	ownHTTP := opts.Client == nil
	if ownHTTP {
		opts.Client = &http.Client{Transport: &http.Transport{
			Proxy:               http.ProxyFromEnvironment,
			MaxIdleConnsPerHost: 2,
			IdleConnTimeout:     time.Minute,
		}}
	}
	seen := make(map[string]bool, len(targets))
	c := &Collector{interval: interval, opts: opts, ownHTTP: ownHTTP, store: NewStore(opts.Store)}
	for _, t := range targets {
		if err := validateTarget(t); err != nil {
			return nil, fmt.Errorf("telemetry: %w", err)
		}
		if seen[t.Name] {
			return nil, fmt.Errorf("telemetry: target name %q used twice", t.Name)
		}
		seen[t.Name] = true
		c.targets = append(c.targets, t)
		c.scrapers = append(c.scrapers, &HTTPScraper{Target: t, Client: opts.Client})
	}
	if opts.JSONL != nil {
		c.jsonl = NewJSONLWriter(opts.JSONL)
	}
	return c, nil
}

// Run scrapes every target now and then every interval until ctx is done. It
// returns nil when ctx ends the collection; it returns the first error writing
// the JSONL stream (after which scraping into memory went on).
func (c *Collector) Run(ctx context.Context) error {
	tick := time.NewTicker(c.interval)
	defer tick.Stop()
	if c.ownHTTP {
		defer c.opts.Client.CloseIdleConnections()
	}
	for {
		c.ScrapeOnce(ctx)
		select {
		case <-ctx.Done():
			return c.WriteErr()
		case <-tick.C:
		}
	}
}

// ScrapeOnce scrapes every target concurrently, stamps the round with one
// time, records it and returns the round's scrapes in target order. A
// cancelled ctx records nothing.
func (c *Collector) ScrapeOnce(ctx context.Context) []Scrape {
	if ctx.Err() != nil {
		return nil
	}
	now := c.opts.Now()
	round := make([]Scrape, len(c.scrapers))
	var wg sync.WaitGroup
	for i, sc := range c.scrapers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sctx, cancel := context.WithTimeout(ctx, c.opts.Timeout)
			defer cancel()
			start := time.Now()
			samples, err := sc.Scrape(sctx)
			round[i] = Scrape{Time: now, Target: c.targets[i].Name, Seconds: time.Since(start).Seconds(), Samples: samples}
			if err != nil {
				round[i].Error = err.Error()
				round[i].Samples = nil
			}
		}()
	}
	wg.Wait()
	if ctx.Err() != nil {
		return nil // the run ended mid-round; its partial results are not a gap
	}
	for _, sc := range round {
		if sc.Error != "" {
			c.opts.Logger.Warn("telemetry scrape failed", "target", sc.Target, "err", sc.Error)
		}
		c.store.AddScrape(sc)
	}
	if c.jsonl != nil && c.WriteErr() == nil {
		for i := range round {
			if err := c.jsonl.Write(&round[i]); err != nil {
				c.mu.Lock()
				c.writeErr = err
				c.mu.Unlock()
				c.opts.Logger.Error("telemetry: JSONL output stopped", "err", err)
				break
			}
		}
	}
	return round
}

// WriteErr returns the error that stopped the JSONL stream, if any.
func (c *Collector) WriteErr() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.writeErr
}

// Store returns the collector's store.
func (c *Collector) Store() *Store { return c.store }

// Series returns a copy of every collected series.
func (c *Collector) Series() []Series { return c.store.Series() }

// Gaps returns the stretches of failed scrapes.
func (c *Collector) Gaps() []Gap { return c.store.Gaps() }

// Window derives the signals of [start, end] from what was collected.
func (c *Collector) Window(start, end time.Time) Signals {
	return c.store.Window(start, end, c.opts.Derive)
}

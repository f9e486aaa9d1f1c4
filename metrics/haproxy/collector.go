// Package haproxy exports HAProxy's CSV statistics ("show stat" on the
// runtime API socket) as Prometheus metrics under the names OpenShift's
// router uses: haproxy_frontend_*, haproxy_backend_* and haproxy_server_*,
// labelled with the route and namespace derived from the router's backend
// names, plus the exporter's own haproxy_exporter_* metrics.
//
// HAProxy is asked at most once per scrape interval (the base interval,
// growing by one base interval per 1000 rows of statistics); scrapes in
// between are answered from the last result. With more servers than the
// server threshold, per-server metrics are dropped and backends report the
// larger "b" set of columns instead of the reduced "B" set.
//
// HAProxy's counters start again from zero when it reloads (the new worker
// process has its own counters). The *_total metrics are exported with the
// Prometheus counter type, so rate() and increase() treat the drop as a
// counter reset and never yield a negative rate.
package haproxy

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
)

const namespace = "haproxy"

// Defaults of the collector's options.
const (
	DefaultTimeout            = 5 * time.Second
	DefaultBaseScrapeInterval = 5 * time.Second
	DefaultServerThreshold    = 500
)

// Source answers runtime API commands; *runtimeapi.Client is one.
type Source interface {
	Exec(ctx context.Context, command string) (string, error)
}

// SourceFunc adapts a function to Source.
type SourceFunc func(ctx context.Context, command string) (string, error)

// Exec calls f.
func (f SourceFunc) Exec(ctx context.Context, command string) (string, error) { return f(ctx, command) }

// Options configure a Collector.
type Options struct {
	// Source is HAProxy's runtime API (the stats socket). Required.
	Source Source
	// Timeout bounds one "show stat". Default 5s.
	Timeout time.Duration
	// BaseScrapeInterval is the minimum time between two requests to
	// HAProxy for up to 1000 rows; it grows by itself per 1000 rows.
	// Default 5s.
	BaseScrapeInterval time.Duration
	// ServerThreshold: above this many servers, backends are reported
	// instead of servers. Default 500.
	ServerThreshold int
	// Columns are the CSV column indices to export. Default DefaultColumns().
	Columns []int
	Logger  logr.Logger
	// Now is the clock; default time.Now.
	Now func() time.Time
	// DynamicServer resolves a spare server slot (a server whose name
	// starts with DynamicServerPrefix) of the route namespace/route to the
	// name of the endpoint it serves; false means the slot is free, and it
	// is left out of the metrics and the server count. Nil reports slots
	// under their own names.
	DynamicServer func(namespace, route, slot string) (string, bool)
}

// MaxConnFrontend is the frontend whose session limit (column 6, slim) is
// reported as haproxy_max_connections.
const MaxConnFrontend = "public"

const slimColumn = 6

// DynamicServerPrefix starts the names of spare server slots.
const DynamicServerPrefix = "_dynamic-pod-"

type kind int

const (
	frontendKind kind = iota
	backendKind
	serverKind
)

var kindNames = [...]string{"frontend", "backend", "server"}

var kindLabels = [...][]string{
	{"frontend"},
	{"backend", "namespace", "route"},
	{"server", "namespace", "route", "pod", "service", "backend"},
}

// exported is a selected column with its descriptor for each kind of row.
type exported struct {
	Column
	desc [3]*prometheus.Desc // nil where the column is not used for that kind
}

// Collector is a prometheus.Collector for HAProxy's statistics.
type Collector struct {
	o        Options
	cols     []exported
	minCols  int
	descs    []*prometheus.Desc
	up       *prometheus.Desc
	haUp     *prometheus.Desc
	maxConn  *prometheus.Desc
	scrapes  *prometheus.Desc
	failures *prometheus.Desc
	interval *prometheus.Desc
	servers  *prometheus.Desc

	mu           sync.Mutex
	scraped      bool
	lastScrape   time.Time
	nextInterval time.Duration
	lastUp       bool
	totalScrapes uint64
	parseFails   uint64
	serverCount  int
	maxConns     float64
	metrics      []prometheus.Metric
}

// New returns a Collector; it fails on an unknown column.
func New(o Options) (*Collector, error) {
	if o.Source == nil {
		return nil, errors.New("haproxy metrics: no statistics source")
	}
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	if o.BaseScrapeInterval <= 0 {
		o.BaseScrapeInterval = DefaultBaseScrapeInterval
	}
	if o.ServerThreshold <= 0 {
		o.ServerThreshold = DefaultServerThreshold
	}
	if len(o.Columns) == 0 {
		o.Columns = DefaultColumns()
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if err := ValidateColumns(o.Columns); err != nil {
		return nil, fmt.Errorf("haproxy metrics: %w", err)
	}
	c := &Collector{o: o, nextInterval: o.BaseScrapeInterval}

	idx := append([]int(nil), o.Columns...)
	sort.Ints(idx)
	shared := map[string]*prometheus.Desc{}
	for _, i := range idx {
		col, _ := ColumnByIndex(i)
		e := exported{Column: col}
		for k := frontendKind; k <= serverKind; k++ {
			if !usedFor(col.Usage, k) {
				continue
			}
			key := kindNames[k] + "_" + col.Name
			d, ok := shared[key]
			if !ok {
				labels := kindLabels[k]
				if col.Code != "" {
					labels = append(append([]string(nil), labels...), "code")
				}
				d = prometheus.NewDesc(prometheus.BuildFQName(namespace, kindNames[k], col.Name), col.Help, labels, nil)
				shared[key] = d
				c.descs = append(c.descs, d)
			}
			e.desc[k] = d
		}
		c.cols = append(c.cols, e)
		if i+1 > c.minCols {
			c.minCols = i + 1
		}
	}
	c.up = prometheus.NewDesc("haproxy_exporter_up", "Was the last scrape of haproxy successful.", nil, nil)
	c.haUp = prometheus.NewDesc("haproxy_up", "Was the last scrape of haproxy successful.", nil, nil)
	c.maxConn = prometheus.NewDesc("haproxy_max_connections", "Maximum number of concurrent connections configured for the HAProxy process.", nil, nil)
	c.scrapes = prometheus.NewDesc("haproxy_exporter_total_scrapes", "Current total HAProxy scrapes.", nil, nil)
	c.failures = prometheus.NewDesc("haproxy_exporter_csv_parse_failures", "Number of errors while parsing CSV.", nil, nil)
	c.interval = prometheus.NewDesc("haproxy_exporter_scrape_interval", "The time in seconds before another scrape is allowed, proportional to size of data.", nil, nil)
	c.servers = prometheus.NewDesc("haproxy_exporter_server_threshold", "Number of servers tracked and the current threshold value.", []string{"type"}, nil)
	return c, nil
}

// usedFor reports whether a column is exported for a kind of row in
// either threshold mode (b or B for backends).
func usedFor(u Usage, k kind) bool {
	switch k {
	case frontendKind:
		return u.has('F')
	case backendKind:
		return u.has('b') || u.has('B')
	default:
		return u.has('S')
	}
}

// Describe implements prometheus.Collector.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range c.descs {
		ch <- d
	}
	ch <- c.up
	ch <- c.haUp
	ch <- c.maxConn
	ch <- c.scrapes
	ch <- c.failures
	ch <- c.interval
	ch <- c.servers
}

// Collect implements prometheus.Collector: it asks HAProxy for its
// statistics unless the last answer is younger than the scrape interval.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.o.Now()
	if !c.scraped || !now.Before(c.lastScrape.Add(c.nextInterval)) {
		c.scrape(now)
	}
	up := 0.0
	if c.lastUp {
		up = 1
	}
	ch <- prometheus.MustNewConstMetric(c.up, prometheus.GaugeValue, up)
	ch <- prometheus.MustNewConstMetric(c.haUp, prometheus.GaugeValue, up)
	ch <- prometheus.MustNewConstMetric(c.maxConn, prometheus.GaugeValue, c.maxConns)
	// Counters without the _total suffix: OpenMetrics output keeps their
	// documented names and gives them the "unknown" type.
	ch <- prometheus.MustNewConstMetric(c.scrapes, prometheus.CounterValue, float64(c.totalScrapes))
	ch <- prometheus.MustNewConstMetric(c.failures, prometheus.CounterValue, float64(c.parseFails))
	ch <- prometheus.MustNewConstMetric(c.interval, prometheus.GaugeValue, c.nextInterval.Seconds())
	ch <- prometheus.MustNewConstMetric(c.servers, prometheus.GaugeValue, float64(c.serverCount), "current")
	ch <- prometheus.MustNewConstMetric(c.servers, prometheus.GaugeValue, float64(c.o.ServerThreshold), "limit")
	for _, m := range c.metrics {
		ch <- m
	}
}

// scrape asks HAProxy and rebuilds the metrics; called with c.mu held.
func (c *Collector) scrape(now time.Time) {
	c.scraped = true
	c.lastScrape = now
	c.totalScrapes++
	log := c.o.Logger

	ctx, cancel := context.WithTimeout(context.Background(), c.o.Timeout)
	defer cancel()
	reply, err := c.o.Source.Exec(ctx, "show stat")
	var rows []Row
	var bad []error
	if err == nil {
		rows, bad, err = ParseStats(reply, c.minCols)
	}
	if err != nil {
		if c.lastUp {
			log.Error(err, "cannot read HAProxy statistics; haproxy_* metrics are not reported until it answers again")
		} else {
			log.V(2).Info("cannot read HAProxy statistics", "err", err.Error())
		}
		c.lastUp = false
		c.metrics = nil
		c.serverCount = 0
		c.nextInterval = c.o.BaseScrapeInterval
		return
	}
	c.lastUp = true
	rows = c.resolveSlots(rows)

	servers := 0
	for _, r := range rows {
		switch {
		case r.Type == typeServer:
			servers++
		case r.Type == typeFrontend && r.Proxy == MaxConnFrontend && len(r.Fields) > slimColumn:
			// The HTTP frontend's session limit is the process-wide
			// maxconn: the default template sets no frontend maxconn, so
			// it inherits the global one (as OpenShift's router reads it).
			if v, err := strconv.ParseFloat(r.Fields[slimColumn], 64); err == nil {
				c.maxConns = v
			}
		}
	}
	limited := servers > c.o.ServerThreshold
	c.serverCount = servers

	var valueErrs []error
	c.metrics, valueErrs = c.build(rows, limited)
	bad = append(bad, valueErrs...)
	c.parseFails += uint64(len(bad))
	if len(bad) > 0 {
		log.V(1).Info("some HAProxy statistics could not be parsed and were skipped", "failures", len(bad), "first", bad[0].Error())
	}
	c.nextInterval = time.Duration(float64(c.o.BaseScrapeInterval) * (1 + float64(len(rows))/1000))
}

// resolveSlots renames the rows of occupied server slots after their
// endpoint and drops free slots.
func (c *Collector) resolveSlots(rows []Row) []Row {
	if c.o.DynamicServer == nil {
		return rows
	}
	out := rows[:0]
	for _, r := range rows {
		if r.Type == typeServer && strings.HasPrefix(r.Server, DynamicServerPrefix) {
			_, ns, route := BackendLabels(r.Proxy)
			name, ok := c.o.DynamicServer(ns, route, r.Server)
			if !ok {
				continue
			}
			r.Server = name
		}
		out = append(out, r)
	}
	return out
}

// build turns rows into metrics. With limited set (more servers than the
// threshold) backends get their "b" columns and servers are left out;
// otherwise backends get the "B" columns and servers their "S" columns.
func (c *Collector) build(rows []Row, limited bool) ([]prometheus.Metric, []error) {
	var (
		out  []prometheus.Metric
		errs []error
		seen = map[string]bool{}
	)
	for _, r := range rows {
		var (
			k      kind
			usage  byte
			labels []string
		)
		switch r.Type {
		case typeFrontend:
			k, usage, labels = frontendKind, 'F', []string{r.Proxy}
		case typeBackend:
			k, usage = backendKind, 'B'
			if limited {
				usage = 'b'
			}
			be, ns, route := BackendLabels(r.Proxy)
			labels = []string{be, ns, route}
		case typeServer:
			if limited {
				continue
			}
			k, usage = serverKind, 'S'
			be, ns, route := BackendLabels(r.Proxy)
			server, pod, svc := ServerLabels(r.Server)
			labels = []string{server, ns, route, pod, svc, be}
		default:
			continue
		}
		for _, col := range c.cols {
			d := col.desc[k]
			if d == nil || !col.Usage.has(usage) {
				continue
			}
			raw := r.Fields[col.Index]
			if raw == "" {
				continue // not applicable to this row (e.g. HTTP columns of a TCP proxy)
			}
			v, err := parseValue(col.Index, raw)
			if err != nil {
				errs = append(errs, fmt.Errorf("%s/%s: %w", r.Proxy, r.Server, err))
				continue
			}
			lv := labels
			if col.Code != "" {
				lv = append(append([]string(nil), labels...), col.Code)
			}
			key := kindNames[k] + "\xff" + col.Name + "\xff" + strings.Join(lv, "\xff")
			if seen[key] {
				// Two rows with the same labels (e.g. same-named servers
				// of a custom template's backends): keep the first.
				continue
			}
			seen[key] = true
			vt := prometheus.GaugeValue
			if col.Counter {
				vt = prometheus.CounterValue
			}
			m, err := prometheus.NewConstMetric(d, vt, v, lv...)
			if err != nil {
				errs = append(errs, fmt.Errorf("%s/%s: %w", r.Proxy, r.Server, err))
				continue
			}
			out = append(out, m)
		}
	}
	return out, errs
}

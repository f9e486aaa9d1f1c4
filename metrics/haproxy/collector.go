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
	"math"
	"slices"
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

// SizedSource is a Source that reads a reply into a buffer of the size it
// is told to expect (*runtimeapi.Client is one): the collector tells it
// the size of the last "show stat" reply, and a scrape of 10,000 routes
// allocates that reply once instead of several times as it grows.
type SizedSource interface {
	Source
	ExecSized(ctx context.Context, command string, sizeHint int) (string, error)
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
	// Backend resolves the name HAProxy runs a backend as to the backend
	// of the configuration it stands for (a route's backend may run under
	// the name of a removed one until the next reload); false for a
	// backend the configuration no longer has, which is left out. Nil
	// reports backends under their own names.
	Backend func(proxy string) (string, bool)
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
	series       []series
	replyLen     int // of the last "show stat" reply
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
	c.refresh()
	c.collectMeta(ch)
	for i := range c.series {
		s := &c.series[i]
		for j := range c.cols {
			col := &c.cols[j]
			if v := s.values[j]; !math.IsNaN(v) {
				if m, err := prometheus.NewConstMetric(col.desc[s.kind], col.valueType(), v, c.labelValues(s, col)...); err == nil {
					ch <- m
				}
			}
		}
	}
}

// collectMeta sends the exporter's own metrics (up, scrapes, threshold,
// ...); called with c.mu held.
func (c *Collector) collectMeta(ch chan<- prometheus.Metric) {
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
}

// refresh asks HAProxy again when the last answer is older than the scrape
// interval; called with c.mu held.
func (c *Collector) refresh() {
	now := c.o.Now()
	if !c.scraped || !now.Before(c.lastScrape.Add(c.nextInterval)) {
		c.scrape(now)
	}
}

// scrape asks HAProxy and rebuilds the series; called with c.mu held.
func (c *Collector) scrape(now time.Time) {
	c.scraped = true
	c.lastScrape = now
	c.totalScrapes++
	log := c.o.Logger

	ctx, cancel := context.WithTimeout(context.Background(), c.o.Timeout)
	defer cancel()
	reply, err := c.showStat(ctx)
	var bad []error
	servers, rows := 0, 0
	if err == nil {
		// First pass: count the rows and servers (free spare slots left
		// out) to know which columns to export; nothing is kept.
		bad, err = eachRow(reply, c.minCols, func(r Row) {
			if !c.backendName(&r) {
				return
			}
			switch {
			case r.Type == typeServer:
				if _, ok := c.serverName(r); !ok {
					return
				}
				servers++
			case r.Type == typeFrontend && r.Proxy == MaxConnFrontend && len(r.Fields) > slimColumn:
				// The HTTP frontend's session limit is the process-wide
				// maxconn: the default template sets no frontend maxconn, so
				// it inherits the global one (as OpenShift's router reads it).
				if v, err := strconv.ParseFloat(r.Fields[slimColumn], 64); err == nil {
					c.maxConns = v
				}
			}
			rows++
		})
	}
	if err != nil {
		if c.lastUp {
			log.Error(err, "cannot read HAProxy statistics; haproxy_* metrics are not reported until it answers again")
		} else {
			log.V(2).Info("cannot read HAProxy statistics", "err", err.Error())
		}
		c.lastUp = false
		c.series = nil
		c.serverCount = 0
		c.nextInterval = c.o.BaseScrapeInterval
		return
	}
	c.lastUp = true
	c.serverCount = servers

	// Second pass: the values of the rows exported (the rows were checked
	// by the first pass, whose errors are the ones counted).
	b := newSeriesBuilder(c, servers > c.o.ServerThreshold, rows, servers)
	_, _ = eachRow(reply, c.minCols, b.add)
	c.series = slices.Clip(b.series)
	bad = append(bad, b.errs...)
	c.parseFails += uint64(len(bad))
	if len(bad) > 0 {
		log.V(1).Info("some HAProxy statistics could not be parsed and were skipped", "failures", len(bad), "first", bad[0].Error())
	}
	c.nextInterval = time.Duration(float64(c.o.BaseScrapeInterval) * (1 + float64(rows)/1000))
}

// showStat asks the source for "show stat", telling a SizedSource to
// expect a little more than the last reply.
func (c *Collector) showStat(ctx context.Context) (string, error) {
	src, ok := c.o.Source.(SizedSource)
	if !ok {
		return c.o.Source.Exec(ctx, "show stat")
	}
	reply, err := src.ExecSized(ctx, "show stat", c.replyLen+c.replyLen/16)
	if err == nil {
		c.replyLen = len(reply)
	}
	return reply, err
}

// backendName puts in a backend or server row the name of the backend it
// is reported under (Options.Backend); false for a backend left out.
func (c *Collector) backendName(r *Row) bool {
	if c.o.Backend == nil || (r.Type != typeBackend && r.Type != typeServer) {
		return true
	}
	name, ok := c.o.Backend(r.Proxy)
	r.Proxy = name
	return ok
}

// serverName is the name a server row is reported under: an occupied
// spare slot is renamed after its endpoint; false for a free slot, which
// is left out.
func (c *Collector) serverName(r Row) (string, bool) {
	if c.o.DynamicServer == nil || !strings.HasPrefix(r.Server, DynamicServerPrefix) {
		return r.Server, true
	}
	_, ns, route := BackendLabels(r.Proxy)
	return c.o.DynamicServer(ns, route, r.Server)
}

// series is one exported row of the statistics: its label values (in the
// order of kindLabels) and the value of each of the collector's columns,
// NaN where the row has none (empty, not parsable, or not exported for
// this kind of row). Its strings are its own, not the reply's: the reply
// (tens of MB with many routes) is not kept.
type series struct {
	kind   kind
	labels []string
	values []float64
}

// seriesBuilder turns rows into series. With limited set (more servers
// than the threshold) backends get their "b" columns and servers are
// left out; otherwise backends get the "B" columns and servers their "S"
// columns.
type seriesBuilder struct {
	c       *Collector
	limited bool
	series  []series
	// index finds the series of a kind and label values: two rows with
	// the same labels (e.g. same-named servers of a custom template's
	// backends) make one series, each column's value from the first row
	// that has one.
	index map[string]int
	errs  []error
	// free is where the values of the next series are taken from: one
	// allocation for all of a scrape's series.
	free []float64
}

// newSeriesBuilder makes a builder with room for the series of rows rows
// of which servers are servers.
func newSeriesBuilder(c *Collector, limited bool, rows, servers int) *seriesBuilder {
	if limited {
		rows -= servers
	}
	return &seriesBuilder{c: c, limited: limited, index: make(map[string]int, rows),
		series: make([]series, 0, rows), free: make([]float64, rows*len(c.cols))}
}

// values is room for a series' values, taken from free only by keep.
func (b *seriesBuilder) values() []float64 {
	n := len(b.c.cols)
	if len(b.free) < n {
		b.free = make([]float64, 64*n)
	}
	return b.free[:n:n]
}

// keep marks the room values gave as used.
func (b *seriesBuilder) keep() { b.free = b.free[len(b.c.cols):] }

func (b *seriesBuilder) add(r Row) {
	var (
		k     kind
		usage byte
	)
	switch r.Type {
	case typeFrontend:
		k, usage = frontendKind, 'F'
	case typeBackend:
		k, usage = backendKind, 'B'
		if b.limited {
			usage = 'b'
		}
	case typeServer:
		if b.limited {
			return
		}
		k, usage = serverKind, 'S'
	default:
		return
	}
	if k != frontendKind && !b.c.backendName(&r) {
		return
	}
	proxy, server := r.Proxy, r.Server
	if k == serverKind {
		name, ok := b.c.serverName(r)
		if !ok {
			return
		}
		server = name
	}
	values := b.values()
	any := false
	for i, col := range b.c.cols {
		values[i] = math.NaN()
		if col.desc[k] == nil || !col.Usage.has(usage) {
			continue
		}
		raw := r.Fields[col.Index]
		if raw == "" {
			continue // not applicable to this row (e.g. HTTP columns of a TCP proxy)
		}
		v, err := parseValue(col.Index, raw)
		if err != nil {
			b.errs = append(b.errs, fmt.Errorf("%s/%s: %w", proxy, server, err))
			continue
		}
		values[i], any = v, true
	}
	if !any {
		return
	}
	// The labels are substrings of copies of the names, not of the reply.
	var labels []string
	proxy = strings.Clone(proxy)
	switch k {
	case frontendKind:
		labels = []string{proxy}
	case backendKind:
		be, ns, route := BackendLabels(proxy)
		labels = []string{be, ns, route}
	case serverKind:
		be, ns, route := BackendLabels(proxy)
		srv, pod, svc := ServerLabels(strings.Clone(server))
		labels = []string{srv, ns, route, pod, svc, be}
	}
	key := string(rune('0'+k)) + "\xff" + strings.Join(labels, "\xff")
	if j, dup := b.index[key]; dup {
		have := b.series[j].values
		for i, v := range values {
			if math.IsNaN(have[i]) {
				have[i] = v
			}
		}
		return
	}
	b.index[key] = len(b.series)
	b.series = append(b.series, series{kind: k, labels: labels, values: values})
	b.keep()
}

// labelValues are the label values of column col's metric of s.
func (c *Collector) labelValues(s *series, col *exported) []string {
	if col.Code == "" {
		return s.labels
	}
	return append(slices.Clip(s.labels), col.Code)
}

// valueType is the Prometheus type of a column's metrics.
func (col *exported) valueType() prometheus.ValueType {
	if col.Counter {
		return prometheus.CounterValue
	}
	return prometheus.GaugeValue
}

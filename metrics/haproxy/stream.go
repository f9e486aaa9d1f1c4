package haproxy

import (
	"math"
	"sort"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// StreamFamilies writes the same metric families Collect sends, one family
// at a time, to emit; emit must not keep the family (its objects are
// reused for the next one). HAProxy is asked again, as by Collect, when
// the last answer is older than the scrape interval.
//
// With 10,000 routes HAProxy's statistics are some 200,000 series: a
// registry's Gather holds all of them as protocol buffers at once (about
// 100 MB for a moment, and RSS that Go does not return soon), while
// streaming holds one family of them.
func (c *Collector) StreamFamilies(emit func(*dto.MetricFamily) error) error {
	// The exporter's own metrics are few: a registry gathers them. The
	// series are not changed once built (a scrape builds new ones), so
	// they are written without the lock: a slow client holds up no one.
	c.mu.Lock()
	c.refresh()
	meta := prometheus.NewRegistry()
	err := meta.Register(metaCollector{c})
	var mfs []*dto.MetricFamily
	if err == nil {
		mfs, err = meta.Gather()
	}
	all := c.series
	c.mu.Unlock()
	if err != nil {
		return err
	}
	for _, mf := range mfs {
		if err := emit(mf); err != nil {
			return err
		}
	}

	fs := c.families()
	w := newFamilyWriter(c.cols, all, fs)
	for _, f := range fs {
		mf := w.family(f)
		if len(mf.Metric) == 0 {
			continue // as a registry leaves out a family without metrics
		}
		if err := emit(mf); err != nil {
			return err
		}
	}
	return nil
}

// metaCollector collects the exporter's own metrics of a Collector whose
// mutex is held.
type metaCollector struct{ c *Collector }

func (m metaCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{m.c.up, m.c.haUp, m.c.maxConn, m.c.scrapes, m.c.failures, m.c.interval, m.c.servers} {
		ch <- d
	}
}

func (m metaCollector) Collect(ch chan<- prometheus.Metric) { m.c.collectMeta(ch) }

// family is one metric family of the statistics: a kind of row and the
// columns (one, or one per HTTP response code) that share its name.
type family struct {
	name, help string
	kind       kind
	counter    bool
	cols       []int // indexes into Collector.cols
}

// families lists the statistics' metric families in the order of the
// collector's descriptors.
func (c *Collector) families() []family {
	var out []family
	byDesc := map[*prometheus.Desc]int{}
	for i := range c.cols {
		col := &c.cols[i]
		for k := frontendKind; k <= serverKind; k++ {
			d := col.desc[k]
			if d == nil {
				continue
			}
			j, ok := byDesc[d]
			if !ok {
				j = len(out)
				byDesc[d] = j
				out = append(out, family{
					name: prometheus.BuildFQName(namespace, kindNames[k], col.Name), help: col.Help,
					kind: k, counter: col.Counter,
				})
			}
			out[j].cols = append(out[j].cols, i)
		}
	}
	return out
}

// sortedLabels gives, per kind of row, the label names sorted (as client
// libraries write them) and where each one's value is in series.labels;
// the "code" label, when there is one, comes at the position code.
type sortedLabels struct {
	names []string
	from  []int // index into series.labels; -1 for "code"
}

var labelOrder = func() [3]sortedLabels {
	var out [3]sortedLabels
	for k, names := range kindLabels {
		all := append(append([]string(nil), names...), "code")
		from := make([]int, len(all))
		for i := range from {
			from[i] = i
		}
		from[len(from)-1] = -1
		sort.Sort(byName{all, from})
		out[k] = sortedLabels{names: all, from: from}
	}
	return out
}()

type byName struct {
	names []string
	from  []int
}

func (b byName) Len() int           { return len(b.names) }
func (b byName) Less(i, j int) bool { return b.names[i] < b.names[j] }
func (b byName) Swap(i, j int) {
	b.names[i], b.names[j] = b.names[j], b.names[i]
	b.from[i], b.from[j] = b.from[j], b.from[i]
}

// familyWriter builds families into storage it reuses from one family to
// the next. The label pairs of a series are made once and shared by its
// metrics in every family (the encoders only read them); only a family
// with a "code" label needs a list of them per metric. At 10,000 routes a
// scrape's families hold some 200,000 metrics: made one by one with their
// own pairs they were most of what a scrape allocated.
type familyWriter struct {
	cols   []exported
	all    []series
	shared [][]*dto.LabelPair // per series: its label pairs, sorted, no "code"
	codes  []dto.LabelPair    // per column with a Code: its "code" pair

	mf      dto.MetricFamily
	metrics []*dto.Metric
	slab    []dto.Metric
	ptrs    []*dto.LabelPair // the label lists of a family with codes
	values  []float64
	gauges  []dto.Gauge
	counts  []dto.Counter
}

// newFamilyWriter makes the label pairs of the series all and room for
// the largest of the families fs.
func newFamilyWriter(cols []exported, all []series, fs []family) *familyWriter {
	w := &familyWriter{cols: cols, all: all, shared: make([][]*dto.LabelPair, len(all)),
		codes: make([]dto.LabelPair, len(cols))}
	npairs := 0
	for i := range all {
		npairs += len(all[i].labels)
	}
	pairs := make([]dto.LabelPair, 0, npairs)
	ptrs := make([]*dto.LabelPair, 0, npairs)
	for i := range all {
		s := &all[i]
		order := labelOrder[s.kind]
		start := len(ptrs)
		for li, from := range order.from {
			if from < 0 {
				continue
			}
			pairs = append(pairs, dto.LabelPair{Name: &order.names[li], Value: &s.labels[from]})
			ptrs = append(ptrs, &pairs[len(pairs)-1])
		}
		w.shared[i] = ptrs[start:len(ptrs):len(ptrs)]
	}
	for j := range cols {
		if cols[j].Code != "" {
			w.codes[j] = dto.LabelPair{Name: &codeLabel, Value: &cols[j].Code}
		}
	}
	most, mostCoded := 0, 0
	for _, f := range fs {
		n := w.count(f)
		most = max(most, n)
		if w.coded(f) {
			mostCoded = max(mostCoded, n*len(labelOrder[f.kind].names))
		}
	}
	w.metrics = make([]*dto.Metric, 0, most)
	w.slab = make([]dto.Metric, 0, most)
	w.values = make([]float64, 0, most)
	w.ptrs = make([]*dto.LabelPair, 0, mostCoded)
	return w
}

var codeLabel = "code"

// count is the number of metrics of family f.
func (w *familyWriter) count(f family) int {
	n := 0
	for i := range w.all {
		s := &w.all[i]
		if s.kind != f.kind {
			continue
		}
		for _, j := range f.cols {
			if !math.IsNaN(s.values[j]) {
				n++
			}
		}
	}
	return n
}

// coded tells whether family f's metrics have a "code" label.
func (w *familyWriter) coded(f family) bool {
	for _, j := range f.cols {
		if w.cols[j].Code != "" {
			return true
		}
	}
	return false
}

// family fills w's MetricFamily with f's metrics.
func (w *familyWriter) family(f family) *dto.MetricFamily {
	n := w.count(f)
	w.metrics = grow(w.metrics, n)[:0]
	w.slab = grow(w.slab, n)[:0]
	w.values = grow(w.values, n)[:0]
	w.ptrs = w.ptrs[:0]
	if f.counter {
		w.counts = grow(w.counts, n)[:0]
	} else {
		w.gauges = grow(w.gauges, n)[:0]
	}
	for i := range w.all {
		s := &w.all[i]
		if s.kind != f.kind {
			continue
		}
		for _, j := range f.cols {
			v := s.values[j]
			if math.IsNaN(v) {
				continue
			}
			w.values = append(w.values, v)
			w.slab = append(w.slab, dto.Metric{Label: w.labels(i, j)})
			m := &w.slab[len(w.slab)-1]
			if f.counter {
				w.counts = append(w.counts, dto.Counter{Value: &w.values[len(w.values)-1]})
				m.Counter = &w.counts[len(w.counts)-1]
			} else {
				w.gauges = append(w.gauges, dto.Gauge{Value: &w.values[len(w.values)-1]})
				m.Gauge = &w.gauges[len(w.gauges)-1]
			}
			w.metrics = append(w.metrics, m)
		}
	}
	typ := dto.MetricType_GAUGE
	if f.counter {
		typ = dto.MetricType_COUNTER
	}
	w.mf = dto.MetricFamily{Name: &f.name, Help: &f.help, Type: &typ, Metric: w.metrics}
	return &w.mf
}

// labels are the label pairs of series i's metric of column j: the
// series' own, with column j's "code" pair in its place when it has one.
func (w *familyWriter) labels(i, j int) []*dto.LabelPair {
	own := w.shared[i]
	if w.cols[j].Code == "" {
		return own
	}
	start := len(w.ptrs)
	k := 0
	for _, from := range labelOrder[w.all[i].kind].from {
		if from < 0 {
			w.ptrs = append(w.ptrs, &w.codes[j])
			continue
		}
		w.ptrs = append(w.ptrs, own[k])
		k++
	}
	return w.ptrs[start:len(w.ptrs):len(w.ptrs)]
}

// grow returns s with room for n elements; its contents are not kept
// when it has to grow (the caller starts it again from empty).
func grow[T any](s []T, n int) []T {
	if cap(s) < n {
		return make([]T, 0, n)
	}
	return s
}

package server

import (
	"compress/gzip"
	"io"
	"net/http"
	"strconv"
	"strings"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// FamilyStreamer writes metric families one at a time to emit, which does
// not keep them. A source of hundreds of thousands of series (HAProxy's
// statistics with many routes) is streamed so that a scrape never holds
// all of them at once, as a registry's Gather would.
type FamilyStreamer interface {
	StreamFamilies(emit func(*dto.MetricFamily) error) error
}

// metricsHandler serves /metrics as promhttp does (text format, or
// OpenMetrics when the scraper asks for it; gzip when accepted; a gather
// error is logged and what was gathered is served): first the registry's
// families, then the streamed ones.
func (s *Server) metricsHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mfs, err := s.o.Gatherer.Gather()
		if err != nil {
			s.o.Logger.Error(err, "some metrics could not be gathered; serving the others")
		}
		format := expfmt.NegotiateIncludingOpenMetrics(r.Header)
		w.Header().Set("Content-Type", string(format))
		var out io.Writer = w
		if acceptsGzip(r.Header.Get("Accept-Encoding")) {
			w.Header().Set("Content-Encoding", "gzip")
			gz := gzip.NewWriter(w)
			defer gz.Close()
			out = gz
		}
		enc := expfmt.NewEncoder(out, format)
		fail := func(err error) {
			// The status line is sent: the scraper sees a broken body.
			s.o.Logger.Error(err, "writing metrics")
		}
		for _, mf := range mfs {
			if err := enc.Encode(mf); err != nil {
				fail(err)
				return
			}
		}
		emit := streamEncoder(enc, out, format)
		for _, st := range s.o.Streams {
			if err := st.StreamFamilies(emit); err != nil {
				fail(err)
				return
			}
		}
		if c, ok := enc.(expfmt.Closer); ok {
			if err := c.Close(); err != nil {
				fail(err)
			}
		}
	})
}

// streamEncoder encodes streamed families as enc does, without the
// escaping step for a family whose metric and label names need none:
// the escaping step copies a family's list of metrics (hundreds of
// thousands of entries for HAProxy's statistics at 10,000 routes) even
// when it changes nothing, and such names are written the same either way.
func streamEncoder(enc expfmt.Encoder, out io.Writer, format expfmt.Format) func(*dto.MetricFamily) error {
	plain := expfmt.NewEncoder(out, format.WithEscapingScheme(model.NoEscaping))
	return func(mf *dto.MetricFamily) error {
		if legacyNames(mf) {
			return plain.Encode(mf)
		}
		return enc.Encode(mf)
	}
}

// legacyNames tells whether mf's name and its metrics' label names are
// all valid without escaping.
func legacyNames(mf *dto.MetricFamily) bool {
	if !model.IsValidLegacyMetricName(mf.GetName()) {
		return false
	}
	for _, m := range mf.Metric {
		for _, l := range m.Label {
			if !model.LabelName(l.GetName()).IsValidLegacy() {
				return false
			}
		}
	}
	return true
}

// acceptsGzip reports whether an Accept-Encoding header accepts gzip (a
// "gzip" or "*" coding whose quality is not 0).
func acceptsGzip(header string) bool {
	for _, part := range strings.Split(header, ",") {
		coding, params, _ := strings.Cut(strings.TrimSpace(part), ";")
		coding = strings.ToLower(strings.TrimSpace(coding))
		if coding != "gzip" && coding != "*" {
			continue
		}
		q := 1.0
		for _, p := range strings.Split(params, ";") {
			if k, v, ok := strings.Cut(strings.TrimSpace(p), "="); ok && strings.EqualFold(k, "q") {
				if f, err := strconv.ParseFloat(strings.TrimSpace(v), 64); err == nil {
					q = f
				}
			}
		}
		return q > 0
	}
	return false
}

package server

import (
	"bytes"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"google.golang.org/protobuf/proto"
)

// TestStreamedFamiliesAreEncodedAsTheNegotiatedEncoderWouldEncodeThem:
// skipping the escaping step for families that need none changes no byte
// of any format, and a family that needs escaping is still escaped.
func TestStreamedFamiliesAreEncodedAsTheNegotiatedEncoderWouldEncodeThem(t *testing.T) {
	family := func(name, label string) *dto.MetricFamily {
		typ := dto.MetricType_COUNTER
		return &dto.MetricFamily{Name: proto.String(name), Help: proto.String("help"), Type: &typ, Metric: []*dto.Metric{
			{Label: []*dto.LabelPair{{Name: proto.String(label), Value: proto.String("a\"b")}}, Counter: &dto.Counter{Value: proto.Float64(1)}},
			{Label: []*dto.LabelPair{{Name: proto.String(label), Value: proto.String("c")}}, Counter: &dto.Counter{Value: proto.Float64(2.5)}},
		}}
	}
	families := map[string]*dto.MetricFamily{
		"legacy names":         family("haproxy_backend_bytes_in_total", "route"),
		"a dotted metric name": family("haproxy.backend.bytes", "route"),
		"a dotted label name":  family("haproxy_backend_bytes_in_total", "route.name"),
	}
	formats := []expfmt.Format{
		expfmt.NewFormat(expfmt.TypeTextPlain),
		expfmt.NewFormat(expfmt.TypeOpenMetrics),
		expfmt.NewFormat(expfmt.TypeProtoDelim),
	}
	for name, mf := range families {
		for _, format := range formats {
			var want, got bytes.Buffer
			if err := expfmt.NewEncoder(&want, format).Encode(mf); err != nil {
				t.Fatal(err)
			}
			if err := streamEncoder(expfmt.NewEncoder(&got, format), &got, format)(mf); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(want.Bytes(), got.Bytes()) {
				t.Errorf("%s, %s: streamed\n%q\nwant\n%q", name, format, got.String(), want.String())
			}
			if bytes.Contains(got.Bytes(), []byte("haproxy.")) || bytes.Contains(got.Bytes(), []byte("route.name")) {
				t.Errorf("%s, %s: not escaped:\n%s", name, format, got.String())
			}
		}
	}
}

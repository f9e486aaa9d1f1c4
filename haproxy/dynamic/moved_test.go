package dynamic

import (
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// runState describes what c runs, section by section, in header order:
// the name HAProxy runs it as, whether it is an orphan, its servers and
// their states.
func runState(c *Config) []string {
	var out []string
	for i := range c.sections {
		s := &c.sections[i]
		line := fmt.Sprintf("%s as=%q orphan=%v key=%q last=%d", s.header, s.runsAs, s.orphan, s.cookieKey, max(s.lastID, uint32(len(s.servers))))
		for _, sv := range s.servers {
			line += fmt.Sprintf(" [%s %s w=%s dis=%v rm=%v]", sv.name(), sv.addr(), sv.weight(), sv.disabled, sv.removed)
		}
		out = append(out, line)
	}
	slices.Sort(out)
	return out
}

// routesPart is the sections of the routes sections (rendered alone), as
// Sections gives them.
func routesPart(sections ...string) *Config {
	return Parse([]byte(backendsBase + strings.Join(sections, ""))).Sections(Parse([]byte(backendsBase)))
}

// TestDiffMovedGivesWhatTheWholeDiffGives: for route backends added,
// deleted, renamed and changed, with orphans and spares to take over or
// none, DiffMoved on the sections rendered again and the headers gone
// gives the reload, the commands and the running state that Diff on the
// whole configuration gives.
func TestDiffMovedGivesWhatTheWholeDiffGives(t *testing.T) {
	a := routeSection("a", "ka", "pod:x 10.0.0.1:80")
	b := routeSection("b", "kb", "pod:y 10.0.0.2:80")
	c := routeSection("c", "kc", "pod:z 10.0.0.3:80")
	d := routeSection("d", "kd", "pod:w 10.0.0.4:80", "pod:v 10.0.0.5:80")
	other := strings.Replace(routeSection("e", "ke", "pod:u 10.0.0.6:80"), "balance random", "balance leastconn", 1)
	spare := "backend spare_0\n  balance random\n  cookie c insert indirect nocache dynamic\n  dynamic-cookie-key ks\n"
	reshaped := strings.Replace(c, "cookie c insert", "cookie c2 insert", 1)
	spare2 := strings.Replace(spare, "cookie c insert", "cookie c2 insert", 1)
	// withOrphan runs a, b and c after a route d was deleted: d an orphan.
	withOrphan := func() *Config {
		ch := Diff(Parse([]byte(backendsBase+a+b+c+d)), Parse([]byte(backendsBase+a+b+c)))
		if ch.Reload {
			t.Fatalf("setting up: %+v", ch)
		}
		return ch.Running
	}
	// withSpare runs a and b with a spare loaded beside them.
	withSpare := func() *Config { return parseLoadedWithSpares(t, backendsBase+a+b, spare) }
	tests := []struct {
		name    string
		running func() *Config
		// next is the whole configuration after the change; part its
		// sections rendered again; gone the headers it no longer has.
		next   string
		part   []string
		gone   []string
		reload string
	}{
		{"a route deleted leaves an orphan", func() *Config { return Parse([]byte(backendsBase + a + b + c)) },
			backendsBase + a + c, nil, []string{"backend be_http:ns:b"}, ""},
		{"a route added takes the orphan", withOrphan,
			backendsBase + a + b + c + routeSection("f", "kf", "pod:t 10.0.0.7:80"), []string{routeSection("f", "kf", "pod:t 10.0.0.7:80")}, nil, ""},
		{"the deleted route back takes its own orphan", withOrphan,
			backendsBase + a + b + c + d, []string{d}, nil, ""},
		{"a route added takes a spare", withSpare,
			backendsBase + a + b + c, []string{c}, nil, ""},
		{"a route of a shape without a free backend reloads", withOrphan,
			backendsBase + a + b + c + other, []string{other}, nil, ReasonBackends},
		{"a route renamed takes the backend it leaves", func() *Config { return Parse([]byte(backendsBase + a + b)) },
			backendsBase + a + c, []string{c}, []string{"backend be_http:ns:b"}, ""},
		{"one route deleted, another's endpoints changed", withOrphan,
			backendsBase + a + strings.Replace(c, "10.0.0.3", "10.0.0.9", 1), []string{strings.Replace(c, "10.0.0.3", "10.0.0.9", 1)}, []string{"backend be_http:ns:b"}, ""},
		{"a route added and another deleted in one change", withOrphan,
			backendsBase + b + c + routeSection("f", "kf"), []string{routeSection("f", "kf")}, []string{"backend be_http:ns:a"}, ""},
		{"a route reshaped without a free backend of its new shape reloads", withOrphan,
			backendsBase + a + b + reshaped, []string{reshaped}, nil, ReasonBackends},
		{"a route reshaped moves to a spare of its new shape", func() *Config { return parseLoadedWithSpares(t, backendsBase+a+b+c, spare2) },
			backendsBase + a + b + reshaped, []string{reshaped}, nil, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			whole := Diff(tt.running(), Parse([]byte(tt.next)))
			moved := DiffMoved(tt.running(), routesPart(tt.part...), tt.gone)
			if whole.Reload != (tt.reload != "") || whole.Reason != tt.reload {
				t.Fatalf("Diff: reload %v %q at %s, want %q", whole.Reload, whole.Reason, whole.Where, tt.reload)
			}
			if moved.Reload != whole.Reload || moved.Reason != whole.Reason {
				t.Fatalf("DiffMoved: reload %v %q at %s; Diff: %v %q at %s", moved.Reload, moved.Reason, moved.Where, whole.Reload, whole.Reason, whole.Where)
			}
			if whole.Reload {
				return
			}
			wc, mc := commands(whole), commands(moved)
			slices.Sort(wc)
			slices.Sort(mc)
			if !reflect.DeepEqual(mc, wc) {
				t.Errorf("commands\n DiffMoved %q\n Diff      %q", mc, wc)
			}
			if ws, ms := runState(whole.Running), runState(moved.Running); !reflect.DeepEqual(ms, ws) {
				t.Errorf("running\n DiffMoved %q\n Diff      %q", ms, ws)
			}
			// What runs then diffs the same against the next render.
			again := Diff(moved.Running, Parse([]byte(tt.next)))
			if again.Reload || len(again.Commands) != 0 {
				t.Errorf("after DiffMoved, the whole configuration still differs: %+v", again)
			}
		})
	}
}

// parseLoadedWithSpares is config loaded with the spare backends spares:
// the spares orphans from the start (as the controller parses what
// HAProxy loaded).
func parseLoadedWithSpares(t *testing.T, config, spares string) *Config {
	t.Helper()
	ch := Diff(Parse([]byte(config+spares)), Parse([]byte(config)))
	if ch.Reload || len(ch.Commands) != 0 {
		t.Fatalf("spares loaded: %+v", ch)
	}
	return ch.Running
}

// BenchmarkDiffMovedRouteDeleted10000: the change of
// BenchmarkDiffRouteDeleted10000 worked out by DiffMoved from the header
// gone, the other 9,999 backends taken as they run.
func BenchmarkDiffMovedRouteDeleted10000(b *testing.B) {
	var all strings.Builder
	all.WriteString(backendsBase)
	for i := 0; i < 10000; i++ {
		all.WriteString(routeSection(fmt.Sprintf("r%d", i), fmt.Sprintf("k%d", i), fmt.Sprintf("pod:%d 10.%d.%d.%d:8080", i, i/65536, i/256%256, i%256)))
	}
	old := Parse([]byte(all.String()))
	part := &Config{}
	gone := []string{"backend be_http:ns:r5000"}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if ch := DiffMoved(old, part, gone); ch.Reload || len(ch.Commands) != 1 {
			b.Fatalf("%+v", ch)
		}
	}
}

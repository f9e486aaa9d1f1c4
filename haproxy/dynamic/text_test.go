package dynamic

import (
	"strings"
	"testing"
)

const fullText = `global
  maxconn 100

# the route backends
backend be_http:ns:a
  balance random
  server s1 10.0.0.1:80 weight 1
  server _dynamic-pod-1 127.0.0.1:1 weight 0 disabled

# route b
backend be_http:ns:b
  server s1 10.0.1.1:80 weight 1

backend openshift_default
  mode http
`

// TestSectionsOfAPartialRenderReplaceTheirOwn: the sections of a render
// for a few routes that a render without routes does not have are
// compared with the same sections of the running configuration and put
// in place of them, in the parsed configuration and in the text.
func TestSectionsOfAPartialRenderReplaceTheirOwn(t *testing.T) {
	base := Parse([]byte("global\n  maxconn 100\nbackend openshift_default\n  mode http\n"))
	tests := []struct {
		name    string
		part    string
		reload  string
		cmds    []string
		newText string
	}{
		{name: "a slot takes an endpoint",
			part:    "global\n  maxconn 100\n\n# the route backends\nbackend be_http:ns:a\n  balance random\n  server s1 10.0.0.1:80 weight 1\n  server _dynamic-pod-1 10.0.0.2:80 weight 1\n\nbackend openshift_default\n  mode http\n",
			cmds:    []string{"set server be_http:ns:a/_dynamic-pod-1 addr 10.0.0.2 port 80", "set server be_http:ns:a/_dynamic-pod-1 weight 1", "set server be_http:ns:a/_dynamic-pod-1 state ready"},
			newText: strings.Replace(fullText, "_dynamic-pod-1 127.0.0.1:1 weight 0 disabled", "_dynamic-pod-1 10.0.0.2:80 weight 1", 1)},
		{name: "a global section of the partial render is left alone",
			part:    "global\n  maxconn 5\n\n# route b\nbackend be_http:ns:b\n  server s1 10.0.1.1:80 weight 1 disabled\n\nbackend openshift_default\n  mode tcp\n",
			cmds:    []string{"set server be_http:ns:b/s1 state maint"},
			newText: strings.Replace(fullText, "s1 10.0.1.1:80 weight 1\n", "s1 10.0.1.1:80 weight 1 disabled\n", 1)},
		{name: "another line of the backend: the whole configuration's diff (the route moves to another backend, or reloads)",
			part:   "backend be_http:ns:a\n  balance roundrobin\n  server s1 10.0.0.1:80 weight 1\n  server _dynamic-pod-1 127.0.0.1:1 weight 0 disabled\n",
			reload: ReasonBackends},
		{name: "a backend the running configuration does not have: reload",
			part:   "backend be_http:ns:c\n  server s1 10.0.0.1:80\n",
			reload: ReasonBackends},
		{name: "another section the running configuration does not have: reload",
			part:   "frontend f\n  mode http\n",
			reload: ReasonConfig},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			running := Parse([]byte(fullText))
			sections := Parse([]byte(tt.part)).Sections(base)
			ch := DiffSections(running, sections)
			if tt.reload != "" {
				if !ch.Reload || ch.Reason != tt.reload {
					t.Fatalf("change %+v, want a reload for %s", ch, tt.reload)
				}
				return
			}
			if ch.Reload {
				t.Fatalf("reload: %s at %s", ch.Reason, ch.Where)
			}
			var got []string
			for _, c := range ch.Commands {
				got = append(got, c.Text)
			}
			if strings.Join(got, "\n") != strings.Join(tt.cmds, "\n") {
				t.Fatalf("commands\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(tt.cmds, "\n"))
			}
			running.Replace(ch.Running)
			if d := Diff(running, Parse([]byte(tt.newText))); d.Reload || len(d.Commands) > 0 {
				t.Fatalf("the running configuration is not the new one: %+v", d)
			}
			text := NewText([]byte(fullText))
			if !text.Replace([]byte(tt.part), sections.Headers()) {
				t.Fatal("not replaced")
			}
			if got := string(text.Bytes()); got != tt.newText {
				t.Fatalf("text\n%s\nwant\n%s", got, tt.newText)
			}
			if text.Len() != len(tt.newText) {
				t.Fatalf("Len %d, want %d", text.Len(), len(tt.newText))
			}
		})
	}
}

// TestTextReplacesOnlySectionsItHasOnce: a header the text lacks or has
// twice is not replaced, and nothing changes.
func TestTextReplacesOnlySectionsItHasOnce(t *testing.T) {
	dup := fullText + "backend be_http:ns:b\n  server s9 10.9.9.9:80\n"
	for _, tt := range []struct{ name, text, header string }{
		{"missing", fullText, "backend be_http:ns:zz"},
		{"twice", dup, "backend be_http:ns:b"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			text := NewText([]byte(tt.text))
			part := tt.header + "\n  server s1 10.0.0.9:80\n"
			if text.Replace([]byte(part), []string{tt.header}) {
				t.Fatal("replaced")
			}
			if string(text.Bytes()) != tt.text {
				t.Fatal("text changed")
			}
		})
	}
}

func TestCutAndTail(t *testing.T) {
	data := []byte("global\n  maxconn 1\n\n# a\nbackend a\n  server s 1.2.3.4:80\n\nbackend b\n  mode http\n\n# end\n\n")
	spans := Cut(data)
	var got []string
	for _, s := range spans {
		got = append(got, s.Header+"="+string(data[s.Start:s.End]))
	}
	want := []string{"global=global\n  maxconn 1\n", "backend a=\n# a\nbackend a\n  server s 1.2.3.4:80\n", "backend b=\nbackend b\n  mode http\n\n# end\n\n"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Fatalf("Cut:\n%q\nwant\n%q", got, want)
	}
	for in, want := range map[string]string{
		"a\nb\n":          "",
		"a\nb\n\n# c\n\n": "\n# c\n\n",
		"a\nb":            "",
		"# c\n\n":         "# c\n\n",
		"":                "",
	} {
		if got := in[Tail([]byte(in)):]; got != want {
			t.Errorf("tail of %q: %q, want %q", in, got, want)
		}
	}
}

package controller

import (
	"reflect"
	"testing"

	"github.com/openshift-router-go/router/router/admission"
)

func TestCulpritsFromHAProxyCheckOutput(t *testing.T) {
	config := []byte("global\n  maxconn 1\n\nbackend openshift_default\n  mode http\n\n# route ns/a\nbackend be_http:ns:a\n  mode http\n  bogus line\n\nbackend be_secure:other:b-2\n  server x 1.2.3.4:1 ssl ca-file /w/router/cacerts/other:b-2.pem\n")
	cases := []struct {
		name   string
		output string
		want   []admission.Key
	}{
		{"line inside a route backend", "[ALERT]    (1) : config : parsing [/w/conf/haproxy.config:10] : unknown keyword 'bogus'", []admission.Key{"ns/a"}},
		{"certificate file", "[ALERT]    (1) : config : parsing [/w/conf/haproxy.config:13] : 'server x' : unable to load CA file '/w/router/cacerts/other:b-2.pem'", []admission.Key{"other/b-2"}},
		{"line outside route backends", "[ALERT]    (1) : config : parsing [/w/conf/haproxy.config:2] : bad", []admission.Key{}},
		{"no location", "[ALERT] something else", []admission.Key{}},
		{"line out of range", "[/w/conf/haproxy.config:999]", []admission.Key{}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := Culprits(c.output, config); !reflect.DeepEqual(got, c.want) {
				t.Fatalf("got %v, want %v", got, c.want)
			}
		})
	}
}

package pipeline

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/openshift-router-go/router/haproxy/files"
	"github.com/openshift-router-go/router/router/admission"
	"github.com/openshift-router-go/router/router/model"
)

func TestCulpritsFromHAProxyCheckOutput(t *testing.T) {
	long := model.ServiceAliasConfigKey("long:" + strings.Repeat("n", 200))
	longCA := "/w/router/cacerts/" + long.FileName() + ".pem"
	config := []byte("global\n  maxconn 1\n\nbackend openshift_default\n  mode http\n\n# route ns/a\nbackend be_http:ns:a\n  mode http\n  bogus line\n\nbackend be_secure:other:b-2\n  server x 1.2.3.4:1 ssl ca-file /w/router/cacerts/other:b-2.pem\n")
	fs := []files.File{
		{Path: "/w/conf/haproxy.config"},
		{Path: "/w/router/cacerts/other:b-2.pem", Route: "other:b-2"},
		{Path: longCA, Route: long},
	}
	cases := []struct {
		name   string
		output string
		want   []admission.Key
	}{
		{"line inside a route backend", "[ALERT]    (1) : config : parsing [/w/conf/haproxy.config:10] : unknown keyword 'bogus'", []admission.Key{"ns/a"}},
		{"certificate file", "[ALERT]    (1) : config : parsing [/w/conf/haproxy.config:13] : 'server x' : unable to load CA file '/w/router/cacerts/other:b-2.pem'", []admission.Key{"other/b-2"}},
		{"certificate file with a shortened name", "[ALERT]    (1) : config : unable to load CA file '" + longCA + "'.", []admission.Key{admission.Key("long/" + strings.Repeat("n", 200))}},
		{"a file of no route", "[ALERT]    (1) : config : cannot open '/w/router/cacerts/gone:x.pem'", []admission.Key{}},
		{"line outside route backends", "[ALERT]    (1) : config : parsing [/w/conf/haproxy.config:2] : bad", []admission.Key{}},
		{"no location", "[ALERT] something else", []admission.Key{}},
		{"line out of range", "[/w/conf/haproxy.config:999]", []admission.Key{}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := CheckCulprits(c.output, config, fs); !reflect.DeepEqual(got, c.want) {
				t.Fatalf("got %v, want %v", got, c.want)
			}
		})
	}
}

// TestCulpritMessagesConcernTheirRouteOnly: when one failure blames two
// routes of two tenants, each route's status message holds the line about
// that route only.
func TestCulpritMessagesConcernTheirRouteOnly(t *testing.T) {
	fs := []files.File{
		{Path: "/w/router/certs/alpha-secret:one.pem", Route: "alpha-secret:one"},
		{Path: "/w/router/certs/beta-secret:two.pem", Route: "beta-secret:two"},
	}
	tests := []struct {
		name string
		err  error
	}{
		{"haproxy's check output", fmt.Errorf("haproxy config check failed:\n[ALERT] (1) : config : unable to load '/w/router/certs/alpha-secret:one.pem'\n[ALERT] (1) : config : unable to load '/w/router/certs/beta-secret:two.pem'")},
		{"files that cannot be written", &files.StageError{Files: []files.FileError{
			{Path: fs[0].Path, Route: fs[0].Route, Err: errors.New("writing /w/router/certs/alpha-secret:one.pem: file name too long")},
			{Path: fs[1].Path, Route: fs[1].Route, Err: errors.New("writing /w/router/certs/beta-secret:two.pem: is a directory")},
		}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Culprits(tt.err, fs, nil)
			if len(got) != 2 || got[0].Route != "alpha-secret/one" || got[1].Route != "beta-secret/two" {
				t.Fatalf("culprits %+v", got)
			}
			if !strings.Contains(got[0].Message, "alpha-secret") || strings.Contains(got[0].Message, "beta-secret") {
				t.Errorf("alpha's message %q", got[0].Message)
			}
			if !strings.Contains(got[1].Message, "beta-secret") || strings.Contains(got[1].Message, "alpha-secret") {
				t.Errorf("beta's message %q", got[1].Message)
			}
		})
	}
}

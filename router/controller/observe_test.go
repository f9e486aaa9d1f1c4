package controller

import (
	"reflect"
	"testing"

	"github.com/openshift-router-go/router/haproxy/dynamic"
)

func TestRuntimeChangesAreCountedByWhatTheyChanged(t *testing.T) {
	server := dynamic.Command{Kind: "state", Text: "set server b/s state ready"}
	rename := dynamic.Command{Kind: "map", Text: "add map /wd/conf/sticky_renames.map b n|r"}
	for _, tc := range []struct {
		name   string
		change []dynamic.Command
		fc     dynamic.FileChange
		want   map[string]int
	}{
		{"servers only", []dynamic.Command{server}, dynamic.FileChange{}, map[string]int{"endpoints": 1}},
		{"a cookie name renamed only", []dynamic.Command{rename}, dynamic.FileChange{}, map[string]int{"routes": 1}},
		{"a route taking a backend over", []dynamic.Command{server, rename}, dynamic.FileChange{Entries: 2}, map[string]int{"endpoints": 1, "routes": 1}},
		{"a certificate", nil, dynamic.FileChange{Certificates: 1}, map[string]int{"certificate": 1}},
		{"map entries only", nil, dynamic.FileChange{Entries: 3}, map[string]int{"routes": 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			obs := &fakeObserver{}
			c := &Controller{o: Options{Observer: obs}}
			c.observeRuntime(tc.change, tc.fc)
			if !reflect.DeepEqual(obs.runtimeChanges, tc.want) {
				t.Fatalf("counted %v, want %v", obs.runtimeChanges, tc.want)
			}
		})
	}
}

func TestRuntimeCommandsTakeNothingOutOfServiceBeforeTrafficMoves(t *testing.T) {
	cmd := func(text string) dynamic.Command { return dynamic.Command{Text: text} }
	change := dynamic.Change{
		Commands: []dynamic.Command{cmd("add server new/s"), cmd("enable server new/s"), cmd("set server old/s state maint")},
		Removals: 1,
	}
	fc := dynamic.FileChange{
		Before:   []dynamic.Command{cmd("new ssl ca-file ca.pem")},
		Commands: []dynamic.Command{cmd("set map hosts.map h new")},
		Removals: []dynamic.Command{cmd("del map hosts.map gone")},
	}
	var got []string
	for _, c := range runtimeOrder(change, fc) {
		got = append(got, c.Text)
	}
	want := []string{"new ssl ca-file ca.pem", "add server new/s", "enable server new/s", "set map hosts.map h new",
		"set server old/s state maint", "del map hosts.map gone"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("order\n got  %q\n want %q", got, want)
	}
}

package model

import (
	"slices"
	"testing"
)

func stateOf(keys ...ServiceAliasConfigKey) map[ServiceAliasConfigKey]ServiceAliasConfig {
	m := map[ServiceAliasConfigKey]ServiceAliasConfig{}
	for _, k := range keys {
		m[k] = ServiceAliasConfig{}
	}
	return m
}

// TestSortedStateKeysFollowTheStateMap: with a remembered order, the keys
// are always those of the State map asked about — a copy given another
// map, a map that gained a key — in order.
func TestSortedStateKeysFollowTheStateMap(t *testing.T) {
	td := &TemplateData{State: stateOf("ns:b", "ns:a", "a:z")}
	td.NewKeyOrder()
	want := []ServiceAliasConfigKey{"a:z", "ns:a", "ns:b"}
	if got := td.SortedStateKeys(); !slices.Equal(got, want) {
		t.Fatalf("SortedStateKeys = %v, want %v", got, want)
	}
	other := *td
	other.State = stateOf("x:1", "b:2")
	if got := other.SortedStateKeys(); !slices.Equal(got, []ServiceAliasConfigKey{"b:2", "x:1"}) {
		t.Errorf("a copy with another map: %v", got)
	}
	if got := td.SortedStateKeys(); !slices.Equal(got, want) {
		t.Errorf("after the copy asked: %v, want %v", got, want)
	}
	td.State["c:c"] = ServiceAliasConfig{}
	if got := td.SortedStateKeys(); !slices.Equal(got, []ServiceAliasConfigKey{"a:z", "c:c", "ns:a", "ns:b"}) {
		t.Errorf("after a key was added: %v", got)
	}
	plain := &TemplateData{State: stateOf("z:z", "a:a")}
	if got := plain.SortedStateKeys(); !slices.Equal(got, []ServiceAliasConfigKey{"a:a", "z:z"}) {
		t.Errorf("without a remembered order: %v", got)
	}
}

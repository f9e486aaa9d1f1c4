package model

import (
	"maps"
	"math/rand"
	"slices"
	"testing"
)

// TestKeySetEditedIsTheSetOfItsKeys: after any edits (keys out, keys in, a
// key in both, keys that were not there; few and many at once), the set
// holds exactly the keys it should, in order, each once; an edit never
// changes the set it was made from, and no edit returns the same set.
func TestKeySetEditedIsTheSetOfItsKeys(t *testing.T) {
	rng := rand.New(rand.NewSource(3))
	key := func() ServiceAliasConfigKey {
		return NewServiceAliasConfigKey("ns", string(rune('a'+rng.Intn(26)))+string(rune('a'+rng.Intn(4))))
	}
	want := map[ServiceAliasConfigKey]bool{}
	s := NewKeySet(nil)
	for round := 0; round < 500; round++ {
		var out, in []ServiceAliasConfigKey
		n := rng.Intn(4)
		if rng.Intn(10) == 0 {
			n = 40
		}
		for i := 0; i < n; i++ {
			out = append(out, key())
			in = append(in, key())
		}
		before := slices.Clone(s.Keys())
		next := s.Edited(out, in)
		if !slices.Equal(s.Keys(), before) {
			t.Fatalf("round %d: the edit changed the set it was made from", round)
		}
		if n == 0 && next != s || n > 0 && next == s {
			t.Fatalf("round %d: %d keys each way: same set %v", round, n, next == s)
		}
		for _, k := range out {
			delete(want, k)
		}
		for _, k := range in {
			want[k] = true
		}
		exp := slices.Sorted(maps.Keys(want))
		if !slices.Equal(next.Keys(), exp) {
			t.Fatalf("round %d: %v, want %v", round, next.Keys(), exp)
		}
		s = next
	}
}

// TestNilKeySetIsEmpty: a nil set has no keys and takes edits.
func TestNilKeySetIsEmpty(t *testing.T) {
	var none *KeySet
	k := NewServiceAliasConfigKey("ns", "a")
	if got := none.Edited([]ServiceAliasConfigKey{"x"}, []ServiceAliasConfigKey{k}).Keys(); !slices.Equal(got, []ServiceAliasConfigKey{k}) {
		t.Fatalf("nil set edited: %v", got)
	}
	if none.Edited(nil, nil) != nil || none.Keys() != nil {
		t.Fatal("an empty edit of a nil set is not nil, or it has keys")
	}
}

// TestEditKeyOrderIsTheSortedKeys: a model whose State is another's with
// keys taken out and put in, its order edited from the other's, lists its
// keys as sorting them would; without the other's order known, or with
// another State than the edits say, it sorts them itself.
func TestEditKeyOrderIsTheSortedKeys(t *testing.T) {
	state := func(keys ...ServiceAliasConfigKey) map[ServiceAliasConfigKey]ServiceAliasConfig {
		m := map[ServiceAliasConfigKey]ServiceAliasConfig{}
		for _, k := range keys {
			m[k] = ServiceAliasConfig{}
		}
		return m
	}
	old := &TemplateData{State: state("b", "d", "f", "h")}
	old.NewKeyOrder()
	_ = old.SortedStateKeys()
	for _, tc := range []struct {
		name    string
		state   map[ServiceAliasConfigKey]ServiceAliasConfig
		out, in []ServiceAliasConfigKey
	}{
		{"keys out and in", state("a", "b", "e", "h", "i"), []ServiceAliasConfigKey{"d", "f"}, []ServiceAliasConfigKey{"a", "e", "i"}},
		{"a key changed (out and in)", state("b", "d", "f", "h"), []ServiceAliasConfigKey{"d"}, []ServiceAliasConfigKey{"d"}},
		{"edits that are not the State's", state("b", "c", "z"), []ServiceAliasConfigKey{"d"}, []ServiceAliasConfigKey{"a"}},
	} {
		td := &TemplateData{State: tc.state}
		td.EditKeyOrder(old, tc.out, tc.in)
		if got, want := td.SortedStateKeys(), sortedKeys(tc.state); !slices.Equal(got, want) {
			t.Errorf("%s: %v, want %v", tc.name, got, want)
		}
	}
	fresh := &TemplateData{State: state("x", "a")}
	fresh.EditKeyOrder(&TemplateData{State: state("a")}, nil, []ServiceAliasConfigKey{"x"})
	if got := fresh.SortedStateKeys(); !slices.Equal(got, []ServiceAliasConfigKey{"a", "x"}) {
		t.Errorf("from a model without a known order: %v", got)
	}
}

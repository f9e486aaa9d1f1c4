package servers

import (
	"crypto/md5"
	"encoding/hex"
	"fmt"
	"reflect"
	"sort"
	"testing"

	"github.com/openshift-router-go/router/router/model"
)

// hashedEP is endpoint n with the IdHash the builder gives it (md5 of ID).
func hashedEP(n int) model.Endpoint {
	ip := fmt.Sprintf("10.%d.%d.%d", n/65536, (n/256)%256, n%256)
	e := model.Endpoint{ID: "ept:web:http:" + ip + ":8080", IP: ip, Port: "8080"}
	sum := md5.Sum([]byte(e.ID))
	e.IdHash = hex.EncodeToString(sum[:])
	return e
}

// table returns endpoints first..first+n-1 sorted by ID, as a service's
// endpoint table is.
func table(ns ...int) []model.Endpoint {
	var out []model.Endpoint
	for _, n := range ns {
		out = append(out, hashedEP(n))
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

func seq(from, to int) []int {
	var out []int
	for i := from; i < to; i++ {
		out = append(out, i)
	}
	return out
}

func ids(eps []model.Endpoint) map[string]bool {
	out := map[string]bool{}
	for _, e := range eps {
		out[e.ID] = true
	}
	return out
}

func TestLimitKeepsEverythingUpToTheLimit(t *testing.T) {
	for _, n := range []int{0, 1, 10} {
		eps := table(seq(0, n)...)
		got, left := Limit(eps, 10)
		if left != 0 || !reflect.DeepEqual(got, eps) {
			t.Errorf("%d endpoints, limit 10: got %d, left out %d; want all, 0", n, len(got), left)
		}
	}
}

func TestLimitKeepsTheSmallestHashesInTableOrder(t *testing.T) {
	eps := table(seq(0, 50)...)
	got, left := Limit(eps, 20)
	if len(got) != 20 || left != 30 {
		t.Fatalf("kept %d, left out %d; want 20, 30", len(got), left)
	}
	byHash := append([]model.Endpoint(nil), eps...)
	sort.Slice(byHash, func(i, j int) bool { return byHash[i].IdHash < byHash[j].IdHash })
	if !reflect.DeepEqual(ids(got), ids(byHash[:20])) {
		t.Errorf("kept endpoints are not the 20 smallest hashes")
	}
	if !sort.SliceIsSorted(got, func(i, j int) bool { return got[i].ID < got[j].ID }) {
		t.Errorf("kept endpoints lost the table's order")
	}
	if len(eps) != 50 || !sort.SliceIsSorted(eps, func(i, j int) bool { return eps[i].ID < eps[j].ID }) {
		t.Errorf("input modified")
	}
}

func TestLimitIsTheSameWhateverTheInputOrder(t *testing.T) {
	a := table(seq(0, 300)...)
	b := append([]model.Endpoint(nil), a...)
	for i, j := 0, len(b)-1; i < j; i, j = i+1, j-1 {
		b[i], b[j] = b[j], b[i]
	}
	ka, _ := Limit(a, 100)
	kb, _ := Limit(b, 100)
	if !reflect.DeepEqual(ids(ka), ids(kb)) {
		t.Fatal("the kept set depends on the order of the endpoints (replicas or restarts would disagree)")
	}
}

// An endpoint added or removed changes at most one other kept endpoint, so
// a runtime update (one slot) can follow it without a reload.
func TestLimitChangesAtMostOneOtherEndpointPerChange(t *testing.T) {
	const limit = 100
	base := seq(0, 1000)
	kept, _ := Limit(table(base...), limit)
	for _, tc := range []struct {
		name string
		eps  []int
	}{
		{name: "endpoint added", eps: append(append([]int(nil), base...), 5000)},
		{name: "another endpoint added", eps: append(append([]int(nil), base...), 7777)},
		{name: "first endpoint removed", eps: base[1:]},
		{name: "last endpoint removed", eps: base[:len(base)-1]},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, left := Limit(table(tc.eps...), limit)
			if len(got) != limit || left != len(tc.eps)-limit {
				t.Fatalf("kept %d, left out %d", len(got), left)
			}
			before, after := ids(kept), ids(got)
			added, removed := 0, 0
			for id := range after {
				if !before[id] {
					added++
				}
			}
			for id := range before {
				if !after[id] {
					removed++
				}
			}
			if added > 1 || removed > 1 {
				t.Errorf("one endpoint change moved %d in and %d out of the kept set", added, removed)
			}
		})
	}
}

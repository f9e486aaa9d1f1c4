package fairshare

import (
	"reflect"
	"testing"
)

func TestShares(t *testing.T) {
	tests := []struct {
		name    string
		demands []int
		budget  int
		want    []int
	}{
		{"everyone fits", []int{3, 5, 2}, 100, []int{3, 5, 2}},
		{"the largest demand gets what the others leave", []int{10, 1000, 20}, 100, []int{10, 70, 20}},
		{"two large demands share equally", []int{500, 10, 400}, 110, []int{50, 10, 50}},
		{"a demand under the equal share leaves the rest to the others", []int{5, 100, 100, 100}, 35, []int{5, 10, 10, 10}},
		{"the remainder goes to the later equal demands", []int{10, 10}, 5, []int{2, 3}},
		{"no budget", []int{1, 2}, 0, []int{0, 0}},
		{"negative budget", []int{1, 2}, -5, []int{0, 0}},
		{"nothing asked", nil, 10, []int{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Shares(tt.demands, tt.budget); !reflect.DeepEqual(got, tt.want) && !(len(got) == 0 && len(tt.want) == 0) {
				t.Fatalf("Shares(%v, %d) = %v, want %v", tt.demands, tt.budget, got, tt.want)
			}
		})
	}
}

// TestSharesOrderIndependent: the share of each demand does not depend on
// the order the demands come in (for distinct demands; equal ones differ
// by the remainder at most).
func TestSharesOrderIndependent(t *testing.T) {
	demands := []int{700, 3, 90, 12000, 450, 0, 5000}
	want := map[int]int{}
	for i, s := range Shares(demands, 6000) {
		want[demands[i]] = s
	}
	perms := [][]int{{6, 5, 4, 3, 2, 1, 0}, {3, 0, 6, 1, 5, 2, 4}, {1, 3, 5, 0, 2, 4, 6}}
	for _, p := range perms {
		d := make([]int, len(p))
		for i, j := range p {
			d[i] = demands[j]
		}
		for i, s := range Shares(d, 6000) {
			if want[d[i]] != s {
				t.Fatalf("order %v: demand %d got %d, want %d", p, d[i], s, want[d[i]])
			}
		}
	}
}

func TestLargestFirst(t *testing.T) {
	tests := []struct {
		name  string
		sizes []int
		share int
		want  []int
	}{
		{"fits", []int{3, 5, 2}, 100, nil},
		{"fits exactly", []int{3, 5, 2}, 10, nil},
		{"the largest goes first", []int{3, 50, 2}, 10, []int{1}},
		{"largest first until the rest fits", []int{40, 10, 30, 20}, 35, []int{0, 2}},
		{"of equal sizes the earlier goes first", []int{20, 20, 20}, 45, []int{0}},
		{"everything but zero sizes", []int{5, 0, 7}, 0, []int{2, 0}},
		{"nothing", nil, 0, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := LargestFirst(tt.sizes, tt.share); !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("LargestFirst(%v, %d) = %v, want %v", tt.sizes, tt.share, got, tt.want)
			}
		})
	}
}

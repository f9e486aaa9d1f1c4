package dynamic

import (
	"fmt"
	"math/rand"
	"slices"
	"strings"
	"testing"
)

// TestMapCommandsOfTheChangedLinesAreThoseOfTheWholeMaps: a map's commands
// worked out from the lines between the first and the last that differ
// are those of the whole old and new maps, whatever the change — values
// set, lines added and removed anywhere, a key twice (before, among or
// after the changed lines), comments, blank lines, no final line end — over
// many random changes.
func TestMapCommandsOfTheChangedLinesAreThoseOfTheWholeMaps(t *testing.T) {
	const p = "/wd/conf/m.map"
	rng := rand.New(rand.NewSource(1))
	line := func() string {
		switch rng.Intn(12) {
		case 0:
			return "# a comment"
		case 1:
			return ""
		}
		return fmt.Sprintf("k%d v%d", rng.Intn(40), rng.Intn(3))
	}
	trimmed, refused := 0, 0
	for run := 0; run < 3000; run++ {
		// The old map without a key twice: the whole maps' comparison
		// refuses one that has (its mapEntries), where the changed lines
		// need not (a key twice among the kept lines needs no command).
		var old []string
		seen := map[string]bool{}
		for i := rng.Intn(30); i > 0; i-- {
			l := line()
			if k, _, _ := strings.Cut(l, " "); strings.HasPrefix(k, "k") {
				if seen[k] {
					continue
				}
				seen[k] = true
			}
			old = append(old, l)
		}
		cur := slices.Clone(old)
		for e := rng.Intn(4); e >= 0; e-- {
			at := 0
			if len(cur) > 0 {
				at = rng.Intn(len(cur))
			}
			switch {
			case len(cur) == 0 || rng.Intn(3) == 0:
				cur = slices.Insert(cur, at, line())
			case rng.Intn(2) == 0:
				cur = slices.Delete(cur, at, at+1)
			default:
				cur[at] = line()
			}
		}
		join := func(lines []string) []byte {
			s := strings.Join(lines, "\n")
			if rng.Intn(4) != 0 {
				s += "\n"
			}
			return []byte(s)
		}
		in := Files{Old: map[string][]byte{p: join(old)}, New: map[string][]byte{p: join(cur)}}
		got, gotOK := mapCommands(p, in, nil)
		// A moved backend (here one no entry names) makes mapCommands
		// compare the whole maps.
		want, wantOK := mapCommands(p, in, map[string]bool{"be_none": true})
		if gotOK != wantOK || !slices.Equal(got.adds, want.adds) || !slices.Equal(got.dels, want.dels) {
			t.Fatalf("old %q new %q:\nchanged lines: %v %v %v\nwhole maps:    %v %v %v",
				in.Old[p], in.New[p], gotOK, got.adds, got.dels, wantOK, want.adds, want.dels)
		}
		if _, newMid, ok := changedLines(in.Old[p], in.New[p]); ok && len(newMid) < len(in.New[p]) {
			trimmed++
		} else if !ok {
			refused++
		}
	}
	// The test means something only if both paths were taken often.
	if trimmed < 1000 || refused < 100 {
		t.Fatalf("changed lines narrowed %d maps and refused %d of 3000", trimmed, refused)
	}
}

// TestChangedLinesAreWholeLinesBetweenTheFirstAndLastThatDiffer.
func TestChangedLinesAreWholeLinesBetweenTheFirstAndLastThatDiffer(t *testing.T) {
	for _, c := range []struct {
		name, old, new   string
		wantOld, wantNew string
		wantOK           bool
	}{
		{name: "the same", old: "a 1\nb 2\n", new: "a 1\nb 2\n", wantOK: true},
		{name: "a value changed in the middle", old: "a 1\nb 2\nc 3\n", new: "a 1\nb 9\nc 3\n", wantOld: "b 2\n", wantNew: "b 9\n", wantOK: true},
		{name: "a line added at the end", old: "a 1\nb 2\n", new: "a 1\nb 2\nc 3\n", wantNew: "c 3\n", wantOK: true},
		{name: "a line removed at the start", old: "a 1\nb 2\n", new: "b 2\n", wantOld: "a 1\n", wantOK: true},
		{name: "a key that ends like another's", old: "xa 1\nb 2\n", new: "a 1\nb 2\n", wantOld: "xa 1\n", wantNew: "a 1\n", wantOK: true},
		{name: "no final line end", old: "a 1\nb 2", new: "a 1\nb 3", wantOld: "b 2", wantNew: "b 3", wantOK: true},
		{name: "a changed key also kept before", old: "a 1\nb 2\n", new: "a 1\nb 2\na 3\n"},
		{name: "a removed key also kept after", old: "b 1\na 2\nc 3\na 4\n", new: "b 1\nc 3\na 4\n"},
		{name: "a key twice among the kept lines", old: "a 1\na 2\nb 1\n", new: "a 1\na 2\nb 2\n", wantOld: "b 1\n", wantNew: "b 2\n", wantOK: true},
		{name: "a key in a kept comment is not a key", old: "# b x\na 1\n", new: "# b x\na 1\nb 2\n", wantNew: "b 2\n", wantOK: true},
	} {
		t.Run(c.name, func(t *testing.T) {
			o, n, ok := changedLines([]byte(c.old), []byte(c.new))
			if ok != c.wantOK || (ok && (string(o) != c.wantOld || string(n) != c.wantNew)) {
				t.Errorf("changedLines = %q, %q, %v; want %q, %q, %v", o, n, ok, c.wantOld, c.wantNew, c.wantOK)
			}
		})
	}
}

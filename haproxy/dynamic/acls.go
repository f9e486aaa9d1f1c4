package dynamic

import "strings"

// aclEntries parses an ACL pattern file: its patterns in file order,
// blank lines and comments left out. It reports false for what the runtime
// API cannot take as it is: a pattern twice, a line of more than one word,
// a word with a character the CLI gives a meaning to.
func aclEntries(data []byte) (patterns []string, ok bool) {
	seen := map[string]bool{}
	for _, line := range strings.Split(string(data), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || line[0] == '#' {
			continue
		}
		if strings.ContainsAny(line, " \t") || !cliWord(line) || seen[line] {
			return nil, false
		}
		seen[line] = true
		patterns = append(patterns, line)
	}
	return patterns, true
}

// aclCommands are the commands that bring the ACL file at p, read as IP
// patterns (src -f: a tree, so the order of its entries does not
// matter), from its old to its new patterns: "add acl" for a pattern
// added, "del acl" for one removed.
func aclCommands(p string, in Files) (entryCommands, bool) {
	var out entryCommands
	oldData, known := in.Old[p]
	newData, written := in.New[p]
	if in.Old == nil || !known || !written {
		return out, false
	}
	oldPatterns, ok := aclEntries(oldData)
	if !ok {
		return out, false
	}
	newPatterns, ok := aclEntries(newData)
	if !ok {
		return out, false
	}
	had := make(map[string]bool, len(oldPatterns))
	for _, v := range oldPatterns {
		had[v] = true
	}
	has := make(map[string]bool, len(newPatterns))
	for _, v := range newPatterns {
		has[v] = true
		if !had[v] {
			out.adds = append(out.adds, Command{Kind: "acl", Text: "add acl " + p + " " + v})
		}
	}
	for _, v := range oldPatterns {
		if !has[v] {
			out.dels = append(out.dels, Command{Kind: "acl", Text: "del acl " + p + " " + v})
		}
	}
	return out, true
}

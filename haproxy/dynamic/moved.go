package dynamic

// DiffMoved compares what HAProxy runs (old) with the configuration that
// is what old runs but for the sections of part (a configuration rendered
// for a few routes, see Sections: each in place of old's section of the
// same header, or added) and the sections whose headers are gone (removed
// from the configuration: the backends of routes deleted or renamed). It
// gives what Diff(old, Parse(that configuration)) gives, backends taken
// over and left as orphans alike, without parsing the configuration or
// comparing the sections that did not change — for route additions and
// deletions, which DiffSections leaves to Diff (ReasonBackends).
//
// The sections of old not in part are taken as they run: the caller
// vouches that the configuration has them as HAProxy runs them (the
// routes that changed since, endpoints included, are in part), and that
// no destination CA file they read changed (RenewServers marks part
// only).
func DiffMoved(old, part *Config, gone []string) Change {
	idx := part.index()
	drop := make(map[string]bool, len(gone))
	for _, h := range gone {
		drop[h] = true
	}
	used := make([]bool, len(part.sections))
	next := &Config{sections: make([]section, 0, len(old.sections)+len(part.sections))}
	for i := range old.sections {
		s := &old.sections[i]
		if s.orphan || drop[s.header] {
			continue
		}
		j, ok := idx[s.header]
		switch {
		case ok && j < 0:
			return Change{Reload: true, Reason: ReasonConfig, Where: s.header}
		case ok:
			next.sections = append(next.sections, part.sections[j])
			used[j] = true
		default:
			same := *s
			same.unchanged = true
			next.sections = append(next.sections, same)
		}
	}
	for j := range part.sections {
		if !used[j] {
			next.sections = append(next.sections, part.sections[j])
		}
	}
	return diffBackends(old, next)
}

package config

// Admission holds the settings of route admission (validation, host claims, domains, wildcards).
type Admission struct{}

// admission reads the settings of route admission (validation, host claims, domains, wildcards).
func (p *parser) admission() Admission {
	return Admission{}
}

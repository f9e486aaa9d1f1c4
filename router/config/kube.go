package config

// Kube holds the settings of the Kubernetes API source.
type Kube struct{}

// kube reads the settings of the Kubernetes API source.
func (p *parser) kube() Kube {
	return Kube{}
}

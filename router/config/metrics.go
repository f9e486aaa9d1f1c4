package config

// Metrics holds the settings of the metrics and health server.
type Metrics struct{}

// metrics reads the settings of the metrics and health server.
func (p *parser) metrics() Metrics {
	return Metrics{}
}

package templates

// The tenant fuzzer (tenant_fuzz_test.go, package templates_test: it drives
// router/controller, which imports this package) shares these checks with
// FuzzRouteRendersSafely.
var (
	HAProxyCheckFiles    = haproxyCheckFiles
	RouteSections        = routeSections
	FrontendsAsAnyRoute  = frontendsAsAnyRoute
	RouteSectionKeywords = routeSectionKeywords
	HAProxyUnquote       = haproxyUnquote
)

package admission

import (
	"strings"

	routev1 "github.com/openshift/api/route/v1"
)

// The claim steps see the routes that passed the per-route steps, oldest
// first (see Older). Taking them in that order gives the state OpenShift's
// router reaches once it has seen every route (e.g. after a restart): each
// route is compared only with older routes that were admitted, so the
// oldest claimant always wins and a claim passes to the next oldest route
// as soon as its holder is gone. Both steps are O(n) with map lookups.

// claimSubdomains is the subdomain ownership step (OpenShift's host
// admitter). A wildcard route for "w.example.com" claims the subdomain
// "example.com": with the namespace ownership check, the namespace of the
// oldest such claim owns every host of the subdomain, so
//
//   - a route of another namespace for any host of the subdomain is
//     refused when an older wildcard route claims it;
//   - a wildcard route is refused when an older route of another namespace
//     (wildcard or not) has a host in the subdomain;
//   - wildcard routes of one namespace share the subdomain, one per path.
//
// Without the check (disableNS), only a second wildcard route for the same
// subdomain and path is refused. Routes of one namespace for specific hosts
// of a claimed subdomain are admitted (the specific host wins over the
// wildcard when requests are routed).
func claimSubdomains(routes []*routev1.Route, disableNS bool, rules claimRules, results map[Key]Result) []*routev1.Route {
	wildcards := map[string]*claim{}
	// blockers[domain] are the oldest admitted non-wildcard route of the
	// domain and the oldest one of another namespace than it, which is
	// all a wildcard route of any namespace needs to find an older route
	// of another namespace.
	blockers := map[string][2]*routev1.Route{}
	admitted := routes[:0:0]
	for _, r := range routes {
		host := hostOf(r)
		domain := WildcardDomain(host)
		wc := wildcards[domain]
		if IsWildcard(r) {
			var holder *routev1.Route
			if wc != nil {
				holder = wc.conflict(r, disableNS)
			}
			if holder == nil && !disableNS {
				for _, b := range blockers[domain] {
					if b != nil && b.Namespace != r.Namespace && !rules.sameGroup(b, r) {
						holder = b
						break
					}
				}
			}
			if holder != nil {
				msg := "route " + string(KeyOf(holder)) + " has host " + hostOf(holder) + ", blocking *." + domain
				if IsWildcard(holder) {
					msg = "wildcard route " + string(KeyOf(holder)) + " has host *." + domain + ", blocking " + host
				}
				results[KeyOf(r)] = hostClaimed(r, holder, msg, "a route in another namespace holds host "+host)
				continue
			}
			if wc == nil {
				wc = newClaim(r, rules)
				wildcards[domain] = wc
			}
			wc.add(r, false)
		} else {
			if wc != nil && !disableNS && wc.owner.Namespace != r.Namespace && !rules.sameGroup(wc.owner, r) {
				holder := wc.owner
				msg := "wildcard route " + string(KeyOf(holder)) + " has host *." + domain + ", blocking " + host
				results[KeyOf(r)] = hostClaimed(r, holder, msg, "a route in another namespace holds host "+host)
				continue
			}
			switch b := blockers[domain]; {
			case b[0] == nil:
				blockers[domain] = [2]*routev1.Route{r, nil}
			case b[1] == nil && b[0].Namespace != r.Namespace:
				blockers[domain] = [2]*routev1.Route{b[0], r}
			}
		}
		admitted = append(admitted, r)
	}
	return admitted
}

// claimHosts is the unique host step (OpenShift's unique host plugin). For
// each host the oldest route wins and, with the namespace ownership check,
// its namespace owns the host: routes of other namespaces are refused,
// routes of the owner's namespace with other paths are added. Without the
// check (disableNS) routes of any namespace share the host. Either way a
// host+path is served by one route only (the oldest), and, as in
// OpenShift, a passthrough route never shares its host with an edge or
// re-encrypt route, whatever their paths: of the two the older wins (TLS
// to the host goes to one place by SNI). Unsecured routes may share the
// host with a passthrough route.
func claimHosts(routes []*routev1.Route, disableNS bool, rules claimRules, results map[Key]Result) []*routev1.Route {
	hosts := make(map[string]*claim, len(routes))
	admitted := routes[:0:0]
	for _, r := range routes {
		host := hostOf(r)
		c := hosts[host]
		if c == nil {
			c = newClaim(r, rules)
			hosts[host] = c
		} else if holder := c.conflict(r, disableNS || host == AnyHost); holder != nil {
			results[KeyOf(r)] = hostClaimed(r, holder,
				"route "+holder.Name+" already exposes "+host+" and is older",
				"a route in another namespace holds "+host+" and is older than "+r.Name)
			continue
		}
		c.add(r, true)
		admitted = append(admitted, r)
	}
	return admitted
}

// claim is what the admitted routes of one host (or one subdomain, for
// wildcard routes) hold.
type claim struct {
	// owner is the oldest route; with the ownership check, all the routes
	// of the claim are in its namespace.
	owner *routev1.Route
	// paths holds the route of each (normalised) path.
	paths map[string]*routev1.Route
	// passthrough is the oldest passthrough route, if any, and tls the
	// oldest TLS route of any termination (host claims only).
	passthrough, tls *routev1.Route
	rules            claimRules
}

func newClaim(owner *routev1.Route, rules claimRules) *claim {
	return &claim{owner: owner, paths: map[string]*routev1.Route{}, rules: rules}
}

// claimRules are the made routes' exceptions to the claim rules
// (Options.ClaimPath, Options.ClaimGroup).
type claimRules struct {
	path  func(Key) string
	group func(Key) string
	side  func(Key) string
}

// The sides a made route may be served on alone (Options.ClaimSide).
const (
	SideHTTP  = "http"
	SideHTTPS = "https"
)

// sideSeparator separates a claimed path from its side in claim.paths: a
// byte no path or claim path holds.
const sideSeparator = "\x00"

// pathKeys are the key of c.paths r holds and those of routes it
// conflicts with besides: without Options.ClaimSide, its path alone; with
// it, a route on both sides conflicts with the path's keys of either side,
// a route on one side (key path, sideSeparator, side) with the path's key
// of both.
func (c *claim) pathKeys(r *routev1.Route) (own string, others []string) {
	path, side, sided := c.claimOf(r)
	switch {
	case !sided:
		return path, nil
	case side == "":
		return path, []string{path + sideSeparator + SideHTTP, path + sideSeparator + SideHTTPS}
	}
	return path + sideSeparator + side, []string{path}
}

// ownPathKey is pathKeys' own alone (what adding r to c needs).
func (c *claim) ownPathKey(r *routev1.Route) string {
	path, side, _ := c.claimOf(r)
	if side == "" {
		return path
	}
	return path + sideSeparator + side
}

// claimOf returns the path r claims — its normalised path, or the one
// Options.ClaimPath gives — and, when Options.ClaimSide is set (sided),
// the side it gives. r's key is made once.
func (c *claim) claimOf(r *routev1.Route) (path, side string, sided bool) {
	if c.rules.path == nil && c.rules.side == nil {
		return normalizedPath(r), "", false
	}
	k := KeyOf(r)
	if c.rules.path != nil {
		path = c.rules.path(k)
	}
	if path == "" {
		path = normalizedPath(r)
	}
	if c.rules.side == nil {
		return path, "", false
	}
	return path, c.rules.side(k), true
}

// sameGroup reports whether made routes a and b are of one claim group
// (Options.ClaimGroup).
func (c *claim) sameGroup(a, b *routev1.Route) bool { return c.rules.sameGroup(a, b) }

func (rules claimRules) sameGroup(a, b *routev1.Route) bool {
	if rules.group == nil {
		return false
	}
	g := rules.group(KeyOf(a))
	return g != "" && g == rules.group(KeyOf(b))
}

// conflict returns the admitted route of c that keeps r out, or nil.
func (c *claim) conflict(r *routev1.Route, disableNS bool) *routev1.Route {
	if !disableNS && c.owner.Namespace != r.Namespace && !c.sameGroup(c.owner, r) {
		return c.owner
	}
	own, others := c.pathKeys(r)
	if holder, ok := c.paths[own]; ok {
		return holder
	}
	for _, k := range others {
		if holder, ok := c.paths[k]; ok {
			return holder
		}
	}
	if r.Spec.TLS != nil {
		if c.passthrough != nil {
			return c.passthrough
		}
		if c.tls != nil && r.Spec.TLS.Termination == routev1.TLSTerminationPassthrough {
			return c.tls
		}
	}
	return nil
}

// add adds r to c; with passthroughBlocks, a passthrough route and TLS
// routes keep each other out of c (OpenShift applies this to hosts, not
// to subdomains).
func (c *claim) add(r *routev1.Route, passthroughBlocks bool) {
	c.paths[c.ownPathKey(r)] = r
	if !passthroughBlocks || r.Spec.TLS == nil {
		return
	}
	if c.tls == nil {
		c.tls = r
	}
	if c.passthrough == nil && r.Spec.TLS.Termination == routev1.TLSTerminationPassthrough {
		c.passthrough = r
	}
}

// hostClaimed returns the HostAlreadyClaimed result of r, whose claim
// holder holds. As in OpenShift, the message is sameNS when holder is in
// r's namespace and otherNS otherwise. The message goes into r's status,
// which r's tenant reads: otherNS names no route of another namespace.
// Holder names the holder for the router's log (see Result.Holder).
func hostClaimed(r, holder *routev1.Route, sameNS, otherNS string) Result {
	msg := sameNS
	if holder.Namespace != r.Namespace {
		msg = otherNS
	}
	return Result{Host: hostOf(r), Reason: ReasonHostAlreadyClaimed, Message: msg, Holder: KeyOf(holder)}
}

// normalizedPath is the path a route claims: "" and "/" are the same path
// (the route maps give both the key host+"/"), and so are "/a" and "/a/".
// Passthrough routes (no path) claim "/".
func normalizedPath(r *routev1.Route) string {
	p := strings.TrimRight(r.Spec.Path, "/")
	if p == "" {
		return "/"
	}
	return p + "/"
}
